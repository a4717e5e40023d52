"""The append log of one namespace: the writer's active file with rotation and retention, and
the newest-first query over pending lines, the active file and rotated segments."""

from __future__ import annotations

import contextlib
import logging
import os
import time
from collections.abc import Callable

from airstore._appendfile import AppendFile
from airstore._filenames import log_path, segment_path, segments
from airstore._logread import Collector, iter_chunks
from airstore._recovery import Finding
from airstore.errors import InvalidArgumentError

__all__ = ["LogFile", "LogOptions", "query_log"]

logger = logging.getLogger(__name__)


class LogOptions:
    """Rotation and retention settings shared by every namespace of a store.

    Args:
        max_bytes: rotate the active log into a segment once it grows past this size.
        max_segments: keep at most this many rotated segments (``None``: all).
        max_age: delete rotated segments last written more than this many seconds ago.
    """

    __slots__ = ("max_age", "max_bytes", "max_segments")

    def __init__(self, *, max_bytes: int, max_segments: int | None, max_age: float | None) -> None:
        if max_bytes <= 0 or (max_segments is not None and max_segments < 0):
            raise InvalidArgumentError("max_log_bytes must be positive, max_log_segments >= 0")
        self.max_bytes = max_bytes
        self.max_segments = max_segments
        self.max_age = max_age


class LogFile(AppendFile):
    """The writer's active ``ns.log.jsonl``."""

    __slots__ = ("_options", "_root", "ns")

    def __init__(self, root: str, ns: str, options: LogOptions) -> None:
        super().__init__(log_path(root, ns))
        self._root = root
        self.ns = ns
        self._options = options

    def open_reporting(self, findings: list[Finding]) -> None:
        """Open the file; a torn last line is cut back and reported in ``findings``."""
        cut = self.open()
        if cut:
            detail = f"cut {cut} bytes of an unfinished last line"
            findings.append(
                Finding(kind="torn_tail", namespace=self.ns, path=self.path, detail=detail)
            )
            logger.warning("airstore recovery: %s in %s", detail, self.path)

    def rotate_if_needed(self) -> bool:
        """Move a full active log aside as the next segment; True if it rotated."""
        if self.size < self._options.max_bytes or self.fd is None:
            return False
        existing = segments(self._root, self.ns)
        number = existing[-1][0] + 1 if existing else 1
        os.fdatasync(self.fd)
        self.unsynced = False
        os.rename(self.path, segment_path(self._root, self.ns, number))
        self.close()
        self.open()
        _fsync_dir(self._root)
        self.apply_retention()
        return True

    def apply_retention(self) -> None:
        """Delete segments beyond ``max_segments`` or older than ``max_age``."""
        opts = self._options
        if opts.max_segments is None and opts.max_age is None:
            return
        found = segments(self._root, self.ns)
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


def _fsync_dir(root: str) -> None:
    dfd = os.open(root, os.O_RDONLY | os.O_CLOEXEC)
    try:
        os.fsync(dfd)
    finally:
        os.close(dfd)


CorruptReporter = Callable[[str, int], None]  # (path, byte offset)


def _feed_file(fd: int, end: int, path: str, collector: Collector, report: CorruptReporter) -> None:
    def hook(offset: int) -> None:
        report(path, offset)

    for base, chunk in iter_chunks(fd, end):
        collector.feed(chunk, base, hook)
        if collector.done:
            return


def query_log(
    root: str, ns: str, collector: Collector, writer: LogFile | None, report: CorruptReporter
) -> None:
    """Feed ``collector`` newest first: pending lines, the active file, then segments.

    A reader (``writer is None``) opens the files by name each time, so it sees every line the
    writer has written, and skips a segment that is the very file it already read as active
    (a rotation between its two looks).
    """
    active_path = log_path(root, ns)
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
        _feed_file(writer.fd, writer.size, active_path, collector, report)
    else:
        try:
            fd = os.open(active_path, os.O_RDONLY | os.O_CLOEXEC)
        except FileNotFoundError:
            fd = -1
        if fd >= 0:
            try:
                st = os.fstat(fd)
                active_ino = st.st_ino
                _feed_file(fd, st.st_size, active_path, collector, report)
            finally:
                os.close(fd)
    if collector.done:
        return
    for _number, path in reversed(segments(root, ns)):
        try:
            fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
        except FileNotFoundError:
            continue  # removed by retention meanwhile
        try:
            st = os.fstat(fd)
            if st.st_ino != active_ino:
                _feed_file(fd, st.st_size, path, collector, report)
        finally:
            os.close(fd)
        if collector.done:
            return
