"""The KV journal of one namespace, shared by every writer of a data directory.

Records are appended under an exclusive ``flock`` on ``ns.journal.lock``, once per event-loop
turn per writer (with the turn's records in one ``write``); readers never lock. Every byte of
the journal has a *logical position* that never changes: a journal file starts with a header
naming the position of its first record (``base``), and a compaction writes a snapshot that
covers everything before some position ``P`` and then a new journal file whose base is ``P``
(holding the records after ``P``). A process that has read up to position ``L`` in the old file
finishes it (nobody appends to it after the switch) and continues in the new one at ``L``; a
loader skips the records a snapshot already holds by position. A reader that finds the new
journal starting after its position has missed records and reloads the namespace.
"""

from __future__ import annotations

import contextlib
import os
import re
import threading
from collections.abc import Iterator
from typing import Any

from airstore import _platform
from airstore._atomic import fsync_dir, temp_path, write_file
from airstore._filenames import journal_lock_path, journal_path
from airstore._format import FORMAT, journal_header, parse_header
from airstore.errors import UnsupportedFormatError

__all__ = [
    "DAMAGED_HEADER",
    "Journal",
    "header_of",
    "read_lines",
    "snapshot_path_of",
    "starts_legacy",
]

_HEAD = 512  # a header line is far shorter
DAMAGED_HEADER = (
    "the journal's header line is damaged: its records are read as following the snapshot"
)


_LEGACY_START = re.compile(rb"\[\s*-?\d")  # a format-1 record opens with its seq number


def starts_legacy(head: bytes) -> bool:
    """Whether ``head``, a journal's first bytes, starts a format-1 journal: one of its first
    two lines opens like a record ``[seq, …`` (the first may be the damaged one). Only the
    lines' starts are looked at, so a first record of any length is recognised; a format-3
    record opens with its key (``["``), a header with ``{``."""
    first, _, rest = head.partition(b"\n")
    return bool(_LEGACY_START.match(first) or (rest and _LEGACY_START.match(rest)))


def header_of(line: bytes, path: str) -> dict[str, Any] | None:
    """The fields of a journal's header line; ``None`` when the line is no header (a format-1
    record), ``{}`` when it is a damaged one: a changed byte in the kind it names or in its
    format key costs that line, as any damaged header does, not the namespace.

    Raises:
        UnsupportedFormatError: the header names a newer format.
    """
    try:
        return parse_header(line, "journal", path)
    except UnsupportedFormatError as exc:
        if exc.found > FORMAT:
            raise
        return {}


def _first_lines(fd: int, size: int) -> bytes:
    """The file's start up to the first bytes of its second line (or its end)."""
    head = b""
    while len(head) < size and (block := _platform.pread(fd, 1 << 16, len(head))):
        head += block
        newline = head.find(b"\n")
        if newline >= 0 and len(head) > newline + 8:
            break
    return head


def read_lines(fd: int, start: int, end: int) -> bytes:
    """Bytes ``[start, end)`` of ``fd`` cut back to the last complete line."""
    if end <= start:
        return b""
    data = _platform.pread(fd, end - start, start)
    return data[: data.rfind(b"\n") + 1]


class Journal:
    """The journal file of one namespace and this process's view of it.

    Attributes:
        base: logical position of the current file's first record.
        hdr: length of the current file's header line (0 for a format-1 file).
        read_to: file offset up to which this process has applied records.
        read_start: file offset where the bytes of the last read began (``None``: they began
            in the file before a compaction, which the read followed).
        pending: records made here and not yet written (writers only).
        legacy: the current file is a format-1 journal (no header).
        format: the current file's format (1 for a file without a header, empty or not).
    """

    def __init__(self, root: str, ns: str, *, writer: bool) -> None:
        self.path = journal_path(root, ns)
        self.lock_path = journal_lock_path(root, ns)
        self.ns = ns
        self.writer = writer
        self.fd: int | None = None
        self.ino = -1
        self.base = 0
        self.hdr = 0
        self.read_to = 0
        self.read_start: int | None = 0
        self.header_damaged = False  # the first line is no header, nor a format-1 record
        self.legacy = False
        self.format = FORMAT
        self.pending = bytearray()
        self.unsynced = False
        self.dirty = False  # this process wrote records since its last compaction
        self._lock_fd: int | None = None
        self._held = False  # the event loop's thread holds the lock (only it takes it)
        self._sync_lock = threading.Lock()  # fdatasync (worker thread) vs close (loop)

    @property
    def pos(self) -> int:
        """Logical position up to which this process has applied the journal."""
        return self.base + self.read_to - self.hdr

    def offset_of(self, position: int) -> int:
        """File offset of logical ``position`` in the current file."""
        return self.hdr + position - self.base

    # -- the lock ----------------------------------------------------------------------------
    @contextlib.contextmanager
    def locked(self) -> Iterator[Journal]:
        """Hold the journal's exclusive lock (blocking: other holders keep it for microseconds,
        one ``write`` of a loop turn's records). Re-entrant: a caller already holding it (a
        reload under a commit) keeps it until the outermost block ends."""
        if self._held:
            yield self
            return
        if self._lock_fd is None:
            self._lock_fd = _platform.open_file(
                self.lock_path, os.O_RDWR | os.O_CREAT | _platform.OPEN_FLAGS, 0o644
            )
        _platform.lock(self._lock_fd)
        self._held = True
        try:
            yield self
        finally:
            self._held = False
            _platform.unlock(self._lock_fd)

    # -- opening -----------------------------------------------------------------------------
    def open(self) -> bool:
        """Open the current file and read its header; False when there is no journal yet.

        Raises:
            UnsupportedFormatError: the header names a newer format.
            OSError: the file cannot be read.
        """
        flags = (os.O_RDWR | os.O_APPEND) if self.writer else os.O_RDONLY
        try:
            fd = _platform.open_file(self.path, flags | _platform.OPEN_FLAGS)
        except FileNotFoundError:
            return False
        try:
            st = os.fstat(fd)
            head = _platform.pread(fd, _HEAD, 0)
            if b"\n" not in head:  # a first line longer than any header: find its end
                head = _first_lines(fd, st.st_size)
            line = head[: head.find(b"\n") + 1]
            doc = header_of(line, self.path) if line else None
        except BaseException:
            os.close(fd)
            raise
        self.close()
        self.fd, self.ino = fd, st.st_ino
        base = doc.get("base", 0) if doc else None
        self.header_damaged = False
        if doc is not None and type(base) is int and base >= 0:
            self.base, self.hdr, self.legacy = base, len(line), False
            self.format = doc["format"] if doc else FORMAT
        elif doc is None and (st.st_size == 0 or starts_legacy(head)):
            self.base, self.hdr, self.legacy = 0, 0, st.st_size > 0
            self.format = 1
        else:
            # A header line that is damaged (or names no base): not a format-1 journal, whose
            # first line is a record. Its records follow the line; the loader places them
            # (after its snapshot) and reports the line, never drops them as format-1 garbage.
            self.base, self.hdr, self.legacy = 0, len(line), False
            self.format = FORMAT
            self.header_damaged = True
        self.read_to = self.hdr
        return True

    def start_locked(self, base: int, records: bytes = b"", snapshot: str | None = None) -> None:
        """Writer, under the lock: make a new journal file whose first record is at ``base``,
        holding ``records``; when ``snapshot`` (a temp file) is given, rename it over the
        snapshot first. The new file is written aside and renamed, so no reader ever sees it
        without its header; the old file is finished as it is.
        """
        header = journal_header(base)
        tmp = temp_path(self.path)
        write_file(tmp, header + records)
        # Never replace a file this process holds open: Windows refuses it and exfat-fuse
        # loses the volume. Closed first; on a failure the old file is open again as it was.
        self.close()
        flags = os.O_RDWR | os.O_APPEND | _platform.OPEN_FLAGS
        try:
            if snapshot is not None:
                _platform.replace(snapshot, snapshot_path_of(self.path))
            _platform.replace(tmp, self.path)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            self.fd = _platform.open_file(self.path, flags)
            raise
        fsync_dir(os.path.dirname(self.path))
        self.fd = _platform.open_file(self.path, flags)
        self.ino = os.fstat(self.fd).st_ino
        self.base, self.hdr, self.legacy = base, len(header), False
        self.format = FORMAT
        self.read_to = self.hdr + len(records)
        self.unsynced = False

    # -- reading -----------------------------------------------------------------------------
    def read_new(self) -> bytes | None:
        """Complete records appended since the last read, following a compaction into the next
        file; ``None`` when records were missed (a new file starts after our position) or the
        journal went away: the caller reloads the namespace.

        Raises:
            UnsupportedFormatError: the new file names a newer format.
            OSError: a file cannot be read.
        """
        if self.fd is None:
            return None
        try:
            ino = os.stat(self.path).st_ino
        except FileNotFoundError:
            return None
        data = self._read_rest()
        if ino == self.ino:
            return data
        position = self.pos
        if self.legacy or not self.open():
            return None
        if self.legacy or self.header_damaged or position < self.base:
            return None  # (a damaged header: the reload places its records after the snapshot)
        self.read_to = self.offset_of(position)
        if not data:
            return self._read_rest()
        data += self._read_rest()
        self.read_start = None
        return data

    def _read_rest(self) -> bytes:
        assert self.fd is not None
        self.read_start = self.read_to
        data = read_lines(self.fd, self.read_to, os.fstat(self.fd).st_size)
        self.read_to += len(data)
        return data

    def read_from(self, position: int) -> bytes | None:
        """Complete records from logical ``position`` to the end (a loader skipping what its
        snapshot holds); ``None`` when the file starts after ``position``."""
        if position < self.base:
            return None
        self.read_to = self.offset_of(position)
        return self._read_rest()

    # -- writing (under the lock) --------------------------------------------------------------
    def torn_bytes(self) -> int:
        """Bytes after the last complete record (a writer died mid-write); cut them with
        :meth:`cut_torn` while holding the lock. Never negative: a file emptied by hand under a
        snapshot ends before the position read up to, and has nothing to cut."""
        assert self.fd is not None
        return max(0, os.fstat(self.fd).st_size - self.read_to)

    def cut_torn(self) -> None:
        """Truncate the file back to the last complete record."""
        assert self.fd is not None
        os.ftruncate(self.fd, self.read_to)

    def write_pending_locked(self) -> int:
        """Append the pending records in one ``write``; returns the bytes written.

        On ``OSError`` (disk full …) the file is cut back to where it was, so no half record
        stays behind, and the records stay pending.
        """
        buf = self.pending
        if not buf:
            return 0
        assert self.fd is not None
        start = self.read_to
        written = 0
        try:
            view = memoryview(buf)
            while written < len(buf):
                written += os.write(self.fd, view[written:])
        except OSError:
            with contextlib.suppress(OSError):
                os.ftruncate(self.fd, start)
            raise
        finally:
            view.release()
        del buf[:]
        self.read_to += written
        self.unsynced = self.dirty = True
        return written

    def sync(self) -> None:
        """``fdatasync`` the file if it has unsynced writes (safe from a worker thread)."""
        with self._sync_lock:
            if self.fd is not None and self.unsynced:
                self.unsynced = False
                try:
                    _platform.datasync(self.fd)
                except OSError:
                    self.unsynced = True
                    raise

    def close(self) -> None:
        """Close the journal fd (the lock fd stays until :meth:`release`). Idempotent."""
        with self._sync_lock:
            fd, self.fd = self.fd, None
            if fd is not None:
                with contextlib.suppress(OSError):
                    os.close(fd)

    def release(self) -> None:
        """Close every fd. Idempotent."""
        self.close()
        fd, self._lock_fd = self._lock_fd, None
        if fd is not None:
            with contextlib.suppress(OSError):
                os.close(fd)


def snapshot_path_of(journal: str) -> str:
    """The snapshot beside a journal file (``ns.journal.jsonl`` → ``ns.json``)."""
    return journal[: -len(".journal.jsonl")] + ".json"
