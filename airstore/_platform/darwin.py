"""macOS durable sync: ``fcntl(F_FULLFSYNC)``, falling back to ``fsync``.

macOS has no ``os.fdatasync``, and its ``fsync`` hands data to the drive without asking the
drive to write its cache to the platter; ``F_FULLFSYNC`` asks for that. Some file systems
(network shares, FUSE, exFAT on some drives) refuse ``F_FULLFSYNC``: then plain ``fsync`` is
what there is, as SQLite does. It imports everywhere; on an interpreter without
``fcntl.F_FULLFSYNC`` the command number is macOS's own (51), which Linux refuses with
``EINVAL``: that is how the tests take the refusal path on Linux.
"""

from __future__ import annotations

import os

from airstore._platform import posix

__all__ = ["F_FULLFSYNC", "datasync", "refusals"]

F_FULLFSYNC: int = getattr(posix.fcntl, "F_FULLFSYNC", 51)
"""The ``fcntl`` command (``<sys/fcntl.h>``: 51 on macOS)."""

refusals = 0
"""How many times the file system refused ``F_FULLFSYNC`` and ``fsync`` was used instead."""


def datasync(fd: int) -> None:
    """Get ``fd``'s data to stable storage: ``F_FULLFSYNC``, else ``fsync``.

    Raises:
        OSError: ``fsync`` failed (a refused ``F_FULLFSYNC`` is not an error).
    """
    global refusals
    fcntl = posix.fcntl
    if fcntl is not None:
        try:
            fcntl.fcntl(fd, F_FULLFSYNC)
        except OSError:  # refused by this file system (ENOTSUP, EINVAL, ENOTTY …)
            refusals += 1
        else:
            return
    os.fsync(fd)
