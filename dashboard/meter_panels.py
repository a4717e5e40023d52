"""The panels of what the meter knows beyond the calls: SLOs, error classes, context cost.

Layout builders (:func:`slo_card`, :func:`context_card`, :func:`error_classes`) and the values
one refresh sends (:func:`panel_values`). The SLO rows are plain HTML: a budget bar is a
``div`` whose width is the budget left, a sparkline a small inline SVG image (no chart library
per row), so the payload stays a few hundred bytes a row.
"""

from __future__ import annotations

from typing import Any, Final

from dash import dcc, html, no_update
from dash.dash_table.DataTable import DataTable

from airmeter import RATE_CLASSES
from dashboard.meter_watch import IN_CODE
from dashboard.present import counted_how, fmt_count
from dashboard.types import ContextPanel, DashboardView, SloPanel, SloRow

__all__ = [
    "CLASS_LABELS",
    "PANEL_OUTPUTS",
    "context_card",
    "error_classes",
    "errors_note",
    "panel_values",
    "panels_stamp",
    "slo_card",
    "sparkline_svg",
]

CLASS_LABELS: dict[str, str] = {
    "tool_error": "tool error (isError)",
    "exception": "exception",
    "timeout": "timeout",
    "refused": "refused arguments",
    "protocol": "protocol error",
    "cancelled": "cancelled",
    "budget": "budget blocked",
}
"""How each of airmeter's error classes reads on the page."""

PANEL_OUTPUTS: dict[str, tuple[str, str]] = {
    "slo": ("slo-body", "children"),
    "slo_note": ("slo-note", "children"),
    "error_classes": ("error-classes", "children"),
    "context": ("context-table", "data"),
    "context_note": ("context-note", "children"),
    "panels_stamp": ("panels-stamp", "data"),
    "errors_note": ("kpi-errors-note", "children"),
}
"""The outputs these panels add to a refresh: name → (component id, property)."""

_SPARK_W, _SPARK_H = 120, 28
_GRID = "#cbd5e1"
_URI_ESCAPES: Final = str.maketrans({"%": "%25", "#": "%23", "<": "%3C", ">": "%3E", "/": "%2F"})
_CELL: Final = {"fontFamily": "inherit", "fontSize": "13px", "padding": "6px 10px",
                "border": "none", "borderBottom": "1px solid #eef2f7", "textAlign": "left",
                "backgroundColor": "transparent"}  # fmt: skip
_HEADER: Final = {"fontWeight": "600", "fontSize": "11px", "color": "#64748b",
                  "textTransform": "uppercase", "backgroundColor": "#f8fafc"}  # fmt: skip
_STATE_COLOURS = {"ok": "#10b981", "warning": "#f59e0b", "exhausted": "#be123c",
                  "breach": "#e11d48"}  # fmt: skip


def slo_card() -> html.Div:
    """The SLO panel's frame; its rows come with each refresh."""
    return html.Div(
        id="slo-panel",
        className="card",
        children=[
            html.Div("Service level objectives", className="card-title"),
            html.Div(id="slo-note", className="slo-note"),
            html.Div(id="slo-body", className="slo-body"),
            dcc.Store(id="panels-stamp", data=None),
        ],
    )


def context_card() -> html.Div:
    """The context-cost panel's frame: a note and a table."""
    count = {"specifier": ","}
    fixed = {"specifier": ",.1f"}
    cols: list[Any] = [
        {"name": "server/tool", "id": "tool"},
        {"name": "definition tokens", "id": "definition", "type": "numeric", "format": count},
        {"name": "result p50", "id": "p50", "type": "numeric", "format": fixed},
        {"name": "result p95", "id": "p95", "type": "numeric", "format": fixed},
        {"name": "result tokens", "id": "total", "type": "numeric", "format": count},
        {"name": "results counted", "id": "counted", "type": "numeric", "format": count},
    ]
    return html.Div(
        id="context-panel",
        className="card",
        children=[
            html.Div(
                "Context cost — tokens tools add to a model's context", className="card-title"
            ),
            html.Div(id="context-note", className="context-note"),
            DataTable(
                id="context-table",
                columns=cols,
                data=[],
                page_size=10,
                sort_action="native",
                style_as_list_view=True,
                style_cell=_CELL,
                style_header=_HEADER,
            ),
        ],
    )


def errors_note(view: DashboardView) -> str:
    """Under the failed-calls card: the share a tool's error rate counts (``tool_error``,
    ``exception``, ``timeout``) and the share that is not the tools' doing (``other``:
    refused, protocol, cancelled, budget)."""
    calls = view.snapshot.total_calls
    if not calls or not view.errors_by_class:
        return ""
    own = sum(n for c, n in view.errors_by_class if c in RATE_CLASSES)
    apart = sum(n for c, n in view.errors_by_class if c not in RATE_CLASSES)
    return f"tool errors {own / calls * 100:.2f}% · other {apart / calls * 100:.2f}%"


def error_classes(view: DashboardView) -> list[Any]:
    """One chip per error class with failures in the range; those a tool's error rate counts
    first, the others (refused, protocol, cancelled, budget) marked as not counted."""
    if not view.errors_by_class:
        return []
    chips: list[Any] = []
    for cls, n in view.errors_by_class:
        counted = cls in RATE_CLASSES
        chips.append(
            html.Span(
                className=f"class-chip class-{cls}" + ("" if counted else " apart"),
                title="counted in the error rate" if counted else "not the tool's failure: "
                "kept apart from the error rate",
                children=[html.B(fmt_count(n)), f" {CLASS_LABELS.get(cls, cls)}"],
            )
        )  # fmt: skip
    return chips


def sparkline_svg(values: tuple[float, ...], *, colour: str) -> str:
    """A ``data:`` URI of a small SVG line of ``values`` (scaled so 1.0, the burn rate that
    spends the budget exactly over the period, is a dashed line); a few hundred bytes."""
    top = max(1.5, *values) if values else 1.5
    n = len(values)

    def y(v: float) -> int:
        return round(_SPARK_H - 2 - (_SPARK_H - 4) * min(v, top) / top)

    points = " ".join(
        f"{round(i * (_SPARK_W - 2) / max(1, n - 1) + 1)},{y(v)}" for i, v in enumerate(values)
    )
    one = y(1.0)
    svg = (
        f"<svg xmlns='http://www.w3.org/2000/svg' width='{_SPARK_W}' height='{_SPARK_H}'>"
        f"<path d='M0 {one}H{_SPARK_W}' stroke='{_GRID}' stroke-dasharray='3'/>"
        f"<polyline fill='none' stroke='{colour}' stroke-width='1.6' points='{points}'/></svg>"
    )
    # percent-encoded where Dash's JSON would spend six bytes (\u003c) or the URI needs it
    return "data:image/svg+xml," + svg.translate(_URI_ESCAPES)


def _budget_text(left: float) -> str:
    if left < 0:
        return f"overspent {-left * 100:.0f}%"
    return f"{left * 100:.1f}% left"


def _slo_row(row: SloRow) -> html.Div:
    colour = _STATE_COLOURS.get(row.state, "#64748b")
    width = max(0.0, min(1.0, row.budget_remaining)) * 100
    b5, b30, b60, b360 = row.burn_rates
    peak = max(row.history, default=0.0)
    return html.Div(
        className=f"slo-row slo-{row.state}",
        children=[
            html.Div(className="slo-name", children=[
                html.Div(f"{row.server}/{row.tool}", className="slo-tool"),
                html.Div(f"{row.objective} over {row.period} · {fmt_count(row.bad_calls)} bad "
                         f"of {fmt_count(row.valid_calls)}", className="slo-objective"),
            ]),
            html.Div(className="slo-budget", title="error budget left over the period", children=[
                html.Div(className="slo-bar", children=html.Div(
                    className="slo-fill", style={"width": f"{width:.1f}%", "background": colour})),
                html.Div(_budget_text(row.budget_remaining), className="slo-budget-text"),
            ]),
            html.Img(className="slo-spark", src=sparkline_svg(row.history, colour=colour),
                     title=f"1 h burn rate over the last 6 h: now {b60:.1f}x, peak {peak:.1f}x "
                     "(dashed: 1x spends the budget exactly over the period)"),
            html.Div(f"burn 5m {b5:.1f}x · 30m {b30:.1f}x · 1h {b60:.1f}x · 6h {b360:.1f}x",
                     className="slo-burns"),
            html.Span(row.state, className=f"slo-state slo-state-{row.state}"),
        ],
    )  # fmt: skip


def _slo_values(panel: SloPanel | None) -> tuple[Any, Any]:
    if panel is None:
        return [], ""
    if panel.status != "ready":
        return [], html.Span(panel.message, className=f"slo-{panel.status}")
    source = "objectives given to the dashboard" if panel.config == IN_CODE else (
        f"objectives from {panel.config}"
    )  # fmt: skip
    if not panel.rows:
        return [], f"{source}: no calls match them yet"
    note = f"{source}, evaluated as `air meter slo` does"
    if panel.more:
        note += f" (the {len(panel.rows)} worst shown; {panel.more} more)"
    return [_slo_row(r) for r in panel.rows], note


def _context_values(panel: ContextPanel | None) -> tuple[list[dict[str, Any]], str]:
    if panel is None:
        return [], "reading the context cost …"
    if not panel.rows:
        return [], (
            "no context data yet: a metered server records its tools' definition tokens when "
            "it starts, and each result's tokens as calls are recorded"
        )
    how = counted_how(exact=panel.exact, tokenizer=panel.tokenizer)
    if not panel.exact:
        how += "; install the tokens extra for exact counts"
    note = (
        f"{fmt_count(panel.definition_tokens_total)} tokens of tool definitions in tools/list; "
        f"results in the {panel.range_key} range; {how}"
    )
    if panel.more:
        note += f"; the {len(panel.rows)} largest shown ({panel.more} more)"
    rows = [
        {
            "id": f"{r.server}/{r.tool}",
            "tool": f"{r.server}/{r.tool}",
            "definition": r.definition_tokens,
            "p50": r.result_tokens_p50,
            "p95": r.result_tokens_p95,
            "total": r.result_tokens_total,
            "counted": r.results_counted,
        }
        for r in panel.rows
    ]
    return rows, note


def panels_stamp(view: DashboardView) -> str:
    """Names what the SLO and context panels show: the same stamp, nothing new to send."""
    slo, ctx = view.slo, view.context
    return (f"{slo.status}:{slo.evaluated_at_ms}:{slo.config}" if slo is not None else "-") + (
        f"|{ctx.range_key}:{ctx.computed_at_ms}" if ctx is not None else "|-"
    )


def panel_values(view: DashboardView, sent: str | None = None) -> dict[str, Any]:
    """Every output of :data:`PANEL_OUTPUTS` for a view; the SLO and context panels only when
    they changed since the page got ``sent`` (their stamp), else ``no_update``: they are
    evaluated every few refreshes, and the SLO rows are the largest part of a refresh."""
    stamp = panels_stamp(view)
    values: dict[str, Any] = {
        "error_classes": error_classes(view),
        "panels_stamp": stamp,
        "errors_note": errors_note(view),
    }
    if stamp == sent:
        return {**values, **dict.fromkeys(("slo", "slo_note", "context", "context_note"),
                                           no_update)}  # fmt: skip
    slo, slo_note = _slo_values(view.slo)
    context, context_note = _context_values(view.context)
    return {**values, "slo": slo, "slo_note": slo_note, "context": context,
            "context_note": context_note}  # fmt: skip
