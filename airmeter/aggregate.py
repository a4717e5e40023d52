"""The pure core of every snapshot: stored minutes in, a frozen :class:`Snapshot` out.

No I/O and no clock read unless ``now_ms`` is left out. Minutes are merged per epoch-aligned
time bucket first (optionally cached, see :class:`~airmeter.buckets.BucketCache`), so a
repeated snapshot costs buckets x tools, not minutes x tools; the rows that pass the filters
are then summed per layer, tool, server instance and bucket.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from airmeter.buckets import (
    DEFAULT_MAX_BUCKETS,
    BucketCache,
    RowGroup,
    bucket_width,
    ceil_minute,
    floor_minute,
    merge_bucket,
)
from airmeter.errors import MeterConfigError
from airmeter.layers import LAYERS, Layer, parse_layer
from airmeter.outcome import classes_of, rate_errors
from airmeter.rollups import MINUTE_MS, RollupRow
from airmeter.snapshot_types import LayerStats, SeriesPoint, ServerStats, Snapshot, ToolStats
from airmeter.stats import Acc

__all__ = ["RowFilter", "aggregate"]


@dataclass(frozen=True, slots=True, kw_only=True)
class RowFilter:
    """Equality filters on rollup rows; ``None`` keeps every value."""

    tool: str | None = None
    layer: Layer | None = None
    server: str | None = None
    instance: str | None = None

    def keeps(self, r: RollupRow) -> bool:
        """Whether row ``r`` passes every filter."""
        return (
            (self.tool is None or r.tool == self.tool)
            and (self.layer is None or r.layer == self.layer)
            and (self.server is None or r.server == self.server)
            and (self.instance is None or r.instance == self.instance)
        )


_ALL = RowFilter()
_BY_LEVEL = dict(enumerate(Layer, start=1))  # a stored row's level -> its Layer, without a call


@dataclass(frozen=True, slots=True)
class _Window:
    """The covered span ``[start, end)`` cut into ``count`` buckets of ``width`` from
    ``first`` (epoch-aligned, so ``first <= start``)."""

    start: int
    end: int
    width: int
    first: int
    count: int

    def bucket_of(self, minute: int) -> int:
        return min(self.count - 1, (minute - self.first) // self.width)


def _window(
    chosen: Sequence[RowGroup], lo: int | None, until_ms: int | None, now: int,
    bucket_ms: int | None, max_buckets: int,
) -> _Window:  # fmt: skip
    start = lo if lo is not None else min((m for m, _ in chosen), default=floor_minute(now))
    if until_ms is not None:
        end = ceil_minute(until_ms)
    else:
        end = max((m + MINUTE_MS for m, _ in chosen), default=start + MINUTE_MS)
    end = max(end, start + MINUTE_MS)
    width = bucket_ms if bucket_ms is not None else bucket_width(start, end, max_buckets)
    first = start - start % width
    return _Window(start, end, width, first, max(1, -(-(end - first) // width)))


class _Sums:
    """Running sums of the rows that passed the filters: per layer, tool, server instance
    and bucket."""

    def __init__(self, buckets: int) -> None:
        self.by_layer = [Acc() for _ in LAYERS]
        self.by_tool: dict[str, Acc] = {}
        self.tool_layers: dict[str, dict[int, int]] = {}
        self.by_server: dict[tuple[str, str], Acc] = {}
        self.series = [Acc() for _ in range(buckets)]
        self.series_layers: list[dict[int, int]] = [{} for _ in range(buckets)]

    def add_bucket(self, index: int, merged: Iterable[RollupRow], only: RowFilter) -> None:
        """Sum one bucket's merged rows."""
        point = self.series[index]
        layers_here = self.series_layers[index]
        by_layer, by_tool, by_server = self.by_layer, self.by_tool, self.by_server
        keeps = None if only == _ALL else only.keeps
        for r in merged:
            if keeps is not None and not keeps(r):
                continue
            point.merge(r)
            by_layer[r.layer - 1].merge(r, histogram=False)
            acc = by_tool.get(r.tool)
            if acc is None:
                acc = by_tool[r.tool] = Acc()
                self.tool_layers[r.tool] = {}
            acc.merge(r)
            counts = self.tool_layers[r.tool]
            counts[r.layer] = counts.get(r.layer, 0) + r.calls
            sacc = by_server.get((r.server, r.instance))
            if sacc is None:
                sacc = by_server[(r.server, r.instance)] = Acc()
            sacc.merge(r)
            layers_here[r.layer] = layers_here.get(r.layer, 0) + r.calls


def _layer_rows(sums: _Sums, total: Acc) -> dict[Layer, LayerStats]:
    return {
        layer: LayerStats(
            layer=layer, name=info.name, weight=info.weight, calls=acc.calls,
            errors=acc.errors, share=acc.calls / total.calls if total.calls else 0.0,
            weighted_cost=float(acc.calls * info.weight), cost=acc.cost,
        )
        for layer, info, acc in zip(Layer, LAYERS, sums.by_layer, strict=True)
    }  # fmt: skip


def _tool_rows(sums: _Sums) -> tuple[ToolStats, ...]:
    rows = []
    for name, acc in sums.by_tool.items():
        t50, t95, t99 = acc.percentiles()
        main_layer = max(sums.tool_layers[name].items(), key=lambda kv: (kv[1], -kv[0]))[0]
        by_class = classes_of(acc.errors_by_type)
        rows.append(
            ToolStats(
                tool=name, layer=_BY_LEVEL[main_layer], calls=acc.calls, errors=acc.errors,
                error_rate=rate_errors(by_class) / acc.calls if acc.calls else 0.0,
                p50_ms=t50, p95_ms=t95, p99_ms=t99, mean_ms=acc.mean(), max_ms=acc.latency_max,
                cost=acc.cost, tokens_in=acc.tokens_in, tokens_out=acc.tokens_out,
                errors_by_type=dict(acc.errors_by_type), errors_by_class=by_class,
            )
        )  # fmt: skip
    rows.sort(key=lambda t: (-t.calls, t.tool))
    return tuple(rows)


def _server_rows(sums: _Sums) -> tuple[ServerStats, ...]:
    rows = []
    for (srv, inst), acc in sums.by_server.items():
        s50, s95, s99 = acc.percentiles()
        rows.append(
            ServerStats(
                server=srv, instance_id=inst, calls=acc.calls, errors=acc.errors,
                error_rate=(rate_errors(classes_of(acc.errors_by_type)) / acc.calls
                            if acc.calls else 0.0),
                p50_ms=s50, p95_ms=s95, p99_ms=s99, cost=acc.cost,
            )
        )  # fmt: skip
    rows.sort(key=lambda s: (-s.calls, s.server, s.instance_id))
    return tuple(rows)


def _series(sums: _Sums, window: _Window) -> tuple[SeriesPoint, ...]:
    points = []
    for i, (acc, layer_counts) in enumerate(zip(sums.series, sums.series_layers, strict=True)):
        b50, b95, b99 = acc.percentiles()
        points.append(
            SeriesPoint(
                start_ms=window.first + i * window.width, calls=acc.calls, errors=acc.errors,
                layers={_BY_LEVEL[level]: n for level, n in sorted(layer_counts.items())},
                p50_ms=b50, p95_ms=b95, p99_ms=b99,
            )
        )  # fmt: skip
    return tuple(points)


def _snapshot_of(sums: _Sums, window: _Window) -> Snapshot:
    total = Acc()
    for point in sums.series:
        total.merge(point)
    p50, p95, p99 = total.percentiles()
    minutes_covered = (window.end - window.start) / MINUTE_MS
    return Snapshot(
        since_ms=window.start, until_ms=window.end, bucket_ms=window.width,
        total_calls=total.calls, error_count=total.errors,
        success_rate=(total.calls - total.errors) / total.calls if total.calls else 1.0,
        calls_per_min=total.calls / minutes_covered if minutes_covered else 0.0,
        errors_by_type=dict(sorted(total.errors_by_type.items(), key=lambda kv: -kv[1])),
        p50_ms=p50, p95_ms=p95, p99_ms=p99, mean_ms=total.mean(), max_ms=total.latency_max,
        total_cost=total.cost, tokens_in=total.tokens_in, tokens_out=total.tokens_out,
        layers=_layer_rows(sums, total), tools=_tool_rows(sums), servers=_server_rows(sums),
        series=_series(sums, window), errors_by_class=classes_of(total.errors_by_type),
    )  # fmt: skip


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
    """Aggregate stored minutes into a :class:`Snapshot`.

    Args:
        groups: the stored minutes as ``(minute, rows)``; those outside the window are skipped.
        since_ms: inclusive start (floored to its minute); ``None``: the oldest minute given.
        until_ms: exclusive end; ``None``: ``now_ms`` when ``since_ms`` is given, else no end.
        tool, layer, server, instance: keep only rows with these values.
        bucket_ms: width of a time-series bucket; by default chosen for ``max_buckets``.
        max_buckets: the most buckets the automatic width produces.
        now_ms: the current time (epoch ms); ``None``: the wall clock.
        cache: merged buckets kept from earlier calls (see :class:`BucketCache`).

    Raises:
        MeterConfigError: a bad layer, bucket size or bound.
    """
    if max_buckets <= 0 or (bucket_ms is not None and bucket_ms <= 0):
        raise MeterConfigError("bucket_ms and max_buckets must be positive")
    try:
        want_layer = None if layer is None else parse_layer(layer)
    except ValueError as exc:
        raise MeterConfigError(str(exc)) from exc
    only = RowFilter(tool=tool, layer=want_layer, server=server, instance=instance)
    now = int(time.time() * 1000) if now_ms is None else now_ms
    lo = None if since_ms is None else floor_minute(since_ms)
    if lo is not None and until_ms is None:
        until_ms = now  # "since an hour ago" ends now; records stamped later do not count
    chosen = [
        (minute, rows)
        for minute, rows in groups
        if (lo is None or minute >= lo) and (until_ms is None or minute < until_ms)
    ]
    window = _window(chosen, lo, until_ms, now, bucket_ms, max_buckets)
    per_bucket: list[list[Sequence[RollupRow]]] = [[] for _ in range(window.count)]
    for minute, rows in chosen:
        per_bucket[window.bucket_of(minute)].append(rows)
    sums = _Sums(window.count)
    for index, bucket_groups in enumerate(per_bucket):
        if not bucket_groups:
            continue
        b_start = window.first + index * window.width
        if cache is not None:
            key = (b_start, window.width, max(b_start, window.start),
                   min(b_start + window.width, window.end))  # fmt: skip
            merged = cache.merged(key, bucket_groups)
        else:
            merged = merge_bucket(bucket_groups, b_start)
        sums.add_bucket(index, merged, only)
    return _snapshot_of(sums, window)
