"""Aggregates computed from raw call-log entries.

Used only while airmeter's snapshot queries are not available; ``dashboard.data`` switches to
``airmeter.snapshot`` when it can import it.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from airmeter import Layer, parse_layer
from dashboard.types import Headline, LayerSlice, TimeBucket, TimeRange, ToolRow

__all__ = ["UNIT_PRICE", "Aggregates", "aggregate", "percentile"]

UNIT_PRICE = 0.0001
"""Estimated cost of one weight unit (an L1 call) when a call reports no cost of its own."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Aggregates:
    """The aggregate parts of a view: headline, series, layers, per-tool rows."""

    headline: Headline
    series: tuple[TimeBucket, ...]
    layers: tuple[LayerSlice, ...]
    tools: tuple[ToolRow, ...]


def percentile(sorted_values: Sequence[float], q: float) -> float | None:
    """The ``q``-th percentile (0-100) of already sorted values, linear interpolation."""
    if not sorted_values:
        return None
    pos = (len(sorted_values) - 1) * q / 100
    lo = math.floor(pos)
    hi = min(lo + 1, len(sorted_values) - 1)
    frac = pos - lo
    return sorted_values[lo] + (sorted_values[hi] - sorted_values[lo]) * frac


def _pcts(values: list[float]) -> tuple[float | None, float | None, float | None]:
    values.sort()
    return percentile(values, 50), percentile(values, 95), percentile(values, 99)


def call_cost(entry: dict[str, Any], layer: Layer) -> float:
    """The call's reported cost, else its layer weight times :data:`UNIT_PRICE`."""
    cost = entry.get("cost")
    if isinstance(cost, int | float) and not isinstance(cost, bool):
        return float(cost)
    return layer.weight * UNIT_PRICE


def aggregate(entries: Iterable[dict[str, Any]], rng: TimeRange) -> Aggregates:
    """Compute every aggregate of a view from raw log entries already limited to ``rng``."""
    first_bucket = rng.since_ms // rng.bucket_ms * rng.bucket_ms
    n_buckets = max(1, -(-(rng.until_ms - first_bucket) // rng.bucket_ms))
    b_calls = [[0] * 7 for _ in range(n_buckets)]
    b_errors = [0] * n_buckets
    b_lat: list[list[float]] = [[] for _ in range(n_buckets)]
    layer_calls = [0] * 7
    tools: dict[str, dict[str, Any]] = {}
    all_lat: list[float] = []
    errors = 0
    cost = 0.0
    for entry in entries:
        layer = parse_layer(entry.get("layer", 4))
        latency = float(entry.get("latency_ms", 0.0))
        ok = bool(entry.get("ok", True))
        c = call_cost(entry, layer)
        idx = min(n_buckets - 1, max(0, (int(entry["_ts"]) - first_bucket) // rng.bucket_ms))
        b_calls[idx][layer - 1] += 1
        b_lat[idx].append(latency)
        layer_calls[layer - 1] += 1
        all_lat.append(latency)
        cost += c
        row = tools.get(entry["tool"])
        if row is None:
            row = tools[entry["tool"]] = {
                "layer": layer,
                "calls": 0,
                "errors": 0,
                "lat": [],
                "c": 0.0,
            }
        row["calls"] += 1
        row["lat"].append(latency)
        row["c"] += c
        if not ok:
            errors += 1
            b_errors[idx] += 1
            row["errors"] += 1
    calls = len(all_lat)
    p50, p95, p99 = _pcts(all_lat)
    headline = Headline(
        calls=calls,
        calls_per_min=calls / rng.minutes if rng.minutes > 0 else 0.0,
        errors=errors,
        error_rate=errors / calls if calls else 0.0,
        p50_ms=p50,
        p95_ms=p95,
        p99_ms=p99,
        cost=cost,
    )
    series = tuple(
        TimeBucket(
            start_ms=first_bucket + i * rng.bucket_ms,
            calls_by_layer=tuple(b_calls[i]),
            errors=b_errors[i],
            **dict(zip(("p50_ms", "p95_ms", "p99_ms"), _pcts(b_lat[i]), strict=True)),
        )
        for i in range(n_buckets)
    )
    layers = tuple(
        LayerSlice(layer=Layer(i + 1), calls=n, weighted_cost=n * Layer(i + 1).weight)
        for i, n in enumerate(layer_calls)
    )
    rows = []
    for name, row in tools.items():
        t50, t95, t99 = _pcts(row["lat"])
        rows.append(
            ToolRow(
                tool=name,
                layer=row["layer"],
                calls=row["calls"],
                errors=row["errors"],
                error_rate=row["errors"] / row["calls"],
                p50_ms=t50,
                p95_ms=t95,
                p99_ms=t99,
                cost=row["c"],
            )
        )
    rows.sort(key=lambda r: (-r.calls, r.tool))
    return Aggregates(headline=headline, series=series, layers=layers, tools=tuple(rows))
