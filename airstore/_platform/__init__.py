"""airstore's platform seam: every OS-specific file operation, chosen once by what the
interpreter offers (not by ``sys.platform``). Nothing else in airstore imports ``fcntl`` or
``msvcrt``, or calls ``os.pread``, ``os.pwrite``, ``os.fdatasync``, ``os.kill`` or
``loop.add_signal_handler`` (``tests/airstore/test_platform_seam.py`` walks the sources).

| operation | chosen | Linux | macOS | Windows |
|---|---|---|---|---|
| lock | ``fcntl`` imports | ``flock`` | ``flock`` | ``LockFileEx`` |
| open_file | ``fcntl`` imports | ``open`` | ``open`` | ``CreateFileW``, share-delete |
| datasync | ``os.fdatasync`` | ``fdatasync`` | ``F_FULLFSYNC``, else ``fsync`` | ``fsync`` |
| pread, pwrite | ``os.pread`` | ``pread`` | ``pread`` | seek + read |
| replace | ``fcntl`` imports | ``os.replace`` | ``os.replace`` | retried on a sharing violation |
| sync_dir | ``fcntl`` imports | ``fsync`` | ``fsync`` | nothing (none exists) |

Callers use the module's attributes (``_platform.pread(...)``), never ``from … import``, so
that :func:`use` can switch the shape: ``AIR_STORE_PLATFORM=macos`` (read in
:mod:`airstore.settings`) or ``use("macos")`` runs the macOS choices on Linux (no
``fdatasync``: ``F_FULLFSYNC``, refused there, and its ``fsync`` fallback), as the tests do.
"""

from __future__ import annotations

import asyncio
import os
import signal
from collections.abc import Callable

from airstore._platform import darwin, posix, windows
from airstore.settings import PlatformShape, store_settings

__all__ = [
    "OPEN_FLAGS",
    "add_sigterm_handler",
    "chosen",
    "datasync",
    "family",
    "lock",
    "open_file",
    "pid_alive",
    "pread",
    "pwrite",
    "remove_sigterm_handler",
    "replace",
    "resend_sigterm",
    "shape",
    "sync_dir",
    "try_lock",
    "unlock",
    "use",
]

OPEN_FLAGS: int = (
    getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_NOINHERIT", 0) | getattr(os, "O_BINARY", 0)
)
"""Added to every ``os.open``: not inherited by child processes, and binary on Windows (its
C runtime opens in text mode, translating newlines, unless told)."""

shape: PlatformShape = "auto"
family = ""
"""``"posix"`` or ``"windows"``: whose locks were chosen."""
chosen: dict[str, str] = {}
"""Which implementation each operation uses (``{"datasync": "fdatasync", …}``)."""

open_file: Callable[..., int]
"""``os.open``; on Windows with ``FILE_SHARE_DELETE``, so that an open file can be replaced."""
try_lock: Callable[..., bool]
lock: Callable[[int], None]
unlock: Callable[[int], None]
datasync: Callable[[int], None]
pread: Callable[[int, int, int], bytes]
pwrite: Callable[[int, bytes, int], int]
replace: Callable[[str, str], None]
sync_dir: Callable[[str], None]
pid_alive: Callable[[int], bool]


def use(new_shape: PlatformShape) -> PlatformShape:
    """Choose the implementations: ``"auto"`` by what the interpreter offers, ``"macos"`` the
    macOS choices (``F_FULLFSYNC``, never ``fdatasync``). Returns the previous shape.
    """
    global shape, family, try_lock, lock, unlock, datasync, pread, pwrite, replace, sync_dir
    global pid_alive, open_file
    previous = shape
    has_fcntl = posix.fcntl is not None
    fdatasync = getattr(os, "fdatasync", None)
    has_pread = hasattr(os, "pread") and hasattr(os, "pwrite")
    family = "posix" if has_fcntl else "windows"
    if has_fcntl:
        try_lock, lock, unlock, open_file = posix.try_lock, posix.lock, posix.unlock, os.open
        replace, sync_dir, pid_alive = os.replace, posix.sync_dir, posix.pid_alive
    else:
        try_lock, lock, unlock = windows.try_lock, windows.lock, windows.unlock
        open_file = windows.open_file
        replace, sync_dir, pid_alive = windows.replace, windows.sync_dir, windows.pid_alive
    if new_shape == "macos" or fdatasync is None:
        if has_fcntl and (new_shape == "macos" or hasattr(posix.fcntl, "F_FULLFSYNC")):
            datasync, sync_name = darwin.datasync, "F_FULLFSYNC"
        else:
            datasync, sync_name = os.fsync, "fsync"
    else:
        datasync, sync_name = fdatasync, "fdatasync"
    if has_pread:
        pread, pwrite = os.pread, os.pwrite
    else:
        pread, pwrite = windows.pread, windows.pwrite
    chosen.clear()
    chosen.update(
        lock="flock" if has_fcntl else "LockFileEx",
        open="open" if has_fcntl else "CreateFileW+share-delete",
        datasync=sync_name,
        pread="pread" if has_pread else "seek+read",
        replace="replace" if has_fcntl else "replace+retry",
        sync_dir="fsync" if has_fcntl else "none",
    )
    shape = new_shape
    return previous


def add_sigterm_handler(loop: asyncio.AbstractEventLoop, callback: Callable[[], None]) -> bool:
    """Run ``callback`` on ``loop`` at SIGTERM; False where the loop cannot (Windows' loops
    have no signal handlers: an open store is then flushed at exit only)."""
    try:
        loop.add_signal_handler(signal.SIGTERM, callback)
    except (NotImplementedError, RuntimeError, ValueError, AttributeError):
        return False
    return True


def remove_sigterm_handler(loop: asyncio.AbstractEventLoop) -> None:
    """Undo :func:`add_sigterm_handler`."""
    loop.remove_signal_handler(signal.SIGTERM)


def resend_sigterm() -> None:
    """End this process as SIGTERM would, with the default action restored."""
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    os.kill(os.getpid(), signal.SIGTERM)


use(store_settings().platform)
