"""Snapshots: totals, percentiles, layers, tools, servers and a time series from rollups.

``await snapshot(store, since=..., ...)`` reads the per-minute rollups of any store, including a
read-only one opened by another process (the dashboard). Windows are minute-granular: a minute
counts when it overlaps ``[since, until)``. Latency percentiles come from log-bucketed
histograms (within 1.5 %); counts, errors and costs are exact.
"""

from __future__ import annotations

import gc
import threading
import time
import weakref
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from datetime import datetime, timedelta
from typing import Any

from airmeter.errors import MeterConfigError
from airmeter.layers import LAYERS, Layer, parse_layer
from airmeter.outcome import classes_of, rate_errors
from airmeter.rollups import (
    HOUR_MS,
    HOURS_KEY_PREFIX,
    MINUTE_MS,
    REVISIONS_KEY_PREFIX,
    ROLLUPS_NAMESPACE,
    RollupRow,
    hour_namespace,
    merge_row_into,
    parse_minute_doc,
)
from airmeter.snapshot_types import LayerStats, SeriesPoint, ServerStats, Snapshot, ToolStats
from airmeter.stats import Acc
from airstore import to_epoch_ms  # the same bound rules as the store
from airstore.errors import InvalidArgumentError
from airstore.types import Store

__all__ = [
    "DEFAULT_MAX_BUCKETS",
    "RECHECK_S",
    "Bound",
    "BucketCache",
    "Revision",
    "RowGroup",
    "aggregate",
    "load_groups",
    "snapshot",
    "stored_hours",
    "stored_revisions",
    "to_ms",
    "unchanged",
]

DEFAULT_MAX_BUCKETS = 60

Bound = datetime | timedelta | int | float | None
"""A time bound: a ``datetime``, epoch milliseconds, or a ``timedelta`` meaning "that long ago"."""


def to_ms(bound: Bound, now_ms: int) -> int | None:
    """Epoch milliseconds of a bound (``timedelta`` counts back from ``now_ms``).

    Raises:
        MeterConfigError: the bound is of another type.
    """
    if isinstance(bound, timedelta):
        return now_ms - int(bound.total_seconds() * 1000)
    try:
        return to_epoch_ms(bound)
    except InvalidArgumentError as exc:
        raise MeterConfigError(
            f"time bound must be a datetime, timedelta or finite epoch ms: {bound!r}"
        ) from exc


def _floor(ms: int) -> int:
    return ms - ms % MINUTE_MS


def _ceil(ms: int) -> int:
    return -(-ms // MINUTE_MS) * MINUTE_MS


_NICE_MINUTES = (1, 2, 5, 10, 15, 30, 60, 120, 180, 360, 720, 1440)
_DAY_MS = 1440 * MINUTE_MS
_MAX_CACHED_BUCKETS = 8192

RowGroup = tuple[int, Sequence[RollupRow]]
"""One stored minute: its start (epoch ms) and its rollup rows."""


def _nice_widths() -> Iterator[int]:
    yield from (m * MINUTE_MS for m in _NICE_MINUTES)
    days = 2
    while True:
        yield days * _DAY_MS
        days *= 2


def _bucket_width(start: int, end: int, max_buckets: int) -> int:
    """The smallest "nice" width (1, 2, 5 … minutes, hours, days) giving at most
    ``max_buckets`` epoch-aligned buckets over ``[start, end)``."""
    for width in _nice_widths():
        first = start - start % width
        if -(-(end - first) // width) <= max_buckets:
            return width
    raise AssertionError("unreachable")  # pragma: no cover


def _merge(groups: Sequence[Sequence[RollupRow]], minute: int) -> list[RollupRow]:
    out: dict[tuple[str, str, str, int], RollupRow] = {}
    for rows in groups:
        for r in rows:
            merge_row_into(out, r, minute)
    return list(out.values())


class BucketCache:
    """Merged rows per time bucket, reused while the bucket's minute row lists are the same
    objects (a document cache hands out the same list while a minute is unchanged)."""

    def __init__(self) -> None:
        self._entries: dict[tuple[int, ...], tuple[list[Sequence[RollupRow]], list[RollupRow]]]
        self._entries = {}

    def merged(self, key: tuple[int, ...], groups: list[Sequence[RollupRow]]) -> list[RollupRow]:
        """The merged rows of one bucket."""
        hit = self._entries.get(key)
        if (
            hit is not None
            and len(hit[0]) == len(groups)
            and all(a is b for a, b in zip(hit[0], groups, strict=True))
        ):
            return hit[1]
        merged = _merge(groups, key[0])
        if len(self._entries) >= _MAX_CACHED_BUCKETS:
            self._entries.clear()
        self._entries[key] = (groups, merged)
        return merged


def aggregate(
    groups: Iterable[RowGroup],
    *,
    since_ms: int | None = None,
    until_ms: int | None = None,
    tool: str | None = None,
    layer: Layer | int | str | None = None,
    server: str | None = None,
    instance: str | None = None,
    bucket_ms: int | None = None,
    max_buckets: int = DEFAULT_MAX_BUCKETS,
    now_ms: int | None = None,
    cache: BucketCache | None = None,
) -> Snapshot:
    """Aggregate stored minutes into a :class:`Snapshot` (the pure core of every snapshot).

    Minutes are merged per epoch-aligned time bucket first (cached in ``cache``), so a
    repeated snapshot costs buckets x tools, not minutes x tools.

    Raises:
        MeterConfigError: a bad layer, bucket size or bound.
    """
    if max_buckets <= 0 or (bucket_ms is not None and bucket_ms <= 0):
        raise MeterConfigError("bucket_ms and max_buckets must be positive")
    try:
        want_layer = None if layer is None else int(parse_layer(layer))
    except ValueError as exc:
        raise MeterConfigError(str(exc)) from exc
    now = int(time.time() * 1000) if now_ms is None else now_ms
    lo = None if since_ms is None else _floor(since_ms)
    if lo is not None and until_ms is None:
        until_ms = now  # "since an hour ago" ends now; records stamped later do not count
    chosen = [
        (minute, rows)
        for minute, rows in groups
        if (lo is None or minute >= lo) and (until_ms is None or minute < until_ms)
    ]
    start = lo if lo is not None else min((m for m, _ in chosen), default=_floor(now))
    if until_ms is not None:
        end = _ceil(until_ms)
    else:
        end = max((m + MINUTE_MS for m, _ in chosen), default=start + MINUTE_MS)
    end = max(end, start + MINUTE_MS)
    width = bucket_ms if bucket_ms is not None else _bucket_width(start, end, max_buckets)
    first = start - start % width
    n_buckets = max(1, -(-(end - first) // width))
    per_bucket: list[list[Sequence[RollupRow]]] = [[] for _ in range(n_buckets)]
    for minute, rows in chosen:
        per_bucket[min(n_buckets - 1, (minute - first) // width)].append(rows)

    by_layer = [Acc() for _ in LAYERS]
    by_tool: dict[str, Acc] = {}
    tool_layers: dict[str, dict[int, int]] = {}
    by_server: dict[tuple[str, str], Acc] = {}
    series = [Acc() for _ in range(n_buckets)]
    series_layers: list[dict[str, int]] = [{} for _ in range(n_buckets)]
    for index, bucket_groups in enumerate(per_bucket):
        if not bucket_groups:
            continue
        b_start = first + index * width
        if cache is not None:
            key = (b_start, width, max(b_start, start), min(b_start + width, end))
            merged = cache.merged(key, bucket_groups)
        else:
            merged = _merge(bucket_groups, b_start)
        point = series[index]
        layers_here = series_layers[index]
        for r in merged:
            if (
                (tool is not None and r.tool != tool)
                or (want_layer is not None and r.layer != want_layer)
                or (server is not None and r.server != server)
                or (instance is not None and r.instance != instance)
            ):
                continue
            point.merge(r)
            by_layer[r.layer - 1].merge(r, histogram=False)
            acc = by_tool.get(r.tool)
            if acc is None:
                acc = by_tool[r.tool] = Acc()
                tool_layers[r.tool] = {}
            acc.merge(r)
            counts = tool_layers[r.tool]
            counts[r.layer] = counts.get(r.layer, 0) + r.calls
            skey = (r.server, r.instance)
            sacc = by_server.get(skey)
            if sacc is None:
                sacc = by_server[skey] = Acc()
            sacc.merge(r)
            code = f"L{r.layer}"
            layers_here[code] = layers_here.get(code, 0) + r.calls
    total = Acc()
    for point in series:
        total.merge(point)

    p50, p95, p99 = total.percentiles()
    layer_rows = {
        info.code: LayerStats(
            layer=info.code, name=info.name, weight=info.weight, calls=acc.calls,
            errors=acc.errors, share=acc.calls / total.calls if total.calls else 0.0,
            weighted_cost=float(acc.calls * info.weight), cost=acc.cost,
        )
        for info, acc in zip(LAYERS, by_layer, strict=True)
    }  # fmt: skip
    tool_rows = []
    for name, acc in by_tool.items():
        t50, t95, t99 = acc.percentiles()
        main_layer = max(tool_layers[name].items(), key=lambda kv: (kv[1], -kv[0]))[0]
        by_class = classes_of(acc.errors_by_type)
        tool_rows.append(
            ToolStats(
                tool=name, layer=f"L{main_layer}", calls=acc.calls, errors=acc.errors,
                error_rate=rate_errors(by_class) / acc.calls if acc.calls else 0.0,
                p50_ms=t50, p95_ms=t95, p99_ms=t99, mean_ms=acc.mean(), max_ms=acc.latency_max,
                cost=acc.cost, tokens_in=acc.tokens_in, tokens_out=acc.tokens_out,
                errors_by_type=dict(acc.errors_by_type), errors_by_class=by_class,
            )
        )  # fmt: skip
    tool_rows.sort(key=lambda t: (-t.calls, t.tool))
    server_rows = []
    for (srv, inst), acc in by_server.items():
        s50, s95, s99 = acc.percentiles()
        server_rows.append(
            ServerStats(
                server=srv, instance_id=inst, calls=acc.calls, errors=acc.errors,
                error_rate=(rate_errors(classes_of(acc.errors_by_type)) / acc.calls
                            if acc.calls else 0.0),
                p50_ms=s50, p95_ms=s95, p99_ms=s99, cost=acc.cost,
            )
        )  # fmt: skip
    server_rows.sort(key=lambda s: (-s.calls, s.server, s.instance_id))
    points = []
    for i, (acc, layer_counts) in enumerate(zip(series, series_layers, strict=True)):
        b50, b95, b99 = acc.percentiles()
        points.append(
            SeriesPoint(
                start_ms=first + i * width, calls=acc.calls, errors=acc.errors,
                layers=layer_counts, p50_ms=b50, p95_ms=b95, p99_ms=b99,
            )
        )  # fmt: skip
    minutes_covered = (end - start) / MINUTE_MS
    return Snapshot(
        since_ms=start, until_ms=end, bucket_ms=width, total_calls=total.calls,
        error_count=total.errors,
        success_rate=(total.calls - total.errors) / total.calls if total.calls else 1.0,
        calls_per_min=total.calls / minutes_covered if minutes_covered else 0.0,
        errors_by_type=dict(sorted(total.errors_by_type.items(), key=lambda kv: -kv[1])),
        p50_ms=p50, p95_ms=p95, p99_ms=p99, mean_ms=total.mean(), max_ms=total.latency_max,
        total_cost=total.cost, tokens_in=total.tokens_in, tokens_out=total.tokens_out,
        layers=layer_rows, tools=tuple(tool_rows), servers=tuple(server_rows),
        series=tuple(points), errors_by_class=classes_of(total.errors_by_type),
    )  # fmt: skip


class _DocCache:
    """Parsed minute documents of one store by hour, revalidated by identity or equality, and
    the merged time buckets built from them."""

    def __init__(self) -> None:
        self.hours: dict[int, dict[str, tuple[Any, list[RollupRow]]]] = {}
        self.marks: dict[int, tuple[Revision, float]] = {}  # hours read whole: revision, when
        self.buckets = BucketCache()

    def forget_except(self, stored: set[int]) -> None:
        """Drop the parsed documents of hours no longer stored (gone by retention)."""
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


_CACHES: weakref.WeakKeyDictionary[Any, _DocCache] = weakref.WeakKeyDictionary()


def _cache_of(store: Store) -> _DocCache:
    try:
        cache = _CACHES.get(store)
        if cache is None:
            cache = _CACHES[store] = _DocCache()
    except TypeError:  # a store that cannot be weakly referenced: no cache
        cache = _DocCache()
    return cache


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


_gc_pauses = 0  # reads running (in any task or thread) that keep the cyclic GC paused
_gc_lock = threading.Lock()


@contextmanager
def _gc_paused() -> Iterator[None]:
    """Keep the cyclic garbage collector off while rollups are read and parsed.

    A cold read builds millions of long-lived objects (the store's documents, the parsed rows);
    each full collection the allocations trigger walks all of them again (1.5 M rows over 30
    days: 20 full collections, 17 s of a 28 s report). Nothing read here is cyclic garbage, so
    the collector resumes when the last read running ends (if it was enabled when the first
    began); the objects then age into the old generation once instead of being walked at every
    threshold.
    """
    global _gc_pauses
    with _gc_lock:
        if _gc_pauses == 0 and not gc.isenabled():
            owner = False
        else:
            owner = True
            _gc_pauses += 1
            gc.disable()
    if not owner:  # someone else turned it off: leave it to them
        yield
        return
    try:
        yield
    finally:
        with _gc_lock:
            _gc_pauses -= 1
            if _gc_pauses == 0:
                gc.enable()


async def load_groups(
    store: Store, *, since_ms: int | None = None, until_ms: int | None = None
) -> list[RowGroup]:
    """The stored minutes overlapping ``[since_ms, until_ms)`` as ``(minute, rows)``.

    Reads only the hour namespaces of the window; parsed documents are cached per store, so
    a repeated snapshot parses only what changed, and an hour kept whole whose revision did not
    change (see :data:`RECHECK_S`) is not read at all (the hours being written always are: the
    current and previous hour by the wall clock, and the two newest stored). The cyclic garbage
    collector is paused meanwhile (see :func:`_gc_paused`).
    """
    with _gc_paused():
        return await _load_groups(store, since_ms=since_ms, until_ms=until_ms)


async def _load_groups(
    store: Store, *, since_ms: int | None, until_ms: int | None
) -> list[RowGroup]:
    lo = None if since_ms is None else _floor(since_ms)
    cache = _cache_of(store)
    revisions = await stored_revisions(store, from_hour=None if lo is None else lo // HOUR_MS)
    hours = list(revisions)
    cache.forget_except(set(hours))
    current = int(time.time() * 1000) // HOUR_MS
    always = {*hours[-2:], current - 1, current}  # being written
    now = time.monotonic()
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
            pairs = read = await store.entries(hour_namespace(hour))
            cache.marks.pop(hour, None)
        whole = True
        for key, doc in pairs:
            minute = int(key[:13]) if key[:13].isdigit() else -1
            if (lo is not None and minute < lo) or (until_ms is not None and minute >= until_ms):
                whole = False
                continue
            rows = cache.rows(hour, key, doc)
            if rows:
                out.append((minute, rows))
        if read is not None:
            _keep_in_store_order(cache, hour, read, whole, (revision, now))
    return out


def _keep_in_store_order(
    cache: _DocCache, hour: int, pairs: list[tuple[str, Any]], whole: bool,
    mark: tuple[Revision, float],
) -> None:  # fmt: skip
    """After a read: drop the minutes gone from the store, keep the rest in the store's order
    (a kept hour then gives its minutes as a read would), and mark the hour when read whole."""
    docs = cache.hours.get(hour)
    if docs is None:
        return
    if whole:
        if list(docs) != [key for key, _ in pairs]:
            cache.hours[hour] = {key: docs[key] for key, _ in pairs}
        cache.marks[hour] = mark
    elif len(docs) > len(pairs):  # minutes expired or were deleted
        present = {key for key, _ in pairs}
        for gone_key in [k for k in docs if k not in present]:
            del docs[gone_key]


async def snapshot(
    store: Store,
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
    """A :class:`Snapshot` of the calls recorded in ``store`` (read-only stores work).

    Args:
        store: any opened store holding rollups written by a :class:`~airmeter.StoreSink`.
        since: inclusive start (``datetime``, epoch ms, or ``timedelta`` ago); ``None``: all.
        until: exclusive end; ``None``: now when ``since`` is given, else no end.
        tool: only this tool.
        layer: only this layer (``2``, ``"L2"``, ``Layer.L2``).
        server: only this server name.
        instance: only this server instance id.
        bucket_ms: width of a time-series bucket; by default chosen for ``max_buckets``.
        max_buckets: the most buckets the automatic width produces.

    Returns:
        The frozen :class:`Snapshot`.

    Raises:
        MeterConfigError: a bad bound, layer or bucket size.
        airstore.AirstoreError: the store cannot be read.
    """
    now_ms = int(time.time() * 1000)
    since_ms, until_ms = to_ms(since, now_ms), to_ms(until, now_ms)
    groups = await load_groups(store, since_ms=since_ms, until_ms=until_ms)
    return aggregate(
        groups, since_ms=since_ms, until_ms=until_ms, tool=tool, layer=layer, server=server,
        instance=instance, bucket_ms=bucket_ms, max_buckets=max_buckets, now_ms=now_ms,
        cache=_cache_of(store).buckets,
    )  # fmt: skip
