"""The POSIX implementation (Linux, macOS, the BSDs): ``flock`` locks, ``fdatasync``,
``pread``/``pwrite``, a directory fsync after a rename.

It imports everywhere (``fcntl`` is optional here), so that its logic is testable on any OS;
:mod:`airstore._platform` uses it where ``fcntl`` imports.
"""

from __future__ import annotations

import errno
import os
from types import ModuleType

__all__ = ["fcntl", "lock", "pid_alive", "sync_dir", "try_lock", "unlock"]

fcntl: ModuleType | None
try:
    import fcntl
except ImportError:  # Windows: this module is then not chosen
    fcntl = None

_BUSY = (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES)


def _fcntl() -> ModuleType:
    if fcntl is None:
        raise OSError(errno.ENOSYS, "fcntl is not available on this platform")
    return fcntl


def try_lock(fd: int, *, shared: bool) -> bool:
    """Take a ``flock`` without waiting; False when another open file holds it.

    Raises:
        OSError: the lock cannot be taken for another reason.
    """
    f = _fcntl()
    try:
        f.flock(fd, (f.LOCK_SH if shared else f.LOCK_EX) | f.LOCK_NB)
    except OSError as exc:
        if exc.errno in _BUSY:
            return False
        raise
    return True


def lock(fd: int) -> None:
    """Take an exclusive ``flock``, waiting for it."""
    f = _fcntl()
    f.flock(fd, f.LOCK_EX)


def unlock(fd: int) -> None:
    """Drop a ``flock`` this open file holds."""
    f = _fcntl()
    f.flock(fd, f.LOCK_UN)


def sync_dir(path: str) -> None:
    """fsync a directory, so that a rename in it is durable."""
    dfd = os.open(path or ".", os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
    try:
        os.fsync(dfd)
    finally:
        os.close(dfd)


def pid_alive(pid: int) -> bool:
    """Whether a process ``pid`` exists (signal 0 probes without sending anything)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
