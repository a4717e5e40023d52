"""The log part of a FileStore: this writer's logs, retention caps, merged queries.

:class:`airstore.FileStore` holds one over its directory state (``_dirstate``) beside the
key-value part; see ``_logfile`` for the per-slot files.
"""

from __future__ import annotations

import builtins
import os
from collections.abc import Iterable

from airstore._dirstate import DirState
from airstore._entry import stamp
from airstore._filenames import log_path
from airstore._logfile import LogFile, QueryWindow, query_log
from airstore._retention import Retention, apply_retention, read_retention, write_retention
from airstore._validate import check_filter, check_limits, check_namespace, to_epoch_ms
from airstore.types import Entry, JSONValue, TimeBound

__all__ = ["FileLogs"]


class FileLogs:
    """The append logs of a FileStore: this writer's log files over the directory state ``state``.

    Args:
        state: the directory state the store's parts share.
    """

    def __init__(self, state: DirState) -> None:
        self._dir = state
        self.logs: dict[str, LogFile] = {}  # this writer's open logs, by namespace

    def close(self) -> None:
        """Close every open log file."""
        for log in self.logs.values():
            log.close()

    def _log(self, ns: str) -> LogFile:
        log = LogFile(
            self._dir.path, check_namespace(ns), self._dir.lock.slot, self._dir.log_options
        )
        self._dir.io(lambda: log.open_reporting(self._dir.findings), ns)
        log.retention = read_retention(self._dir.path, ns)
        self.logs[ns] = log
        return log

    async def set_log_retention(
        self, ns: str, *, max_age: float | None = None, max_bytes: int | None = None
    ) -> None:
        """Cap the append log of ``ns``: segments older than ``max_age`` seconds, and the
        oldest ones beyond ``max_bytes`` of log files, are deleted (see docs/storage.md).

        The caps are stored in the directory, so every process sharing it applies them and
        ``air store stats`` shows them; ``None`` for both removes them. Applied at once and
        then every few seconds by every writer.

        Raises:
            InvalidArgumentError: a cap that is not positive and finite.
            ReadOnlyStoreError: the store is read-only.
        """
        self._dir.writer()
        caps = Retention.checked(max_age, max_bytes)
        check_namespace(ns)
        self._dir.io(lambda: write_retention(self._dir.path, ns, caps), ns)
        if ns in self.logs:
            self.logs[ns].retention = caps
        self._dir.io(lambda: apply_retention(self._dir.path, ns, caps, self._dir.clock()), ns)

    async def append(self, ns: str, entry: Entry) -> Entry:
        """Append ``entry`` to this writer's log of the namespace; returns it with ``_ts``.

        The line reaches the file at the end of the current event-loop turn together with
        every other line of that turn (one ``write``); queries see it at once.
        """
        persist = self._dir.write_ok
        if persist is None:
            persist = self._dir.writer()
        try:
            log = self.logs.get(ns)
        except TypeError:  # an unhashable namespace: _log names it
            log = None
        if log is None:
            log = self._log(ns)
        stored, _, line = stamp(ns, entry, self._dir.clock)
        buf = log.pending
        buf += line
        buf += b"\n"
        persist.schedule(buf)
        if self._dir.sync:
            await persist.written(buf)
        return stored

    async def append_many(self, ns: str, entries: Iterable[Entry]) -> builtins.list[Entry]:
        """Append every entry, all validated and encoded first (a bad one appends nothing)."""
        persist = self._dir.writer()
        try:
            log = self.logs.get(ns)
        except TypeError:  # an unhashable namespace: _log names it
            log = None
        if log is None:
            log = self._log(ns)
        clock = self._dir.clock
        stamped = [stamp(ns, entry, clock) for entry in entries]
        buf = log.pending
        for _, _, line in stamped:
            buf += line
            buf += b"\n"
        await persist.written(buf)
        return [stored for stored, _, _ in stamped]

    async def query(
        self,
        ns: str,
        limit: int = 100,
        offset: int = 0,
        since: TimeBound = None,
        until: TimeBound = None,
        filter: dict[str, JSONValue] | None = None,
    ) -> builtins.list[Entry]:
        """Entries newest first within ``[since, until)`` matching ``filter``, from every
        writer's files (merged by ``_ts``).

        Reads each log backwards in blocks and stops as soon as it has enough entries (or
        reaches entries older than ``since``). Corrupt lines are skipped and reported.

        Raises:
            UnsupportedFormatError: a log file of a newer format.
        """
        self._dir.ensure_open()
        limit, offset = check_limits(limit, offset)
        window = QueryWindow(
            limit=limit,
            offset=offset,
            lo=to_epoch_ms(since),
            hi=to_epoch_ms(until),
            flt=check_filter(filter),
        )
        writer = None if self._dir.read_only else self.logs.get(check_namespace(ns))
        if writer is None and not self._dir.read_only and self._has_own_log(ns):
            writer = self._log(ns)  # opening it repairs a torn tail first
        report = self._dir.corrupt_lines.report
        out: builtins.list[Entry] = self._dir.io(
            lambda: query_log(self._dir.path, ns, window, writer, report), ns
        )
        return out

    def _has_own_log(self, ns: str) -> bool:
        return os.path.exists(log_path(self._dir.path, check_namespace(ns), self._dir.lock.slot))
