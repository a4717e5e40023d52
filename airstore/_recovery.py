"""What recovery found in a FileStore data directory, and a read-only full check of it.

A writer repairs as it opens a namespace (cuts a torn tail, skips corrupt lines, sets an
unparseable snapshot aside); :func:`check_directory` only looks, so ``air store check`` can run
beside a live writer.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import time
import zlib
from collections.abc import Callable

import orjson

from airstore import _platform
from airstore._aread import read_file
from airstore._events import read_events
from airstore._filenames import discover, snapshot_path
from airstore._format import FORMAT, HEADER_PREFIX, parse_header
from airstore._gzseg import gz_read_all
from airstore._journal import DAMAGED_HEADER, starts_legacy
from airstore._kvfiles import journal_line, legacy_line, parse_snapshot
from airstore._logread import is_entry
from airstore._reports import (
    CheckReport,
    Finding,
    FindingKind,
    NamespaceCheck,
    NamespaceStats,
)
from airstore._retention import read_retention
from airstore.errors import UnsupportedFormatError

__all__ = [
    "CheckReport",
    "CorruptLineLog",
    "Finding",
    "FindingKind",
    "NamespaceCheck",
    "NamespaceStats",
    "check_directory",
    "missing_snapshot",
    "next_line_number",
    "stats_directory",
]

logger = logging.getLogger(__name__)


def _format_ok(ns: str, path: str, head: bytes, kind: str, report: NamespaceCheck) -> bool:
    """False (with a finding) when ``head``, a file's first line, names a newer format. A
    journal's header damaged in its kind or format key costs that line (as the loader sees it:
    ``header_of``)."""
    try:
        parse_header(head, kind, path)
    except UnsupportedFormatError as exc:
        if kind == "journal" and exc.found <= FORMAT:
            report.findings.append(
                Finding(kind="corrupt_line", namespace=ns, path=path, line=1, detail=DAMAGED_HEADER)
            )
            return True
        report.findings.append(
            Finding(kind="unsupported_format", namespace=ns, path=path, detail=exc.message)
        )
        return False
    return True


def _header_ok(line: bytes) -> bool:
    """Whether a header-looking line is JSON naming a usable ``base`` (a journal's) if any."""
    try:
        doc = orjson.loads(line)
    except orjson.JSONDecodeError:
        return False
    base = doc.get("base", 0) if isinstance(doc, dict) else None
    return type(base) is int and base >= 0


def _journal_base(data: bytes) -> int:
    """The ``base`` a journal's header names (0 without a usable header)."""
    head = data[: data.find(b"\n") + 1]
    if not head.startswith(HEADER_PREFIX) or not _header_ok(head):
        return 0
    base = orjson.loads(head).get("base", 0)
    return base if type(base) is int else 0


def _log_line(line: bytes) -> None:
    if not is_entry(orjson.loads(line)):
        raise ValueError(f"not a log entry (an object with an integer _ts): {line[:80]!r}")


def _scan_lines(
    ns: str,
    path: str,
    data: bytes,
    report: NamespaceCheck,
    *,
    kind: str,
    judge: Callable[[bytes], object],
    legacy: Callable[[bytes], object] | None = None,
) -> int:
    """Count the good lines of a JSONL file (its header line aside), recording a torn tail and
    each line ``judge`` refuses (it raises ``ValueError``, as the loaders' own test does);
    ``legacy`` judges instead in a file with no header line (format 1)."""
    lines = data.split(b"\n")
    last = lines.pop()
    count = 0
    header = bool(lines) and lines[0].startswith(HEADER_PREFIX)
    if header and (legacy is None or _header_ok(lines[0])):  # a journal's needs its base
        if not _format_ok(ns, path, lines[0], kind, report):
            return 0
        lines[0] = b""
    elif legacy is not None and lines:  # a journal without a header line
        if starts_legacy(data):
            judge = legacy  # format 1
        else:  # a damaged header, as the loader sees it
            report.findings.append(
                Finding(kind="corrupt_line", namespace=ns, path=path, line=1, detail=DAMAGED_HEADER)
            )
            lines[0] = b""
    for number, line in enumerate(lines, 1):
        if not line:
            continue
        try:
            judge(line)
        except ValueError as exc:
            report.findings.append(
                Finding(kind="corrupt_line", namespace=ns, path=path, line=number, detail=str(exc))
            )
            continue
        count += 1
    if last:
        report.findings.append(
            Finding(
                kind="torn_tail",
                namespace=ns,
                path=path,
                line=len(lines) + 1,
                detail=f"{len(last)} bytes after the last newline",
            )
        )
    return count


def _total_size(paths: list[str]) -> int:
    total = 0
    for path in paths:
        with contextlib.suppress(FileNotFoundError):
            total += os.path.getsize(path)
    return total


async def check_directory(root: str) -> CheckReport:
    """Read every file of a data directory without changing anything (files are read with
    aiofiles, so a check of a large directory never blocks the event loop on I/O).

    Args:
        root: the data directory.

    Returns:
        Per-namespace counts and findings.

    Raises:
        OSError: the directory or a file cannot be read (translated by callers).
    """
    report = CheckReport(root=root)
    try:
        report.events = await asyncio.to_thread(read_events, root)
    except UnsupportedFormatError as exc:
        report.events = [{"event": "unsupported_format", "detail": exc.message}]
    for ns, files in (await asyncio.to_thread(discover, root)).items():
        item = NamespaceCheck(namespace=ns, files=files.all())
        report.namespaces.append(item)
        item.bytes = await asyncio.to_thread(_total_size, item.files)
        snapshot = await read_file(files.snapshot) if files.snapshot else None
        if files.snapshot and snapshot is not None:
            try:
                snap = parse_snapshot(snapshot, files.snapshot)
                item.keys = len(snap.items)
                for detail in snap.bad:  # items the loader drops, with the loader's words
                    item.findings.append(
                        Finding(
                            kind="corrupt_line",
                            namespace=ns,
                            path=files.snapshot,
                            detail=detail,
                        )
                    )
            except UnsupportedFormatError as exc:
                item.findings.append(
                    Finding(
                        kind="unsupported_format",
                        namespace=ns,
                        path=files.snapshot,
                        detail=exc.message,
                    )
                )
            except ValueError as exc:
                item.findings.append(
                    Finding(
                        kind="corrupt_snapshot",
                        namespace=ns,
                        path=files.snapshot,
                        detail=str(exc),
                    )
                )
        for path in files.corrupt:
            item.findings.append(
                Finding(
                    kind="snapshot_kept_aside",
                    namespace=ns,
                    path=path,
                    detail="an unparseable snapshot set aside by an earlier recovery",
                )
            )
        if files.journal and (data := await read_file(files.journal)) is not None:
            base = _journal_base(data)
            if snapshot is None and base and not files.corrupt:  # set aside: said below
                item.findings.append(
                    Finding(
                        kind="corrupt_snapshot",
                        namespace=ns,
                        path=files.snapshot or snapshot_path(root, ns),
                        detail=missing_snapshot(base),
                    )
                )
            item.journal_records = _scan_lines(
                ns,
                files.journal,
                data,
                item,
                kind="journal",
                judge=journal_line,
                legacy=legacy_line,
            )
        for path in [*files.segments, *files.logs]:
            if path.endswith(".gz"):
                try:
                    data = await asyncio.to_thread(_gunzip, path)
                except FileNotFoundError:
                    continue
                except (OSError, EOFError, zlib.error) as exc:
                    item.findings.append(
                        Finding(kind="corrupt_line", namespace=ns, path=path, detail=str(exc))
                    )
                    continue
                item.log_entries += _scan_lines(ns, path, data, item, kind="log", judge=_log_line)
            elif (data := await read_file(path)) is not None:
                item.log_entries += _scan_lines(ns, path, data, item, kind="log", judge=_log_line)
    return report


def missing_snapshot(base: int) -> str:
    """The finding's detail for a namespace whose journal starts after a snapshot that is not
    there (deleted, or a dangling link): the keys only that snapshot held are gone."""
    return (
        f"missing: the journal starts at position {base}, after a snapshot that is not there; "
        "the keys only that snapshot held are gone (restore the file to get them back)"
    )


def next_line_number(path: str) -> int | None:
    """The number the line after the last complete one of ``path`` has (where a torn tail that
    was cut began, as ``check`` numbers it); ``None`` when the file cannot be read."""
    count = 0
    try:
        with open(path, "rb") as fh:
            while block := fh.read(1 << 20):
                count += block.count(b"\n")
    except OSError:
        return None
    return count + 1


class CorruptLineLog:
    """Records each corrupt log line a query skips, once, with its line number."""

    def __init__(self, findings: list[Finding]) -> None:
        self._findings = findings
        self._seen: set[tuple[str, int]] = set()

    def report(self, path: str, offset: int) -> None:
        """Note the unparseable line starting at byte ``offset`` of ``path``."""
        if (path, offset) in self._seen:
            return
        self._seen.add((path, offset))
        line = None
        detail = "skipped a damaged part of a compressed segment"
        if offset >= 0:  # -1: in a compressed segment, which has no line numbers as stored
            detail = f"skipped an unparseable line at byte {offset}"
            with contextlib.suppress(OSError), open(path, "rb") as fh:
                line = fh.read(offset).count(b"\n") + 1  # rare: counting once is fine
        self._findings.append(
            Finding(
                kind="corrupt_line",
                namespace=os.path.basename(path).split(".log.")[0],
                path=path,
                line=line,
                detail=detail,
            )
        )
        logger.warning("airstore: skipped corrupt line %s of %s", line, path)


def _count_lines(path: str) -> int:
    """Lines of a log file (compressed or not), its header line aside."""
    count = 0
    if path.endswith(".gz"):
        with contextlib.suppress(FileNotFoundError, OSError, EOFError, zlib.error):
            data = _gunzip(path)
            count = data.count(b"\n") - (1 if data.startswith(HEADER_PREFIX) else 0)
        return count
    with contextlib.suppress(FileNotFoundError), open(path, "rb") as fh:
        first = True
        while block := fh.read(1 << 20):
            count += block.count(b"\n")
            if first and block.startswith(HEADER_PREFIX):
                count -= 1
            first = False
    return count


def _gunzip(path: str) -> bytes:
    fd = _platform.open_file(path, os.O_RDONLY | _platform.OPEN_FLAGS)
    try:
        return gz_read_all(fd)
    finally:
        os.close(fd)


def stats_directory(root: str) -> list[NamespaceStats]:
    """Count log entries, files and bytes per namespace (keys are counted by the store)."""
    found = []
    for ns, files in discover(root).items():
        item = NamespaceStats(
            namespace=ns,
            segments=len(files.segments),
            files=len(files.all()),
            has_kv=bool(files.snapshot or files.journal),
        )
        for path in files.all():
            with contextlib.suppress(FileNotFoundError):
                item.bytes += os.path.getsize(path)
        now = time.time()
        for path in [*files.segments, *files.logs]:
            item.log_entries += _count_lines(path)
            with contextlib.suppress(FileNotFoundError):
                st = os.stat(path)
                item.log_bytes += st.st_size
                age = now - st.st_mtime
                item.oldest_log_age = max(age, item.oldest_log_age or 0.0)
        caps = read_retention(root, ns)
        if caps is not None:
            item.max_age, item.max_bytes = caps.max_age, caps.max_bytes
        found.append(item)
    return found
