"""The append log of one namespace: this writer's active file (its slot's) with rotation, and
the newest-first query that merges every writer slot's files.

Each writer appends only to the files of its own slot, so lines never interleave and each file
is in the writer's time order. A query collects up to ``offset + limit`` matches newest first
from each slot (pending lines, active file, rotated segments), stopping early, and merges them
by ``_ts``.
"""

from __future__ import annotations

import contextlib
import heapq
import logging
import os
import time
from collections.abc import Callable
from typing import Any

from airstore import _platform
from airstore._appendfile import AppendFile
from airstore._atomic import fsync_dir
from airstore._filenames import SlotFiles, log_path, segment_path, segments, slot_files
from airstore._format import HEADER_PREFIX, parse_header
from airstore._gzseg import gz_chunks_newest_first
from airstore._logread import Collector, iter_chunks
from airstore._recovery import Finding, next_line_number
from airstore._retention import Retention
from airstore.errors import InvalidArgumentError
from airstore.types import Entry

__all__ = ["QUERY_ATTEMPTS", "LogFile", "LogOptions", "QueryWindow", "query_log"]

QUERY_ATTEMPTS = 4
"""Reads of one query while other writers keep rotating the files under it."""

logger = logging.getLogger(__name__)


class LogOptions:
    """Rotation and retention settings shared by every namespace of a store.

    Args:
        max_bytes: rotate the active log into a segment once it grows past this size.
        max_segments: keep at most this many rotated segments (``None``: all).
        max_age: delete rotated segments last written more than this many seconds ago.
        compress: gzip rotated segments (in a worker thread).
    """

    __slots__ = ("compress", "max_age", "max_bytes", "max_segments")

    def __init__(
        self,
        *,
        max_bytes: int,
        max_segments: int | None,
        max_age: float | None,
        compress: bool = True,
    ) -> None:
        if max_bytes <= 0 or (max_segments is not None and max_segments < 0):
            raise InvalidArgumentError("max_log_bytes must be positive, max_log_segments >= 0")
        self.max_bytes = max_bytes
        self.max_segments = max_segments
        self.max_age = max_age
        self.compress = compress


class LogFile(AppendFile):
    """This writer's active log of one namespace (its slot's ``ns.log[.sN].jsonl``)."""

    __slots__ = ("_options", "_root", "ns", "retention", "slot")

    def __init__(self, root: str, ns: str, slot: int, options: LogOptions) -> None:
        super().__init__(log_path(root, ns, slot))
        self._root = root
        self.ns = ns
        self.slot = slot
        self._options = options
        self.retention: Retention | None = None  # the namespace's caps, when it has some

    def open_reporting(self, findings: list[Finding]) -> None:
        """Open the file; a torn last line is cut back and reported in ``findings``."""
        cut = self.open()
        if cut:
            detail = f"cut {cut} bytes of an unfinished last line"
            at = next_line_number(self.path)
            findings.append(
                Finding(kind="torn_tail", namespace=self.ns, path=self.path, line=at, detail=detail)
            )
            logger.warning("airstore recovery: %s in %s", detail, self.path)

    def rotate_if_needed(self) -> str | None:
        """Move a full active log aside as the slot's next segment; returns the segment's path
        when it rotated (the caller compresses it)."""
        limit = self._options.max_bytes
        if self.retention is not None:
            limit = self.retention.rotate_bytes(limit)
        if self.size < limit or self.fd is None:
            return None
        existing = segments(self._root, self.ns, self.slot)
        number = existing[-1][0] + 1 if existing else 1
        _platform.datasync(self.fd)
        self.unsynced = False
        segment = segment_path(self._root, self.ns, number, self.slot)
        self.close()  # never rename a file held open (Windows and exfat-fuse refuse it)
        try:
            _platform.replace(self.path, segment)
        finally:
            self.open()
        fsync_dir(self._root)
        self.apply_retention()
        return segment if self._options.compress else None

    def uncompressed_segments(self) -> list[str]:
        """This slot's rotated segments still plain (a compression cut short by an exit or a
        crash); a plain one whose ``.gz`` is complete is removed here."""
        if not self._options.compress:
            return []
        plain = []
        for _number, path in segments(self._root, self.ns, self.slot):
            if path.endswith(".gz"):
                continue
            if os.path.exists(path + ".gz"):
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(path)
            else:
                plain.append(path)
        return plain

    def apply_retention(self) -> None:
        """Delete this slot's segments beyond ``max_segments`` or older than ``max_age``."""
        opts = self._options
        if opts.max_segments is None and opts.max_age is None:
            return
        found = segments(self._root, self.ns, self.slot)
        doomed = []
        if opts.max_segments is not None and len(found) > opts.max_segments:
            doomed = found[: len(found) - opts.max_segments]
            found = found[len(doomed) :]
        if opts.max_age is not None:
            cutoff = time.time() - opts.max_age
            for item in found:
                with contextlib.suppress(FileNotFoundError):
                    if os.stat(item[1]).st_mtime < cutoff:
                        doomed.append(item)
        for _number, path in doomed:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(path)
                logger.info("airstore: log retention removed %s", path)


CorruptReporter = Callable[[str, int], None]  # (path, byte offset)


class QueryWindow:
    """What a query asks for (limit, offset, time window, filter)."""

    __slots__ = ("flt", "hi", "limit", "lo", "offset")

    def __init__(
        self, *, limit: int, offset: int, lo: int | None, hi: int | None, flt: dict[str, Any] | None
    ) -> None:
        self.limit, self.offset, self.lo, self.hi, self.flt = limit, offset, lo, hi, flt

    def collector(self, *, merged: bool) -> Collector:
        """A collector for one slot (merged: every match up to offset + limit)."""
        if merged:
            return Collector(limit=self.offset + self.limit, offset=0, lo=self.lo, hi=self.hi,
                             flt=self.flt)  # fmt: skip
        return Collector(limit=self.limit, offset=self.offset, lo=self.lo, hi=self.hi, flt=self.flt)


def _check_header(fd: int, path: str) -> None:
    head = _platform.pread(fd, 256, 0)
    if head.startswith(HEADER_PREFIX):
        parse_header(head[: head.find(b"\n") + 1] or head, "log", path)


def _feed_file(fd: int, end: int, path: str, collector: Collector, report: CorruptReporter) -> None:
    _check_header(fd, path)

    def hook(offset: int) -> None:
        report(path, offset)

    for base, chunk in iter_chunks(fd, end):
        collector.feed(chunk, base, hook)
        if collector.done:
            return


def _feed_gz(fd: int, path: str, collector: Collector, report: CorruptReporter) -> None:
    def hook(offset: int) -> None:
        report(path, offset)

    def damaged(exc: BaseException) -> None:
        report(path, -1)
        logger.warning("airstore: skipped a damaged part of segment %s: %s", path, exc)

    for chunk in gz_chunks_newest_first(fd, damaged):
        if chunk.startswith(HEADER_PREFIX):
            parse_header(chunk[: chunk.find(b"\n") + 1], "log", path)
        collector.feed(chunk, -1, hook)
        if collector.done:
            return


def _feed_path(path: str, collector: Collector, report: CorruptReporter, skip_ino: int) -> int:
    """Feed one file by name; returns its inode (-1 when it is gone)."""
    try:
        fd = _platform.open_file(path, os.O_RDONLY | _platform.OPEN_FLAGS)
    except FileNotFoundError:
        return -1  # rotated, compressed or removed by retention meanwhile
    try:
        st = os.fstat(fd)
        if path.endswith(".gz"):
            _feed_gz(fd, path, collector, report)
        elif st.st_ino != skip_ino:
            _feed_file(fd, st.st_size, path, collector, report)
        return st.st_ino
    finally:
        os.close(fd)


def _collect_slot(
    files: SlotFiles,
    collector: Collector,
    writer: LogFile | None,
    report: CorruptReporter,
    missed: list[str],
) -> None:
    """Feed one slot newest first: pending lines, the active file, then segments. A file read
    as active is skipped when it shows up again as a segment (a rotation between two looks)."""
    active_ino = -1
    if writer is not None:
        if writer.pending:
            with contextlib.suppress(OSError):  # what cannot be written is read from memory
                writer.write_pending()
        if writer.pending:
            collector.feed(bytes(writer.pending), -1, lambda off: report("(pending)", off))
        if collector.done or writer.fd is None:
            return
        active_ino = os.fstat(writer.fd).st_ino
        _feed_file(writer.fd, writer.size, writer.path, collector, report)
    elif files.active is not None:
        active_ino = _feed_path(files.active, collector, report, -1)
        if active_ino == -1:
            missed.append(files.active)
    for _number, path in reversed(files.segments):
        if collector.done:
            return
        if _feed_path(path, collector, report, active_ino) == -1:
            missed.append(path)


def query_log(
    root: str, ns: str, window: QueryWindow, writer: LogFile | None, report: CorruptReporter
) -> list[Entry]:
    """Entries of ``ns`` newest first across every writer slot's files.

    ``writer`` is this store's own active log (its pending lines are the newest of its slot).
    The files are listed before they are read: when another writer rotated its active file
    in between (its next segment exists now) or a listed file was gone when it was to be read
    (compressed, or removed by retention), the query lists and reads again, since the lines
    of a renamed file may have been in neither place (at most :data:`QUERY_ATTEMPTS` reads;
    the last one's answer stands). Without a race that costs two ``stat`` calls per slot.
    """
    for _attempt in range(QUERY_ATTEMPTS - 1):
        slots = slot_files(root, ns)
        missed: list[str] = []
        out = _query_files(slots, window, writer, report, missed)
        if not missed and not _rotated(root, ns, slots):
            return out
    return _query_files(slot_files(root, ns), window, writer, report, [])


def _rotated(root: str, ns: str, slots: list[SlotFiles]) -> bool:
    """Whether a slot's next segment exists now (plain or compressed): its active file was
    renamed after the listing, so the lines it held may have been read in neither place."""
    for files in slots:
        number = files.segments[-1][0] + 1 if files.segments else 1
        path = segment_path(root, ns, number, files.slot)
        if os.path.exists(path) or os.path.exists(path + ".gz"):
            return True
    return False


def _query_files(
    slots: list[SlotFiles],
    window: QueryWindow,
    writer: LogFile | None,
    report: CorruptReporter,
    missed: list[str],
) -> list[Entry]:
    """One read of the listed files; a listed file gone when it was to be read goes into
    ``missed``."""
    if writer is not None and all(s.slot != writer.slot for s in slots):
        slots = [*slots, SlotFiles(writer.slot)]  # the caller's listing stays as listed
    if len(slots) <= 1:  # one writer's files: no merge, the collector pages itself
        collector = window.collector(merged=False)
        for files in slots:
            own = writer if writer is not None and writer.slot == files.slot else None
            _collect_slot(files, collector, own, report, missed)
        return collector.out
    streams = []
    for files in slots:
        collector = window.collector(merged=True)
        own = writer if writer is not None and writer.slot == files.slot else None
        _collect_slot(files, collector, own, report, missed)
        streams.append(collector.out)
    merged = heapq.merge(*streams, key=lambda entry: -entry["_ts"])
    start = window.offset
    out: list[Entry] = []
    for i, entry in enumerate(merged):
        if i >= start:
            out.append(entry)
            if len(out) >= window.limit:
                break
    return out
