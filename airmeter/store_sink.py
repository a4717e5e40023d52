"""``StoreSink``: appends every record to the store's call log and keeps per-minute rollups."""

from __future__ import annotations

import asyncio
import logging
import secrets
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Protocol, runtime_checkable

from airmeter.errors import MeterConfigError
from airmeter.instance import default_instance_id
from airmeter.record import CALLS_NAMESPACE, HOPS_NAMESPACE, CallRecord
from airmeter.rollups import (
    HOURS_KEY_PREFIX,
    MINUTE_MS,
    ROLLUPS_NAMESPACE,
    RollupBook,
    hour_namespace,
    hour_of,
    minute_key,
    parse_minute_doc,
    revisions_key,
)
from airstore.errors import AirstoreError, InvalidValueError
from airstore.types import Store

if TYPE_CHECKING:
    from airmeter.types import PersistingSink

__all__ = [
    "DEFAULT_LOG_MAX_AGE",
    "DEFAULT_LOG_MAX_BYTES",
    "DEFAULT_ROLLUP_TTL",
    "REVISIONS_TTL",
    "StoreSink",
]

logger = logging.getLogger(__name__)

DEFAULT_ROLLUP_TTL = 400 * 24 * 3600.0
"""Rollups live 400 days by default: a year of history (the raw call log is kept far less)."""
DEFAULT_LOG_MAX_AGE = 7 * 24 * 3600.0
"""The raw call log keeps 7 days by default …"""
DEFAULT_LOG_MAX_BYTES = 1 << 30
"""… or 1 GiB, whichever comes first (rollups stay for :data:`DEFAULT_ROLLUP_TTL`)."""
DEFAULT_PERSIST_INTERVAL = 0.0
"""Rollups are written with every delivery of records: a process killed (SIGKILL) then loses
no more of them than of its call log (at 1 s, `air meter report` missed up to the last second
of a killed server's logged calls, all of them for one killed in its first second)."""
REVISIONS_TTL = 40 * 24 * 3600.0
"""How long a day's revision tokens live after its last write (an older hour has none: readers
then read it whenever they need it, as before tokens existed)."""
DEFAULT_MAX_BACKLOG = 100_000
_KEEP_MINUTES = 5
APPEND_CHUNK = 2048
"""Most records per ``append_many`` call: one transaction (SQLite) or round trip (Redis)."""


def _stripped(rec: CallRecord) -> CallRecord:
    return replace(rec, arguments=None, result=None)


@runtime_checkable
class _CountsLostWrites(Protocol):
    """A store that can lose writes it acknowledged (FileStore when its disk refuses a commit)
    and counts them."""

    @property
    def lost_writes(self) -> int: ...


class StoreSink:
    """Writes each record's log form to namespace ``meter.calls`` (one JSONL line per call
    with FileStore) and its minute's rollup to the hour's namespace ``meter.rollups.{hour}``.

    Rollups are written with each write of records (at most every ``persist_interval``
    seconds, when one is given) and on :meth:`persist` / :meth:`close`. The store stays open:
    whoever opened it closes it.

    Args:
        store: an opened store.
        writer: this writer's id in rollup keys (one per process; default ``host-pid``).
        rollup_ttl: seconds a minute's rollup lives (``None``: forever).
        persist_interval: least seconds between rollup writes (0, the default: every write).
        max_backlog: most records kept for retry after a store failure.
        log_max_age: seconds the raw call log keeps an entry (``None``, the default here: no
            age cap; a :class:`~airmeter.Meter` passes :data:`DEFAULT_LOG_MAX_AGE`); set on
            the store once, on the first write (``Store.set_log_retention``).
        log_max_bytes: most bytes the raw call log keeps (``None``: no size cap; a meter
            passes :data:`DEFAULT_LOG_MAX_BYTES`).

    Raises:
        MeterConfigError: a bad TTL or interval.
    """

    def __init__(
        self,
        store: Store,
        *,
        writer: str | None = None,
        rollup_ttl: float | None = DEFAULT_ROLLUP_TTL,
        persist_interval: float = DEFAULT_PERSIST_INTERVAL,
        max_backlog: int = DEFAULT_MAX_BACKLOG,
        log_max_age: float | None = None,
        log_max_bytes: int | None = None,
    ) -> None:
        if rollup_ttl is not None and rollup_ttl <= 0:
            raise MeterConfigError("rollup_ttl must be positive or None")
        if max_backlog < 0:
            raise MeterConfigError("max_backlog must be >= 0")
        if persist_interval < 0:
            raise MeterConfigError("persist_interval must be >= 0")
        if (log_max_age is not None and not log_max_age > 0) or (
            log_max_bytes is not None and log_max_bytes <= 0
        ):
            raise MeterConfigError("log_max_age and log_max_bytes must be positive or None")
        if writer is None:
            writer = default_instance_id()
        if not writer or ":" in writer:
            raise MeterConfigError(f"writer id must be non-empty without ':', got {writer!r}")
        self.store = store
        self.writer = writer
        self._ttl = rollup_ttl
        self._interval = persist_interval
        self._book = RollupBook()
        self._loaded: set[int] = set()
        self._hours: set[int] | None = None
        self._index_key = f"{HOURS_KEY_PREFIX}{writer}"
        self._revisions: dict[int, dict[str, str]] = {}  # day -> {hour: token}, as stored
        self._run = secrets.token_hex(4)  # tokens of this sink never repeat an earlier run's
        self._revision = 0
        self._last_persist = time.monotonic()
        self._closed = False
        self._backlog: list[CallRecord] = []
        self._max_backlog = max_backlog
        self.written = 0
        self.rejected = 0
        self.dropped = 0
        self.lost = 0
        self._unconfirmed = 0  # records of the last write whose commit is not known yet
        self._lost_seen = self._store_lost()
        self._retention: tuple[float | None, int | None] | None = (log_max_age, log_max_bytes)

    async def write(self, records: Sequence[CallRecord]) -> None:
        """Append each record to the call log and count it in its minute's rollup.

        With a store that has ``append_many`` (SqliteStore, RedisStore) records go in chunks of
        :data:`APPEND_CHUNK`, one transaction / round trip each; otherwise one ``append`` each.
        A record the store refuses as invalid is written without its captured ``arguments``
        and ``result``, or skipped and counted in :attr:`rejected`. When the store fails, the
        unwritten records are kept (up to ``max_backlog``, oldest dropped and counted in
        :attr:`dropped`) and retried first on the next write.

        Raises:
            airstore.AirstoreError: the store failed (the meter counts it as a sink error).
        """
        self._check_lost()
        if self._retention is not None:
            await self._set_retention()
        if self._backlog:
            records = [*self._backlog, *records]
            self._backlog = []
        if any(rec.kind is not None for rec in records):
            records = await self._write_hops(records)
        many = getattr(self.store, "append_many", None)
        done = 0
        try:
            while done < len(records):
                if many is not None:
                    chunk = records[done : done + APPEND_CHUNK]
                    if await self._append_chunk(many, chunk):
                        done += len(chunk)
                        continue
                    # one record of the chunk was refused and nothing was written: one by one
                    stop = done + len(chunk)
                else:
                    stop = len(records)
                while done < stop:
                    await self._append_one(records[done])
                    done += 1
        except Exception:
            rest = list(records[done:])
            if len(rest) > self._max_backlog:
                self.dropped += len(rest) - self._max_backlog
                rest = rest[-self._max_backlog :]
            self._backlog = rest
            raise
        finally:
            self.written += done
            self._unconfirmed += done
        if time.monotonic() - self._last_persist >= self._interval:
            await self.persist()

    async def _write_hops(self, records: Sequence[CallRecord]) -> list[CallRecord]:
        """Append the gateway's hops to :data:`HOPS_NAMESPACE` (no rollups: the call is
        counted by the upstream that ran it); return the calls. When the store fails, every
        record waits in the backlog."""
        hops = [rec.to_log() for rec in records if rec.kind is not None]
        try:
            for hop in hops:
                await self.store.append(HOPS_NAMESPACE, hop)
        except Exception:
            self._backlog = list(records[-self._max_backlog :])
            raise
        self.written += len(hops)
        return [rec for rec in records if rec.kind is None]

    def persist_due(self) -> bool:
        """Whether calls were taken since the last persist and ``persist_interval`` has passed:
        the meter then persists without waiting for the next call (a burst's last second
        stayed out of the stored rollups until the next call, or the stop: other processes,
        their budgets and dashboards did not see it)."""
        return self._book.changed and time.monotonic() - self._last_persist >= self._interval

    async def _append_chunk(
        self, many: Callable[..., Awaitable[object]], chunk: Sequence[CallRecord]
    ) -> bool:
        """One ``append_many``; False when the store refused a record (it wrote nothing then:
        ``append_many`` validates every entry first)."""
        try:
            await many(CALLS_NAMESPACE, [rec.to_log() for rec in chunk])
        except InvalidValueError:
            return False
        add = self._book.add
        for rec in chunk:
            add(rec)
        return True

    async def _append_one(self, rec: CallRecord) -> None:
        try:
            await self.store.append(CALLS_NAMESPACE, rec.to_log())
        except InvalidValueError:
            if not await self._append_stripped(rec):
                return
        self._book.add(rec)

    async def _append_stripped(self, rec: CallRecord) -> bool:
        """Retry without captured arguments/result; False (counted) when still refused."""
        if rec.arguments is not None or rec.result is not None:
            try:
                await self.store.append(CALLS_NAMESPACE, _stripped(rec).to_log())
            except InvalidValueError:
                pass
            else:
                return True
        self.rejected += 1
        logger.warning("airmeter: the store refused a record of %r; skipped", rec.tool)
        return False

    async def _set_retention(self) -> None:
        """Cap the call log on the store (once; a store that refuses is logged, not fatal)."""
        assert self._retention is not None
        max_age, max_bytes = self._retention
        self._retention = None
        if max_age is None and max_bytes is None:
            return
        try:
            await self.store.set_log_retention(CALLS_NAMESPACE, max_age=max_age,
                                               max_bytes=max_bytes)  # fmt: skip
        except AirstoreError:
            logger.warning("airmeter: the store refused the call log's retention; the log is "
                           "not capped", exc_info=True)  # fmt: skip

    @property
    def backlog(self) -> int:
        """Records kept after a store failure, waiting for the next write."""
        return len(self._backlog)

    @property
    def unpersisted(self) -> int:
        """Records this sink could not persist, for good: dropped from a full backlog
        (:attr:`dropped`), refused as invalid (:attr:`rejected`), or acknowledged by the store
        and then lost when its commit failed (:attr:`lost`)."""
        return self.dropped + self.rejected + self.lost

    def _store_lost(self) -> int | None:
        store = self.store
        return store.lost_writes if isinstance(store, _CountsLostWrites) else None

    def _check_lost(self) -> None:
        """Count the records of the writes since the last check that the store acknowledged
        and then lost (its commit failed: a full disk). A store counts lost writes of any
        kind; at most the records written since the last check are counted (a commit happens
        by the end of the loop turn that wrote: a later check sees its outcome)."""
        now = self._store_lost()
        if now is None or self._lost_seen is None:
            return
        grew, self._lost_seen = now - self._lost_seen, now
        if grew > 0:
            self.lost += min(grew, self._unconfirmed)
        self._unconfirmed = 0

    async def persist(self) -> None:
        """Write the rollups of every minute that changed since the last time.

        Raises:
            airstore.AirstoreError: the store failed; every minute taken is marked changed
                again, so the next persist rewrites it.
        """
        self._last_persist = time.monotonic()
        dirty = self._book.take_dirty()
        try:
            for minute in dirty:
                ns = hour_namespace(hour_of(minute))
                key = minute_key(minute, self.writer)
                if minute not in self._loaded:
                    # A previous run of this writer may have stored this minute already.
                    existing = await self.store.get(ns, key)
                    if existing is not None:
                        self._book.merge_rows(parse_minute_doc(existing))
                    self._loaded.add(minute)
                await self.store.set(ns, key, self._book.minute_doc(minute), ttl=self._ttl)
            if dirty:
                hours = {hour_of(m) for m in dirty}
                await self._index_hours(hours)
                # after the documents, in a later loop turn (FileStore commits a turn's
                # namespaces in the order it first opened them): a reader that sees the new
                # token reads documents at least that new (FileStore in "snapshot" durability
                # commits both at the next flush, in any order: the readers' re-check bounds it)
                await asyncio.sleep(0)
                await self._mark_revised(hours)
        except BaseException:
            self._book.mark_dirty(dirty)
            raise
        if dirty:
            keep_from = dirty[-1] - _KEEP_MINUTES * MINUTE_MS
            self._book.drop_before(keep_from)
            # a minute the book still holds stays loaded (a late call may have made it dirty
            # again while this persist waited: merging the stored copy again would count twice)
            holds = self._book.holds
            self._loaded = {m for m in self._loaded if holds(m)}

    async def _index_hours(self, hours: set[int]) -> None:
        """Record in the index which hours this writer has written (once per new hour)."""
        if self._hours is None:
            stored = await self.store.get(ROLLUPS_NAMESPACE, self._index_key)
            self._hours = {int(h) for h in stored} if isinstance(stored, list) else set()
        if hours <= self._hours:
            return
        indexed = self._hours | hours
        if self._ttl is not None:  # hours whose minutes have all expired leave the index
            oldest = hour_of(int((time.time() - self._ttl) * 1000)) - 1
            indexed = {h for h in indexed if h >= oldest}
        await self.store.set(ROLLUPS_NAMESPACE, self._index_key, sorted(indexed), ttl=self._ttl)
        self._hours = indexed  # only once stored: a failed write is retried next time

    async def _mark_revised(self, hours: set[int]) -> None:
        """Give the hours just rewritten a new revision token (one key per day touched)."""
        self._revision += 1
        token = f"{self._run}.{self._revision}"
        by_day: dict[int, list[int]] = {}
        for hour in hours:
            by_day.setdefault(hour // 24, []).append(hour)
        for day, day_hours in sorted(by_day.items()):
            key = revisions_key(self.writer, day)
            tokens = self._revisions.get(day)
            if tokens is None:  # a previous run of this writer may have marked other hours
                stored = await self.store.get(ROLLUPS_NAMESPACE, key)
                tokens = (
                    {h: t for h, t in stored.items() if isinstance(t, str)}
                    if isinstance(stored, dict)
                    else {}
                )
            tokens = {**tokens, **{str(hour): token for hour in day_hours}}
            ttl = REVISIONS_TTL if self._ttl is None else min(self._ttl, REVISIONS_TTL)
            await self.store.set(ROLLUPS_NAMESPACE, key, tokens, ttl=ttl)
            self._revisions[day] = tokens  # only once stored
        newest = max(self._revisions)
        for day in [d for d in self._revisions if d < newest - 2]:
            del self._revisions[day]  # read again if a late write ever touches it

    async def close(self) -> None:
        """Retry the backlog, write pending rollups and flush the store (it is not closed).
        Idempotent."""
        if self._closed:
            return
        try:
            if self._backlog:
                await self.write([])
            await self.persist()
            await self.store.flush()
        finally:
            self._check_lost()  # the last commit's outcome
        self._closed = True  # only now: a close that failed can be retried


if TYPE_CHECKING:  # mypy checks that a StoreSink is what the meter persists, reads and counts
    _PERSISTING: type[PersistingSink] = StoreSink
