"""Turn view models into the strings and table rows the page shows (no Dash import)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from dashboard.types import DashboardView, Headline, ToolDetail

__all__ = [
    "call_rows",
    "error_rows",
    "fmt_cost",
    "fmt_count",
    "fmt_ms",
    "fmt_pct",
    "fmt_rate",
    "fmt_time",
    "kpis",
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


def kpis(h: Headline) -> dict[str, str]:
    """The headline cards' texts, keyed by card id."""
    return {
        "calls": fmt_count(h.calls),
        "rate": fmt_rate(h.calls_per_min),
        "errors": fmt_pct(h.error_rate),
        "p50": fmt_ms(h.p50_ms),
        "p95": fmt_ms(h.p95_ms),
        "p99": fmt_ms(h.p99_ms),
        "cost": fmt_cost(h.cost),
    }


def _num(value: float | None) -> float | None:
    return None if value is None else round(value, 2)


def tool_rows(view: DashboardView) -> list[dict[str, Any]]:
    """Rows of the per-tool table (numbers stay numbers so sorting is numeric)."""
    return [
        {
            "id": row.tool,
            "tool": row.tool,
            "layer": row.layer.code,
            "calls": row.calls,
            "errors": row.errors,
            "error_pct": round(row.error_rate * 100, 2),
            "p50": _num(row.p50_ms),
            "p95": _num(row.p95_ms),
            "p99": _num(row.p99_ms),
            "cost": round(row.cost, 2),
        }
        for row in view.tools
    ]


def error_rows(view: DashboardView) -> list[dict[str, Any]]:
    """Rows of the recent-errors table, newest first."""
    return [
        {
            "id": f"{i}",
            "time": fmt_time(e.ts_ms),
            "tool": e.tool,
            "layer": e.layer.code,
            "error_type": e.error_type,
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
            "error_type": c.error_type,
            "request_id": c.request_id,
        }
        for i, c in enumerate(detail.latest)
    ]
