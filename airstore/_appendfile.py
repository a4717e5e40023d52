"""An append-only JSONL file owned by the writer: a pending buffer, one fd, tail repair.

Lines accumulate in one ``bytearray`` (cheap per line) and go to the kernel in one ``os.write``
per event-loop turn; ``fdatasync`` runs about once a second in a worker thread.
"""

from __future__ import annotations

import contextlib
import os
import threading

from airstore import _platform

__all__ = ["AppendFile", "cut_torn_tail", "last_newline_end"]

_TAIL_BLOCK = 64 * 1024


def last_newline_end(fd: int, size: int) -> int:
    """Offset just past the last ``\\n`` before ``size`` (0 when there is none)."""
    pos = size
    while pos > 0:
        start = max(0, pos - _TAIL_BLOCK)
        block = _platform.pread(fd, pos - start, start)
        nl = block.rfind(b"\n")
        if nl >= 0:
            return start + nl + 1
        pos = start
    return 0


def cut_torn_tail(fd: int) -> tuple[int, int]:
    """Truncate a torn last line back to the last newline.

    Returns:
        ``(new_size, bytes_cut)``.
    """
    size = os.fstat(fd).st_size
    if size == 0 or _platform.pread(fd, 1, size - 1) == b"\n":
        return size, 0
    good = last_newline_end(fd, size)
    os.ftruncate(fd, good)
    return good, size - good


class AppendFile:
    """One append-only file with a pending in-memory buffer.

    Args:
        path: the file; created when missing.
    """

    __slots__ = ("_lock", "fd", "path", "pending", "size", "unsynced")

    def __init__(self, path: str) -> None:
        self.path = path
        self.pending = bytearray()
        self.fd: int | None = None
        self.size = 0
        self.unsynced = False
        self._lock = threading.Lock()  # fdatasync (worker thread) vs close (loop)

    def open(self) -> int:
        """Open for appending, cutting a torn last line; returns the number of bytes cut."""
        fd = _platform.open_file(
            self.path, os.O_RDWR | os.O_CREAT | os.O_APPEND | _platform.OPEN_FLAGS, 0o644
        )
        try:
            self.size, cut = cut_torn_tail(fd)
        except OSError:
            os.close(fd)
            raise
        self.fd = fd
        return cut

    @property
    def end(self) -> int:
        """Logical end: bytes on disk plus bytes pending."""
        return self.size + len(self.pending)

    def write_pending(self) -> None:
        """Write the pending buffer; on ``OSError`` (disk full …) the file is cut back to where
        it was, so no partial line stays behind, and the bytes stay pending."""
        buf = self.pending
        if not buf or self.fd is None:
            return
        fd = self.fd
        written = 0
        try:
            with memoryview(buf) as view:
                while written < len(buf):
                    written += os.write(fd, view[written:])
        except OSError:
            if written:
                with contextlib.suppress(OSError):
                    os.ftruncate(fd, self.size)
            raise
        del buf[:]
        self.size += written
        self.unsynced = True

    def sync(self) -> None:
        """``fdatasync`` the file if it has unsynced writes (safe from a worker thread)."""
        with self._lock:
            if self.fd is not None and self.unsynced:
                self.unsynced = False
                try:
                    _platform.datasync(self.fd)
                except OSError:
                    self.unsynced = True
                    raise

    def truncate(self) -> None:
        """Empty the file (used after a snapshot made the journal redundant)."""
        if self.fd is not None:
            os.ftruncate(self.fd, 0)
            self.size = 0

    def replace_with(self, data: bytes) -> None:
        """Atomically swap the file's content for ``data`` and reopen it for appending."""
        tmp = self.path + ".tmp"
        fd = _platform.open_file(
            tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | _platform.OPEN_FLAGS, 0o644
        )
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view) :]
            _platform.datasync(fd)
        finally:
            os.close(fd)
        self.close()  # never replace a file held open (Windows and exfat-fuse refuse it)
        try:
            _platform.replace(tmp, self.path)
        finally:
            self.fd = _platform.open_file(self.path, os.O_RDWR | os.O_APPEND | _platform.OPEN_FLAGS)
        self.size = len(data)
        self.unsynced = False

    def close(self) -> None:
        """Close the fd (pending bytes are the caller's business). Idempotent."""
        with self._lock:
            fd, self.fd = self.fd, None
            if fd is not None:
                with contextlib.suppress(OSError):
                    os.close(fd)
