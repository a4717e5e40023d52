"""The frozen result types of a snapshot and their JSON form.

A layer is a :class:`~airmeter.Layer` here, end to end (``Snapshot.layers`` and
``SeriesPoint.layers`` are keyed by it, rows carry it); the JSON form spells it ``"L1"`` …
``"L7"``. The dashboard presents these types directly.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

import orjson

from airmeter.layers import Layer
from airmeter.outcome import RATE_CLASSES

__all__ = ["LayerStats", "SeriesPoint", "ServerStats", "Snapshot", "ToolStats"]


@dataclass(frozen=True, slots=True, kw_only=True)
class LayerStats:
    """Calls of one layer: ``weighted_cost`` is calls x the layer's weight."""

    layer: Layer
    name: str
    weight: int
    calls: int
    errors: int
    share: float
    weighted_cost: float
    cost: float


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolStats:
    """One tool's row; ``layer`` is the layer most of its calls had.

    ``errors`` counts every failed call; ``error_rate`` only the tool's own failures
    (classes ``tool_error``, ``exception``, ``timeout``) over all calls, so refused, cancelled,
    budget and protocol failures show apart, in ``errors_by_class``.
    """

    tool: str
    layer: Layer
    calls: int
    errors: int
    error_rate: float
    p50_ms: float | None
    p95_ms: float | None
    p99_ms: float | None
    mean_ms: float | None
    max_ms: float
    cost: float
    tokens_in: int
    tokens_out: int
    errors_by_type: Mapping[str, int]
    errors_by_class: Mapping[str, int] = field(default_factory=dict)

    @property
    def tool_errors(self) -> int:
        """The tool's own failures (the classes ``error_rate`` counts); ``errors`` minus
        these were refused before the handler, cancelled, budget-blocked or protocol errors."""
        return sum(n for c, n in self.errors_by_class.items() if c in RATE_CLASSES)


@dataclass(frozen=True, slots=True, kw_only=True)
class ServerStats:
    """One server instance's row (``instance_id`` is ``""`` when records carried none);
    ``error_rate`` counts the classes a tool's error rate counts."""

    server: str
    instance_id: str
    calls: int
    errors: int
    error_rate: float
    p50_ms: float | None
    p95_ms: float | None
    p99_ms: float | None
    cost: float


@dataclass(frozen=True, slots=True, kw_only=True)
class SeriesPoint:
    """One time bucket: calls per layer (layers without calls are left out) and latency
    percentiles."""

    start_ms: int
    calls: int
    errors: int
    layers: Mapping[Layer, int]
    p50_ms: float | None
    p95_ms: float | None
    p99_ms: float | None


@dataclass(frozen=True, slots=True, kw_only=True)
class Snapshot:
    """Everything a report or a dashboard shows for one window and filter.

    ``success_rate`` is 1.0 for an empty window; latencies are ``None`` then. ``cost`` sums the
    cost each record carried, or the layer weight for records without one. ``errors_by_class``
    groups the failed calls by class (see :mod:`airmeter.outcome`).
    """

    since_ms: int
    until_ms: int
    bucket_ms: int
    total_calls: int
    error_count: int
    success_rate: float
    calls_per_min: float
    errors_by_type: Mapping[str, int]
    p50_ms: float | None
    p95_ms: float | None
    p99_ms: float | None
    mean_ms: float | None
    max_ms: float
    total_cost: float
    tokens_in: int
    tokens_out: int
    layers: Mapping[Layer, LayerStats]
    tools: tuple[ToolStats, ...]
    servers: tuple[ServerStats, ...]
    series: tuple[SeriesPoint, ...]
    errors_by_class: Mapping[str, int] = field(default_factory=dict)

    @property
    def error_rate(self) -> float:
        """``1 - success_rate``."""
        return 1.0 - self.success_rate

    def tool(self, name: str) -> ToolStats | None:
        """The row of one tool, or ``None``."""
        return next((t for t in self.tools if t.tool == name), None)

    def to_dict(self) -> dict[str, Any]:
        """A plain JSON-ready dict: top-level ``total_calls``, ``error_count``,
        ``success_rate``, ``p50_ms``/``p95_ms``/``p99_ms``, ``layers`` (keyed ``"L1"``…),
        ``tools`` (a list, busiest first), ``servers`` and ``series``."""
        data = asdict(self)
        data["error_rate"] = self.error_rate
        data["layers"] = {layer.code: _coded(row) for layer, row in data["layers"].items()}
        data["tools"] = [_coded(row) for row in data["tools"]]
        for point in data["series"]:
            point["layers"] = {layer.code: n for layer, n in point["layers"].items()}
        return data

    def to_json(self) -> str:
        """:meth:`to_dict` serialized as a JSON string."""
        return orjson.dumps(self.to_dict()).decode()


def _coded(row: dict[str, Any]) -> dict[str, Any]:
    """A row's dict with its layer spelled ``"L2"`` (the JSON form)."""
    row["layer"] = Layer(row["layer"]).code
    return row
