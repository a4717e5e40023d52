"""Dash callbacks: read the controls, ask the reader, hand the results to figures/present."""

from __future__ import annotations

from typing import Any

from dash import Dash, Input, Output, State, ctx, html, no_update

from airmeter import Layer, parse_layer
from dashboard import figures, present
from dashboard.clients_panel import CLIENT_OUTPUTS, client_values
from dashboard.errors import DashboardError, StoreUnavailableError
from dashboard.machine_panels import MACHINE_OUTPUTS, machine_values
from dashboard.meter_panels import PANEL_OUTPUTS, panel_values
from dashboard.ranges import CUSTOM, parse_instant
from dashboard.reader import SyncReader
from dashboard.servers import parse_server_choice
from dashboard.types import DashboardView, Filters

__all__ = ["PAGE_OUTPUTS", "page_values", "problem_values", "register_callbacks"]

_SHOW: dict[str, str] = {}
_HIDE = {"display": "none"}
_KPI_KEYS = ("calls", "rate", "errors", "p50", "p95", "p99", "cost")
_RANGE_INPUTS = [
    Input("range", "value"),
    Input("custom-start", "value"),
    Input("custom-end", "value"),
    Input("filter-tool", "value"),
    Input("filter-layer", "value"),
    Input("filter-server", "value"),
    Input("filter-client", "value"),
]


def _query_args(
    range_key: str,
    start: str | None,
    end: str | None,
    tool: Any,
    layer: Any,
    server: Any,
    client: Any = None,
) -> tuple[dict[str, Any], Filters]:
    """Translate control values into reader arguments; raises DashboardError on bad input."""
    kwargs: dict[str, Any] = {}
    if range_key == CUSTOM:
        if not start:
            raise DashboardError("pick a start time for the custom range")
        kwargs["start_ms"] = parse_instant(start)
        kwargs["end_ms"] = parse_instant(end) if end else None
    parsed: Layer | None = parse_layer(layer) if layer else None
    name, instance = parse_server_choice(server or None)
    chosen = client if isinstance(client, str) and client else None
    return kwargs, Filters(
        tool=tool or None, layer=parsed, server=name, instance=instance, client=chosen
    )


def _banner(exc: DashboardError) -> list[Any]:
    hint = exc.hint if isinstance(exc, StoreUnavailableError) else ""
    return [exc.message, f" — {hint}" if hint else ""]


# What one refresh updates, by name (Dash's flexible callback signature: a dict of outputs,
# answered with a dict of values).
PAGE_OUTPUTS: dict[str, Output] = {
    **{f"kpi_{k}": Output(f"kpi-{k}", "children") for k in _KPI_KEYS},
    "calls_figure": Output("graph-calls", "figure"),
    "latency_figure": Output("graph-latency", "figure"),
    "layers_figure": Output("graph-layers", "figure"),
    "tools": Output("tools-table", "data"),
    "errors": Output("errors-table", "data"),
    "error_tooltips": Output("errors-table", "tooltip_data"),
    "error_summary": Output("error-summary", "children"),
    "tool_options": Output("filter-tool", "options"),
    "server_options": Output("filter-server", "options"),
    "empty_style": Output("empty-state", "style"),
    "content_style": Output("content", "style"),
    "banner": Output("banner", "children"),
    "banner_style": Output("banner", "style"),
    "updated": Output("updated", "children"),
    "range_shown": Output("range-shown", "children"),
    "alerts": Output("alerts", "children"),
    **{name: Output(cid, prop) for name, (cid, prop) in PANEL_OUTPUTS.items()},
    **{name: Output(cid, prop) for name, (cid, prop) in MACHINE_OUTPUTS.items()},
    **{name: Output(cid, prop) for name, (cid, prop) in CLIENT_OUTPUTS.items()},
}


def page_values(
    view: DashboardView, sent: str | None = None, fitted: str | None = None
) -> dict[str, Any]:
    """Every output of :data:`PAGE_OUTPUTS` for a view that was read (``sent``: the stamp of
    the meter panels the page already shows; see :func:`dashboard.meter_panels.panel_values`;
    ``fitted``: the range the page opened on because it holds the data)."""
    texts = present.kpis(view.snapshot)
    errors = present.error_rows(view)
    empty = view.store_empty
    return {
        **{f"kpi_{k}": texts[k] for k in _KPI_KEYS},
        "calls_figure": figures.calls_figure(view),
        "latency_figure": figures.latency_figure(view),
        "layers_figure": figures.layers_figure(view),
        "tools": present.tool_rows(view),
        "errors": errors,
        "error_tooltips": [{"message": {"value": r["message"], "type": "text"}} for r in errors],
        "error_summary": present.error_summary(view),
        "tool_options": [{"label": t, "value": t} for t in view.tool_names],
        "server_options": [{"label": c.label, "value": c.value} for c in view.server_choices],
        "empty_style": _SHOW if empty else _HIDE,
        "content_style": _HIDE if empty else _SHOW,
        "banner": "",
        "banner_style": _HIDE,
        "updated": f"updated {present.fmt_time(view.generated_at_ms)[11:]}",
        "range_shown": present.range_shown(view.range, fitted=view.range.key == fitted),
        "alerts": [
            html.Span(a.text, className=f"alert alert-{a.kind}", title=a.text) for a in view.alerts
        ],
        **panel_values(view, sent),
        **machine_values(view),
        **client_values(view),
    }


def problem_values(exc: DashboardError) -> dict[str, Any]:
    """The outputs when the view could not be read: the banner says why; the numbers on the
    page stay as they were, and an unreadable store hides them."""
    values: dict[str, Any] = dict.fromkeys(PAGE_OUTPUTS, no_update)
    values.update(
        empty_style=_HIDE,
        content_style=_HIDE if isinstance(exc, StoreUnavailableError) else _SHOW,
        banner=_banner(exc),
        banner_style=_SHOW,
    )
    return values


def register_callbacks(app: Dash, reader: SyncReader) -> None:
    """Wire the page's controls to ``reader``."""

    @app.callback(
        output=PAGE_OUTPUTS,
        inputs=[Input("tick", "n_intervals"), *_RANGE_INPUTS],
        state=[State("panels-stamp", "data"), State("fitted-range", "data")],
    )
    def refresh(
        _n: int,
        range_key: str,
        start: str | None,
        end: str | None,
        tool: Any,
        layer: Any,
        server: Any,
        client: Any,
        sent: str | None,
        fitted: str | None,
    ) -> dict[str, Any]:
        try:
            kwargs, flt = _query_args(range_key, start, end, tool, layer, server, client)
            view = reader.view(range_key, flt, **kwargs)
        except DashboardError as exc:
            return problem_values(exc)
        return page_values(view, sent, fitted)

    @app.callback(
        Output("tick", "disabled"),
        Output("live-toggle", "children"),
        Output("live-toggle", "className"),
        Input("live-toggle", "n_clicks"),
    )
    def toggle_live(n_clicks: int) -> tuple[bool, str, str]:
        paused = bool(n_clicks) and n_clicks % 2 == 1
        if paused:
            return True, "❚❚ Paused", "live-btn off"
        return False, "● Live", "live-btn on"

    @app.callback(Output("custom-range", "style"), Input("range", "value"))
    def show_custom(range_key: str) -> dict[str, str]:
        return _SHOW if range_key == CUSTOM else _HIDE

    @app.callback(
        Output("selected-tool", "data"),
        Output("tools-table", "active_cell"),
        Output("errors-table", "active_cell"),
        Input("tools-table", "active_cell"),
        Input("errors-table", "active_cell"),
        Input("detail-close", "n_clicks"),
        State("errors-table", "data"),
        prevent_initial_call=True,
    )
    def select_tool(
        tool_cell: dict[str, Any] | None,
        error_cell: dict[str, Any] | None,
        _close: int,
        error_data: list[dict[str, Any]] | None,
    ) -> tuple[Any, None, None]:
        # The clicked cell is cleared at once, so clicking the same row again reopens it.
        trigger = ctx.triggered_id
        if trigger == "tools-table" and tool_cell:
            return tool_cell.get("row_id"), None, None
        if trigger == "errors-table" and error_cell and error_data:
            row_id = error_cell.get("row_id")
            tool = next((row["tool"] for row in error_data if row["id"] == row_id), no_update)
            return tool, None, None
        if trigger == "detail-close":
            return None, None, None
        return no_update, None, None

    @app.callback(
        Output("detail", "style"),
        Output("detail-title", "children"),
        Output("graph-histogram", "figure"),
        Output("calls-table", "data"),
        [Input("selected-tool", "data"), Input("tick", "n_intervals"), *_RANGE_INPUTS],
    )
    def show_detail(
        tool: str | None, _n: int, range_key: str, start: str | None, end: str | None, *rest: Any
    ) -> tuple[Any, ...]:
        if not tool:
            return _HIDE, no_update, no_update, no_update
        try:
            kwargs, flt = _query_args(range_key, start, end, *rest)
            detail = reader.tool_detail(tool, range_key, flt, **kwargs)
        except DashboardError:
            return no_update, no_update, no_update, no_update
        layer = detail.latest[0].layer if detail.latest else None
        title = [
            f"{tool} — latency of its latest {present.fmt_count(detail.calls)} calls",
            f" ({layer.code} {layer.info.name})" if layer else "",
        ]
        return (
            _SHOW,
            title,
            figures.histogram_figure(detail, layer),
            present.call_rows(detail),
        )
