"""``RollupReader``: reads one store's per-minute rollups, with its own cache of parsed documents.

Keep one reader per store to summarize it again cheaply: a repeated read parses only the
documents that changed, and an hour read whole whose revision did not change (see
:data:`RECHECK_S`) is not read at all. The SLO evaluator, the budget and the context report
take a reader too, so a program that holds one parses each document once. Works on read-only
stores opened by another process (the dashboard's case).
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterable, Mapping
from typing import Any

from airmeter.aggregate import aggregate
from airmeter.buckets import DEFAULT_MAX_BUCKETS, Bound, BucketCache, RowGroup, floor_minute, to_ms
from airmeter.gc_pause import gc_paused
from airmeter.layers import Layer
from airmeter.rollups import (
    HOUR_MS,
    HOURS_KEY_PREFIX,
    REVISIONS_KEY_PREFIX,
    ROLLUPS_NAMESPACE,
    RollupRow,
    hour_namespace,
    parse_minute_doc,
)
from airmeter.snapshot_types import Snapshot
from airstore.types import Store

__all__ = [
    "RECHECK_S",
    "Revision",
    "RollupReader",
    "stored_hours",
    "stored_revisions",
    "unchanged",
]

Revision = tuple[tuple[str, str], ...] | None
"""An hour's ``(writer, token)`` pairs, one per writer that lists it; ``None`` when one of them
gave it no token (a writer of an earlier release): it may have changed unseen."""

RECHECK_S = 60.0
"""A kept hour whose revision did not change is still read again after this long (plus up to a
minute, spread by hour): what no token tells (an expired document, another process's files
written in another order) is seen within it."""


def unchanged(kept: Revision, read_at: float, revision: Revision, hour: int, now: float) -> bool:
    """Whether an hour read at ``read_at`` (``time.monotonic()``) with revision ``kept`` can be
    used again instead of reading its documents."""
    return revision is not None and kept == revision and now < read_at + RECHECK_S + hour % 60


async def stored_revisions(store: Store, *, from_hour: int | None = None) -> dict[int, Revision]:
    """Every hour some writer has stored rollups for, with its revision (one read); hours
    before ``from_hour`` get ``None`` (their tokens are not looked at)."""
    listed: dict[int, list[str]] = {}
    tokens: dict[tuple[str, int], str] = {}
    from_day = None if from_hour is None else from_hour // 24
    for key, value in await store.entries(ROLLUPS_NAMESPACE):
        if key.startswith(HOURS_KEY_PREFIX) and isinstance(value, list):
            writer = key[len(HOURS_KEY_PREFIX) :]
            for hour in value:
                if isinstance(hour, int):
                    listed.setdefault(hour, []).append(writer)
        elif key.startswith(REVISIONS_KEY_PREFIX) and isinstance(value, dict):
            writer, _, day = key[len(REVISIONS_KEY_PREFIX) :].rpartition(":")
            if from_day is not None and day.isascii() and day.isdigit() and int(day) < from_day:
                continue
            for hour, token in value.items():
                if isinstance(token, str) and hour.isascii() and hour.isdigit() and len(hour) < 19:
                    tokens[(writer, int(hour))] = token
    out: dict[int, Revision] = {}
    for hour in sorted(listed):
        if from_hour is not None and hour < from_hour:
            out[hour] = None
            continue
        pairs = []
        for writer in sorted(listed[hour]):
            token = tokens.get((writer, hour))
            if token is None:
                break
            pairs.append((writer, token))
        else:
            out[hour] = tuple(pairs)
            continue
        out[hour] = None
    return out


async def stored_hours(store: Store) -> list[int]:
    """Every hour some writer has stored rollups for, oldest first (without revisions)."""
    hours: set[int] = set()
    for _, value in await store.entries(ROLLUPS_NAMESPACE, HOURS_KEY_PREFIX):
        if isinstance(value, list):
            hours.update(int(h) for h in value if isinstance(h, int))
    return sorted(hours)


class _DocCache:
    """Parsed minute documents by hour, revalidated by identity or equality, and the hours
    read whole (with their revision and when)."""

    def __init__(self) -> None:
        self.hours: dict[int, dict[str, tuple[Any, list[RollupRow]]]] = {}
        self.marks: dict[int, tuple[Revision, float]] = {}

    def forget_except(self, stored: set[int]) -> None:
        for hour in [h for h in self.hours if h not in stored]:
            del self.hours[hour]
            self.marks.pop(hour, None)

    def rows(self, hour: int, key: str, doc: Any) -> list[RollupRow]:
        docs = self.hours.setdefault(hour, {})
        cached = docs.get(key)
        if cached is not None and (cached[0] is doc or cached[0] == doc):
            if cached[0] is not doc:  # keep the newest copy: the caller holds that one
                docs[key] = (doc, cached[1])
            return cached[1]
        rows = parse_minute_doc(doc) if isinstance(doc, Mapping) else []
        docs[key] = (doc, rows)
        self.marks.pop(hour, None)  # no longer what a whole read of the hour vouched for
        return rows

    def keep_in_store_order(
        self, hour: int, pairs: list[tuple[str, Any]], whole: bool, mark: tuple[Revision, float]
    ) -> None:
        """After a read: drop the minutes gone from the store, keep the rest in the store's
        order (a kept hour then gives its minutes as a read would), and mark the hour when
        read whole."""
        docs = self.hours.get(hour)
        if docs is None:
            return
        if whole:
            if list(docs) != [key for key, _ in pairs]:
                self.hours[hour] = {key: docs[key] for key, _ in pairs}
            self.marks[hour] = mark
        elif len(docs) > len(pairs):  # minutes expired or were deleted
            present = {key for key, _ in pairs}
            for gone_key in [k for k in docs if k not in present]:
                del docs[gone_key]


class RollupReader:
    """Reads the rollups of one store; owns the cache that makes a repeated read cheap.

    Args:
        store: any opened store holding rollups written by a :class:`~airmeter.StoreSink`
            (read-only is enough). The reader does not close it.
        pause_gc: keep the cyclic garbage collector off while rollups are read and parsed
            (see :mod:`airmeter.gc_pause`): the program's choice, off by default.
    """

    def __init__(self, store: Store, *, pause_gc: bool = False) -> None:
        self.store = store
        self.pause_gc = pause_gc
        self._docs = _DocCache()
        self._buckets = BucketCache()

    def rows(self, hour: int, key: str, doc: Any) -> list[RollupRow]:
        """The parsed rows of one minute document of ``hour`` stored under ``key``: parsed
        once while the document stays the same (by identity or equality)."""
        return self._docs.rows(hour, key, doc)

    async def revisions(self, *, from_hour: int | None = None) -> dict[int, Revision]:
        """:func:`stored_revisions` of the store; the cache forgets the hours gone from it."""
        revisions = await stored_revisions(self.store, from_hour=from_hour)
        self._docs.forget_except(set(revisions))
        return revisions

    async def load_groups(
        self, *, since_ms: int | None = None, until_ms: int | None = None
    ) -> list[RowGroup]:
        """The stored minutes overlapping ``[since_ms, until_ms)`` as ``(minute, rows)``.

        Reads only the hour namespaces of the window; an hour kept whole whose revision did
        not change is not read again (the hours being written always are: the current and
        previous hour by the wall clock, and the two newest stored).

        Raises:
            airstore.AirstoreError: the store cannot be read.
        """
        with gc_paused() if self.pause_gc else contextlib.nullcontext():
            return await self._load_groups(since_ms, until_ms)

    async def _load_groups(self, since_ms: int | None, until_ms: int | None) -> list[RowGroup]:
        lo = None if since_ms is None else floor_minute(since_ms)
        revisions = await self.revisions(from_hour=None if lo is None else lo // HOUR_MS)
        hours = list(revisions)
        current = int(time.time() * 1000) // HOUR_MS
        always = {*hours[-2:], current - 1, current}  # being written
        now = time.monotonic()
        cache = self._docs
        out: list[RowGroup] = []
        for hour in hours:
            if (lo is not None and (hour + 1) * HOUR_MS <= lo) or (
                until_ms is not None and hour * HOUR_MS >= until_ms
            ):
                continue
            revision = revisions[hour]
            docs = cache.hours.get(hour)
            mark = cache.marks.get(hour)
            read: list[tuple[str, Any]] | None = None
            if (
                docs is not None
                and mark is not None
                and hour not in always
                and unchanged(mark[0], mark[1], revision, hour, now)
            ):
                pairs: Iterable[tuple[str, Any]] = ((key, kept[0]) for key, kept in docs.items())
            else:
                pairs = read = await self.store.entries(hour_namespace(hour))
                cache.marks.pop(hour, None)
            whole = True
            for key, doc in pairs:
                minute = int(key[:13]) if key[:13].isdigit() else -1
                if (lo is not None and minute < lo) or (
                    until_ms is not None and minute >= until_ms
                ):
                    whole = False
                    continue
                rows = cache.rows(hour, key, doc)
                if rows:
                    out.append((minute, rows))
            if read is not None:
                cache.keep_in_store_order(hour, read, whole, (revision, now))
        return out

    async def snapshot(
        self,
        *,
        since: Bound = None,
        until: Bound = None,
        tool: str | None = None,
        layer: Layer | int | str | None = None,
        server: str | None = None,
        instance: str | None = None,
        bucket_ms: int | None = None,
        max_buckets: int = DEFAULT_MAX_BUCKETS,
    ) -> Snapshot:
        """A :class:`Snapshot` of the calls recorded in the store; see
        :func:`airmeter.snapshot` for the arguments.

        Raises:
            MeterConfigError: a bad bound, layer or bucket size.
            airstore.AirstoreError: the store cannot be read.
        """
        now_ms = int(time.time() * 1000)
        since_ms, until_ms = to_ms(since, now_ms), to_ms(until, now_ms)
        groups = await self.load_groups(since_ms=since_ms, until_ms=until_ms)
        return aggregate(
            groups, since_ms=since_ms, until_ms=until_ms, tool=tool, layer=layer, server=server,
            instance=instance, bucket_ms=bucket_ms, max_buckets=max_buckets, now_ms=now_ms,
            cache=self._buckets,
        )  # fmt: skip
