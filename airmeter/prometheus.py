"""Prometheus text exposition (format 0.0.4) of the calls a meter sees.

:class:`PrometheusSink` is a :class:`~airmeter.Sink` that keeps cumulative counters and
duration histograms in memory (cost per record is O(log buckets); memory grows with the
number of distinct tools, not calls) and renders them as text for a ``/metrics`` scrape.

Families rendered (``tool``/``layer``/``ok``/``error_type`` labels)::

    air_mcp_calls_total{tool,layer,ok}                      counter
    air_mcp_errors_total{tool,error_type,error_class}       counter
    mcp_server_operation_duration_seconds{tool,layer}       histogram, advised buckets
"""

from __future__ import annotations

import itertools
import math
from bisect import bisect_left
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Final

from airmeter.errors import MeterConfigError
from airmeter.outcome import error_class_of
from airmeter.record import CallRecord
from airmeter.semconv import DURATION_BUCKETS_S

__all__ = ["CONTENT_TYPE", "PrometheusSink", "escape_label_value", "format_value"]

CONTENT_TYPE: Final = "text/plain; version=0.0.4; charset=utf-8"
"""The ``Content-Type`` of the text exposition format."""

CALLS: Final = "air_mcp_calls_total"
ERRORS: Final = "air_mcp_errors_total"
DURATION: Final = "mcp_server_operation_duration_seconds"


def escape_label_value(value: str) -> str:
    """Escape a label value: backslash, double quote and line feed."""
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def format_value(value: float) -> str:
    """A sample value as the format wants it (``+Inf``, ``-Inf``, ``NaN``, shortest float)."""
    if isinstance(value, int):
        return str(value)
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    return repr(value)


def _labels(pairs: Iterable[tuple[str, str]]) -> str:
    inner = ",".join(f'{name}="{escape_label_value(value)}"' for name, value in pairs)
    return "{" + inner + "}"


@dataclass(slots=True)
class _Histogram:
    counts: list[int]
    total: float = 0.0
    count: int = 0


@dataclass(slots=True)
class _State:
    calls: dict[tuple[str, str, str], int] = field(default_factory=dict)
    errors: dict[tuple[str, str, str], int] = field(default_factory=dict)
    durations: dict[tuple[str, str], _Histogram] = field(default_factory=dict)


class PrometheusSink:
    """Cumulative counters and histograms of call records, rendered on demand."""

    def __init__(self, *, buckets: Sequence[float] = DURATION_BUCKETS_S) -> None:
        """Create an empty aggregator.

        Args:
            buckets: Upper bounds of the duration histogram, in seconds, strictly increasing.

        Raises:
            MeterConfigError: ``buckets`` is empty, not increasing, or not finite.
        """
        bounds = tuple(float(b) for b in buckets)
        if not bounds or any(not math.isfinite(b) for b in bounds):
            raise MeterConfigError("buckets must be a non-empty sequence of finite numbers")
        if any(a >= b for a, b in itertools.pairwise(bounds)):
            raise MeterConfigError(f"buckets must be strictly increasing, got {bounds!r}")
        self._bounds = bounds
        self._state = _State()

    @property
    def buckets(self) -> tuple[float, ...]:
        """The histogram's upper bounds in seconds (``+Inf`` is implied)."""
        return self._bounds

    def observe(self, record: CallRecord) -> None:
        """Count one call (synchronous, O(log buckets))."""
        state = self._state
        layer = record.layer.code
        key = (record.tool, layer, "true" if record.ok else "false")
        state.calls[key] = state.calls.get(key, 0) + 1
        if not record.ok:
            etype = record.error_type or "unknown"
            eclass = record.error_class or error_class_of(record.error_type)
            error_key = (record.tool, etype, eclass)
            state.errors[error_key] = state.errors.get(error_key, 0) + 1
        seconds = record.latency_ms / 1000.0
        hist = state.durations.get((record.tool, layer))
        if hist is None:
            hist = state.durations[(record.tool, layer)] = _Histogram([0] * (len(self._bounds) + 1))
        hist.counts[bisect_left(self._bounds, seconds)] += 1
        hist.total += seconds
        hist.count += 1

    async def write(self, records: Sequence[CallRecord]) -> None:
        """Count a batch (the :class:`~airmeter.Sink` side)."""
        for record in records:
            self.observe(record)

    async def close(self) -> None:
        """Nothing to release: the counts stay readable. Idempotent."""

    def render(self) -> str:
        """The whole exposition text, families in a fixed order, series sorted.

        Returns:
            Text ending with a newline; empty families still have their HELP/TYPE lines.
        """
        state = self._state
        lines = [
            f"# HELP {CALLS} MCP tool calls by tool, cost layer and outcome.",
            f"# TYPE {CALLS} counter",
        ]
        for (tool, layer, ok), n in sorted(state.calls.items()):
            lines.append(f"{CALLS}{_labels((('tool', tool), ('layer', layer), ('ok', ok)))} {n}")
        lines += [
            f"# HELP {ERRORS} Failed MCP tool calls by tool, error type and error class.",
            f"# TYPE {ERRORS} counter",
        ]
        for (tool, error, eclass), n in sorted(state.errors.items()):
            labels = _labels((("tool", tool), ("error_type", error), ("error_class", eclass)))
            lines.append(f"{ERRORS}{labels} {n}")
        lines += [
            f"# HELP {DURATION} Duration of MCP tool calls handled by the server, in seconds.",
            f"# TYPE {DURATION} histogram",
        ]
        for (tool, layer), hist in sorted(state.durations.items()):
            base = (("tool", tool), ("layer", layer))
            cumulative = 0
            for bound, n in zip((*self._bounds, math.inf), hist.counts, strict=True):
                cumulative += n
                le = format_value(bound)
                lines.append(f"{DURATION}_bucket{_labels((*base, ('le', le)))} {cumulative}")
            lines.append(f"{DURATION}_sum{_labels(base)} {format_value(hist.total)}")
            lines.append(f"{DURATION}_count{_labels(base)} {hist.count}")
        return "\n".join(lines) + "\n"
