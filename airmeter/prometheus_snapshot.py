"""A :class:`~airmeter.Snapshot` as Prometheus text (format 0.0.4), for
``air meter report --format prometheus`` and for scraping a process that holds only a store.

Same names as :class:`~airmeter.PrometheusSink` where the meaning is the same (calls and
errors); latency comes as a ``summary`` of the snapshot's percentiles, since the rollups keep
percentiles, not the advised buckets::

    air_mcp_calls_total{tool,layer,ok}                  counter
    air_mcp_errors_total{tool,error_type,error_class}   counter
    air_mcp_tool_duration_seconds{tool,quantile}        summary (0.5, 0.95, 0.99)
    air_mcp_layer_calls_total{layer}                    counter
    air_mcp_layer_cost_total{layer}                     counter (calls x layer weight)
    air_mcp_cost_total                                  counter
    air_mcp_success_ratio                               gauge
"""

from __future__ import annotations

from airmeter.outcome import error_class_of
from airmeter.prometheus import CALLS, ERRORS, escape_label_value, format_value
from airmeter.snapshot_types import Snapshot

__all__ = ["render_snapshot"]

_QUANTILES = (("0.5", "p50_ms"), ("0.95", "p95_ms"), ("0.99", "p99_ms"))


class _Text:
    def __init__(self) -> None:
        self.lines: list[str] = []

    def family(self, name: str, kind: str, help_text: str) -> None:
        self.lines += [f"# HELP {name} {help_text}", f"# TYPE {name} {kind}"]

    def sample(self, name: str, value: float, **labels: str) -> None:
        inner = ",".join(f'{k}="{escape_label_value(v)}"' for k, v in labels.items())
        label_text = "{" + inner + "}" if inner else ""
        self.lines.append(f"{name}{label_text} {format_value(value)}")


def render_snapshot(snapshot: Snapshot) -> str:
    """Render a snapshot as exposition text.

    Args:
        snapshot: From :func:`airmeter.snapshot` or :meth:`airmeter.Meter.snapshot`; with
            ``since=None`` its counts are cumulative, as Prometheus counters expect.

    Returns:
        Text ending with a newline; tools sorted by name.
    """
    out = _Text()
    tools = sorted(snapshot.tools, key=lambda t: t.tool)
    out.family(CALLS, "counter", "MCP tool calls by tool, cost layer and outcome.")
    for t in tools:
        if t.calls > t.errors:  # like the sink: only series that were observed
            out.sample(CALLS, t.calls - t.errors, tool=t.tool, layer=t.layer.code, ok="true")
        if t.errors:
            out.sample(CALLS, t.errors, tool=t.tool, layer=t.layer.code, ok="false")
    out.family(ERRORS, "counter", "Failed MCP tool calls by tool, error type and error class.")
    for t in tools:
        for error_type, n in sorted(t.errors_by_type.items()):
            out.sample(ERRORS, n, tool=t.tool, error_type=error_type,
                       error_class=error_class_of(error_type))  # fmt: skip
    duration = "air_mcp_tool_duration_seconds"
    out.family(duration, "summary", "Latency percentiles of MCP tool calls, in seconds.")
    for t in tools:
        for quantile, field in _QUANTILES:
            ms = getattr(t, field)
            if ms is not None:
                out.sample(duration, ms / 1000.0, tool=t.tool, quantile=quantile)
        mean_ms = t.mean_ms if t.mean_ms is not None else 0.0
        out.sample(f"{duration}_sum", mean_ms * t.calls / 1000.0, tool=t.tool)
        out.sample(f"{duration}_count", t.calls, tool=t.tool)
    layers = sorted(snapshot.layers.items())
    out.family("air_mcp_layer_calls_total", "counter", "MCP tool calls by cost layer.")
    for layer, stats in layers:
        out.sample("air_mcp_layer_calls_total", stats.calls, layer=layer.code)
    out.family("air_mcp_layer_cost_total", "counter", "Calls times the layer's cost weight.")
    for layer, stats in layers:
        out.sample("air_mcp_layer_cost_total", float(stats.weighted_cost), layer=layer.code)
    out.family("air_mcp_cost_total", "counter", "Total cost of the calls in the window.")
    out.sample("air_mcp_cost_total", float(snapshot.total_cost))
    out.family("air_mcp_success_ratio", "gauge", "Share of calls that succeeded (0..1).")
    out.sample("air_mcp_success_ratio", float(snapshot.success_rate))
    return "\n".join(out.lines) + "\n"
