"""The writer lock of a FileStore data directory: an exclusive ``flock`` on a ``.lock`` sidecar."""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os

from airstore.errors import StorageIOError, StoreLockedError

__all__ = ["LOCK_NAME", "DirLock", "read_holder_pid"]

LOCK_NAME = ".lock"


def read_holder_pid(path: str) -> int | None:
    """Return the pid written in a lock file, or ``None`` when absent or unreadable."""
    try:
        with open(path, "rb") as fh:
            text = fh.read(32).strip()
    except OSError:
        return None
    return int(text) if text.isdigit() else None


class DirLock:
    """One writer per directory, enforced by the kernel.

    ``flock`` locks die with the process, so a SIGKILLed writer never leaves a stale lock behind;
    the pid inside the file is only informative (it names the holder in the error).
    """

    def __init__(self, directory: str) -> None:
        self.path = os.path.join(directory, LOCK_NAME)
        self._fd: int | None = None

    def acquire(self) -> None:
        """Take the lock or raise :class:`StoreLockedError` naming the holder's pid."""
        try:
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
        except OSError as exc:
            raise StorageIOError(
                f"cannot open lock file {self.path}: {exc}", path=self.path
            ) from exc
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as exc:
            os.close(fd)
            if exc.errno in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
                pid = read_holder_pid(self.path)
                raise StoreLockedError(
                    f"data directory {os.path.dirname(self.path)!r} is locked by another writer "
                    f"(pid {pid if pid is not None else 'unknown'}); open it with read_only=True "
                    "to read beside it",
                    path=self.path,
                    pid=pid,
                ) from exc
            raise StorageIOError(f"cannot lock {self.path}: {exc}", path=self.path) from exc
        try:
            os.ftruncate(fd, 0)
            os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        except OSError:
            pass  # the pid is informative only; the flock is what counts
        self._fd = fd

    def release(self) -> None:
        """Drop the lock. Idempotent."""
        fd, self._fd = self._fd, None
        if fd is not None:
            with contextlib.suppress(OSError):
                os.close(fd)
