"""Turn view models into the strings and table rows the page shows (no Dash import)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from airmeter import Snapshot
from airmeter.tokens import ESTIMATE
from dashboard.ranges import RANGES
from dashboard.types import DashboardView, TimeRange, ToolDetail

__all__ = [
    "call_rows",
    "counted_how",
    "error_label",
    "error_rows",
    "error_summary",
    "fmt_cost",
    "fmt_count",
    "fmt_ms",
    "fmt_pct",
    "fmt_rate",
    "fmt_time",
    "kpis",
    "range_shown",
    "tool_rows",
]


def fmt_count(value: int) -> str:
    """``12,345``."""
    return f"{value:,}"


def fmt_rate(value: float) -> str:
    """Calls per minute: ``1,234`` or ``4.5``."""
    return f"{value:,.0f}" if value >= 100 else f"{value:,.1f}"


def fmt_pct(value: float) -> str:
    """A 0..1 ratio as a percentage: ``2.35%``."""
    return f"{value * 100:.2f}%"


def fmt_ms(value: float | None) -> str:
    """A latency: ``0.42 ms``, ``12.3 ms``, ``1.25 s``; ``—`` when unknown."""
    if value is None:
        return "—"
    if value >= 1000:
        return f"{value / 1000:.2f} s"
    if value >= 10:
        return f"{value:.1f} ms"
    return f"{value:.2f} ms"


def fmt_cost(value: float) -> str:
    """An estimated cost in cost units (an L1 call = 1): ``12,340`` or ``3.25``."""
    return f"{value:,.0f}" if value >= 100 else f"{value:,.2f}"


def fmt_time(ts_ms: int) -> str:
    """A call's local time: ``2026-11-30 14:05:07``."""
    return datetime.fromtimestamp(ts_ms / 1000).strftime("%Y-%m-%d %H:%M:%S")


_JSONRPC_ERRORS = {
    "-32700": "parse error",
    "-32600": "invalid request",
    "-32601": "method not found",
    "-32602": "invalid params",
    "-32603": "internal error",
}

_METER_ERRORS = {
    "cancelled": "cancelled",
    "budget_exceeded": "budget exceeded",
}
"""The meter's own error types: a call the client cancelled, a call refused by a budget."""


def error_label(error_type: str) -> str:
    """A recorded error type as people read it: ``invalid params (-32602)``, ``RuntimeError``.

    The meter records a JSON-RPC error's code (``"-32602"``: refused arguments, or a handler's
    ``AirError(-32602, ...)``), ``cancelled`` for a call the client cancelled before it
    finished, ``budget_exceeded`` for a call a budget refused, an exception's class name
    otherwise.
    """
    if error_type in _METER_ERRORS:
        return _METER_ERRORS[error_type]
    name = _JSONRPC_ERRORS.get(error_type)
    return f"{name} ({error_type})" if name else error_type


def error_summary(view: DashboardView) -> str:
    """``97 failed calls in this range: invalid params (-32602) 80 · RuntimeError 15``."""
    total = sum(n for _, n in view.errors_by_type)
    if not total:
        return "no failed calls in this range"
    parts = " · ".join(f"{error_label(t)} {fmt_count(n)}" for t, n in view.errors_by_type)
    noun = "failed call" if total == 1 else "failed calls"
    return f"{fmt_count(total)} {noun} in this range: {parts}"


def range_shown(rng: TimeRange, *, fitted: bool = False) -> str:
    """Which range the page shows: ``Showing the last 6 hours (11-30 08:05 → 14:05)``, with
    ``— the smallest range that holds the data`` when the page opened on it for that reason."""
    start = fmt_time(rng.since_ms)[5:16]
    end = fmt_time(rng.until_ms - 1)[5:16]
    if end[:5] == start[:5]:
        end = end[6:]  # the same day: the time is enough
    preset = RANGES.get(rng.key)
    what = f"the last {preset[0]}" if preset else "a custom range"
    text = f"Showing {what} ({start} → {end})"
    return f"{text} — the smallest range that holds the data" if fitted else text


def counted_how(*, exact: bool, tokenizer: str) -> str:
    """How context tokens were counted, said once: ``counted with o200k_base``, ``an estimate
    (about 4 bytes a token)``, or ``partly an estimate (also o200k_base)`` for a mix (the
    estimate's own name, ``estimate``, is not repeated)."""
    if exact:
        return f"counted with {tokenizer}"
    others = [n for n in tokenizer.split(", ") if n and n not in (ESTIMATE, "none")]
    if others:
        return f"partly an estimate (also {', '.join(others)})"
    return "an estimate (about 4 bytes a token)"


def kpis(snap: Snapshot) -> dict[str, str]:
    """The headline cards' texts, keyed by card id (latencies ``-`` without calls)."""
    return {
        "calls": fmt_count(snap.total_calls),
        "rate": fmt_rate(snap.calls_per_min),
        "errors": fmt_pct(snap.error_rate),
        "p50": fmt_ms(snap.p50_ms),
        "p95": fmt_ms(snap.p95_ms),
        "p99": fmt_ms(snap.p99_ms),
        "cost": fmt_cost(snap.total_cost),
    }


def _num(value: float | None) -> float | None:
    return None if value is None else round(value, 2)


def tool_rows(view: DashboardView) -> list[dict[str, Any]]:
    """Rows of the per-tool table (numbers stay numbers so sorting is numeric): the tool's
    own errors and their rate, apart from the calls refused (or cancelled, budget-blocked,
    protocol errors) that the rate does not count."""
    return [
        {
            "id": row.tool,
            "tool": row.tool,
            "layer": row.layer.code,
            "calls": row.calls,
            "tool_errors": row.tool_errors,
            "error_pct": round(row.error_rate * 100, 2),
            "refused": row.errors - row.tool_errors,
            "p50": _num(row.p50_ms),
            "p95": _num(row.p95_ms),
            "p99": _num(row.p99_ms),
            "cost": round(row.cost, 2),
        }
        for row in view.snapshot.tools
    ]


def error_rows(view: DashboardView) -> list[dict[str, Any]]:
    """Rows of the recent-errors table, newest first."""
    return [
        {
            "id": f"{i}",
            "time": fmt_time(e.ts_ms),
            "tool": e.tool,
            "layer": e.layer.code,
            "error_class": e.error_class,
            "error_type": error_label(e.error_type),
            "message": e.message,
            "request_id": e.request_id,
        }
        for i, e in enumerate(view.recent_errors)
    ]


def call_rows(detail: ToolDetail) -> list[dict[str, Any]]:
    """Rows of a tool's latest-calls table."""
    return [
        {
            "id": f"{i}",
            "time": fmt_time(c.ts_ms),
            "latency": fmt_ms(c.latency_ms),
            "status": "ok" if c.ok else "error",
            "error_type": error_label(c.error_type) if c.error_type else "",
            "request_id": c.request_id,
        }
        for i, c in enumerate(detail.latest)
    ]
