"""The Dash app: layout only. Data comes from :mod:`dashboard.data`, behaviour from callbacks."""

from __future__ import annotations

import os
from typing import Any

from dash import Dash, dcc, html
from dash.dash_table.DataTable import DataTable

from airmeter import Layer
from dashboard.clients_panel import client_filter, clients_card
from dashboard.data import RECENT_ERRORS
from dashboard.errors import DashboardError
from dashboard.figures import LAYER_COLOURS, warm_up
from dashboard.machine_panels import gateway_card, machine_card
from dashboard.meter_panels import context_card, slo_card
from dashboard.ranges import AUTO, CUSTOM, DEFAULT_RANGE, RANGES
from dashboard.reader import SyncReader

__all__ = ["DEFAULT_REFRESH_MS", "create_app"]

DEFAULT_REFRESH_MS = 3000
"""Live refresh interval of the page."""

DEFAULT_FALLBACK = "1h"
"""The range a page fitting the data opens on when the store cannot be read."""

_ASSETS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "assets")

_KPIS = (
    ("calls", "Calls"),
    ("rate", "Calls / min"),
    ("errors", "Failed calls"),
    ("p50", "p50 latency"),
    ("p95", "p95 latency"),
    ("p99", "p99 latency"),
    ("cost", "Cost (units)"),
)

COST_NOTE = "reported by the tool, else layer weight × unit price"
ERRORS_NOTE = (
    "tool errors: isError results, exceptions and timeouts (a tool's error rate); other: "
    "arguments refused before the handler, protocol errors, cancelled and budget-blocked calls"
)
"""What the failed-calls card's note splits (shown on hover)."""
TOOL_COLUMN_NOTES: dict[str | float | int, Any] = {
    "tool_errors": "the tool's own failures: isError results, exceptions and timeouts",
    "error_pct": "tool errors over all calls (refused calls are not counted)",
    "refused": "failed before the tool ran or without it failing: arguments refused before "
    "the handler, protocol errors, cancelled and budget-blocked calls",
}
"""The tools table's headers, explained on hover: the two error columns count apart."""
"""What the cost figures mean (the meter's definition); shown under the cost card and in hovers."""

_TABLE_STYLE: dict[str, Any] = {
    "style_as_list_view": True,
    "style_table": {"overflowX": "auto"},
    "style_cell": {
        "fontFamily": "inherit",
        "fontSize": "13px",
        "padding": "7px 10px",
        "border": "none",
        "borderBottom": "1px solid #eef2f7",
        "textAlign": "left",
        "backgroundColor": "transparent",
        "color": "#1e293b",
        "maxWidth": "420px",
        "overflow": "hidden",
        "textOverflow": "ellipsis",
    },
    "style_header": {
        "fontWeight": "600",
        "fontSize": "11px",
        "textTransform": "uppercase",
        "letterSpacing": "0.04em",
        "color": "#64748b",
        "backgroundColor": "#f8fafc",
        "borderBottom": "1px solid #e2e8f0",
    },
}


def _errors_note() -> html.Div:
    return html.Div(id="kpi-errors-note", className="kpi-note", title=ERRORS_NOTE)


def _layer_cells() -> list[dict[str, Any]]:
    """Layer codes in their layer's colour; a clicked cell gets a quiet highlight."""
    highlight = [
        {"if": {"state": state}, "backgroundColor": "#eef2ff", "border": "none"}
        for state in ("active", "selected")
    ]
    return highlight + [
        {
            "if": {"filter_query": f'{{layer}} = "{layer.code}"', "column_id": "layer"},
            "color": LAYER_COLOURS[layer],
            "fontWeight": "700",
        }
        for layer in Layer
    ]


def _graph(graph_id: str) -> dcc.Graph:
    return dcc.Graph(id=graph_id, config={"displayModeBar": False})


def _card(title: str, body: Any, *, extra: str = "") -> html.Div:
    return html.Div(
        className=f"card {extra}".strip(),
        children=[html.Div(title, className="card-title"), body],
    )


def _legend() -> html.Div:
    return html.Div(
        className="legend",
        children=[
            html.Span(
                className="chip",
                title=layer.info.description,
                children=[
                    html.Span(className="dot", style={"background": LAYER_COLOURS[layer]}),
                    f"{layer.code} {layer.info.name}",
                ],
            )
            for layer in Layer
        ],
    )


def _header(store_url: str) -> html.Header:
    return html.Header(
        className="topbar",
        children=[
            html.Div(
                className="brand",
                children=[
                    html.Span("air", className="logo"),
                    html.Div(
                        [
                            html.Div("MCP tool calls", className="brand-title"),
                            html.Div(store_url, id="store-url", className="brand-sub"),
                        ]
                    ),
                ],
            ),
            html.Div(id="alerts", className="alerts"),
            html.Div(
                className="live",
                children=[
                    html.Span(id="updated", className="updated"),
                    html.Button("● Live", id="live-toggle", className="live-btn on", n_clicks=0),
                ],
            ),
        ],
    )


def _controls(initial_range: str, *, fitted: bool) -> html.Div:
    ranges = [{"label": label, "value": key} for key, (label, _, _) in RANGES.items()]
    return html.Div(
        className="controls",
        children=[
            dcc.Store(id="fitted-range", data=initial_range if fitted else None),
            dcc.RadioItems(
                id="range",
                options=[*ranges, {"label": "custom", "value": CUSTOM}],
                value=initial_range,
                className="segmented",
                inline=True,
            ),
            html.Div(
                id="custom-range",
                className="custom-range",
                style={"display": "none"},
                children=[
                    dcc.Input(
                        id="custom-start",
                        type="text",
                        debounce=True,
                        placeholder="2026-11-30 14:00",
                    ),
                    html.Span("→"),
                    dcc.Input(id="custom-end", type="text", debounce=True, placeholder="now"),
                ],
            ),
            html.Div(id="range-shown", className="range-shown"),
            html.Div(
                className="filters",
                children=[
                    dcc.Dropdown(id="filter-tool", placeholder="All tools", className="filter"),
                    dcc.Dropdown(
                        id="filter-layer",
                        placeholder="All layers",
                        className="filter",
                        options=[
                            {"label": f"{layer.code} {layer.info.name}", "value": layer.code}
                            for layer in Layer
                        ],
                    ),
                    dcc.Dropdown(id="filter-server", placeholder="All servers", className="filter"),
                    client_filter(),
                ],
            ),
        ],
    )


def _empty_state(store_url: str) -> html.Div:
    """How to fill *this* store: both suggestions name the URL the dashboard reads."""
    return html.Div(
        id="empty-state",
        className="empty",
        style={"display": "none"},
        children=[
            html.Div("No calls recorded yet", className="empty-title"),
            html.P(["This store (", html.Code(store_url), ") has no metered tool calls yet."]),
            html.Ul(
                [
                    html.Li(
                        [
                            "See the dashboard in action: ",
                            html.Code(f"air demo --store {store_url}"),
                            " runs a demo server with sample traffic;",
                        ]
                    ),
                    html.Li(
                        [
                            "or meter your own server into the same store: ",
                            html.Code(f'define_server(..., meter=True, storage="{store_url}")'),
                        ]
                    ),
                ]
            ),
            html.P("This page refreshes on its own; calls show up as soon as they are recorded."),
        ],
    )


def _detail() -> html.Div:
    return html.Div(
        id="detail",
        className="card detail",
        style={"display": "none"},
        children=[
            html.Div(
                className="detail-head",
                children=[
                    html.Div(id="detail-title", className="card-title"),
                    html.Button("×", id="detail-close", className="close-btn", n_clicks=0),
                ],
            ),
            html.Div(
                className="grid two",
                children=[
                    _graph("graph-histogram"),
                    DataTable(
                        id="calls-table",
                        columns=[
                            {"name": n, "id": i}
                            for n, i in (
                                ("time", "time"),
                                ("latency", "latency"),
                                ("status", "status"),
                                ("error", "error_type"),
                                ("request id", "request_id"),
                            )
                        ],
                        data=[],
                        page_size=10,
                        style_data_conditional=[
                            {"if": {"filter_query": '{status} = "error"'}, "color": "#e11d48"}
                        ],
                        **_TABLE_STYLE,
                    ),
                ],
            ),
        ],
    )


def _tables() -> tuple[html.Div, html.Div]:
    count = {"specifier": ","}  # d3-format: 12,345
    fixed = {"specifier": ",.2f"}  # 1,234.50
    tool_cols: list[Any] = [
        {"name": "tool", "id": "tool"},
        {"name": "layer", "id": "layer"},
        {"name": "calls", "id": "calls", "type": "numeric", "format": count},
        {"name": "tool errors", "id": "tool_errors", "type": "numeric", "format": count},
        {"name": "tool error %", "id": "error_pct", "type": "numeric", "format": fixed},
        {"name": "refused", "id": "refused", "type": "numeric", "format": count},
        {"name": "p50 ms", "id": "p50", "type": "numeric", "format": fixed},
        {"name": "p95 ms", "id": "p95", "type": "numeric", "format": fixed},
        {"name": "p99 ms", "id": "p99", "type": "numeric", "format": fixed},
        {"name": "cost (units)", "id": "cost", "type": "numeric", "format": fixed},
    ]
    error_cols: list[Any] = [
        {"name": n, "id": i}
        for n, i in (
            ("time", "time"),
            ("tool", "tool"),
            ("layer", "layer"),
            ("class", "error_class"),
            ("error", "error_type"),
            ("message", "message"),
            ("request id", "request_id"),
        )
    ]
    return (
        _card(
            "Tools — click a row for details",
            DataTable(
                id="tools-table",
                columns=tool_cols,
                data=[],
                sort_action="native",
                sort_by=[{"column_id": "calls", "direction": "desc"}],
                tooltip_header=TOOL_COLUMN_NOTES,
                page_size=15,
                style_data_conditional=[
                    *_layer_cells(),
                    {"if": {"column_id": "tool"}, "fontWeight": "600", "cursor": "pointer"},
                ],
                **_TABLE_STYLE,
            ),
        ),
        _card(
            f"Recent errors — the newest {RECENT_ERRORS} in the range; click a row for its tool",
            html.Div(
                [
                    html.Div(id="error-summary", className="error-summary"),
                    html.Div(id="error-classes", className="error-classes"),
                    _errors_table(error_cols),
                ]
            ),
        ),
    )


def _errors_table(error_cols: list[Any]) -> DataTable:
    return DataTable(
        id="errors-table",
        columns=error_cols,
        data=[],
        page_size=10,
        tooltip_data=[],
        tooltip_duration=None,
        style_data_conditional=[
            *_layer_cells(),
            {"if": {"column_id": "error_type"}, "color": "#e11d48"},
        ],
        **_TABLE_STYLE,
    )


def _content() -> html.Div:
    tools, errors = _tables()
    return html.Div(
        id="content",
        children=[
            html.Div(
                className="kpis",
                children=[
                    html.Div(
                        className="kpi",
                        title=COST_NOTE if key == "cost" else None,
                        children=[
                            html.Div(label, className="kpi-label"),
                            html.Div("—", id=f"kpi-{key}", className="kpi-value"),
                            *([html.Div(COST_NOTE, className="kpi-note")] if key == "cost" else []),
                            *([_errors_note()] if key == "errors" else []),
                        ],
                    )
                    for key, label in _KPIS
                ],
            ),
            _detail(),
            slo_card(),
            html.Div(
                className="grid two",
                children=[
                    _card("Calls over time, by layer", _graph("graph-calls")),
                    _card("Latency percentiles", _graph("graph-latency")),
                ],
            ),
            html.Div(
                className="grid one-two",
                children=[
                    _card("Layers: calls and cost", _graph("graph-layers")),
                    tools,
                ],
            ),
            errors,
            gateway_card(),
            machine_card(),
            clients_card(_TABLE_STYLE),
            context_card(),
        ],
    )


def create_app(
    reader: SyncReader,
    *,
    store_url: str,
    refresh_ms: int = DEFAULT_REFRESH_MS,
    initial_range: str = DEFAULT_RANGE,
) -> Dash:
    """Build the Dash app over ``reader``.

    Args:
        reader: the open data reader (the app does not close it).
        store_url: shown in the header.
        refresh_ms: live refresh interval.
        initial_range: the range selected when the page opens (``"15m"`` … ``"7d"``), or
            ``"auto"`` (as ``air dashboard`` and ``air demo`` open it): each time the page
            opens, the smallest range that holds the last 24 hours' calls
            (:meth:`~dashboard.reader.SyncReader.fitting_range`).

    Returns:
        The app; serve ``app.server`` (a WSGI app) with :class:`dashboard.server.DashboardServer`.
    """
    from dashboard.callbacks import register_callbacks

    app = Dash(
        __name__,
        assets_folder=_ASSETS,
        title="air · MCP dashboard",
        update_title="",
        serve_locally=True,
    )

    def page(range_key: str, *, fitted: bool) -> html.Div:
        return html.Div(
            className="page",
            children=[
                dcc.Interval(id="tick", interval=refresh_ms, n_intervals=0),
                dcc.Store(id="selected-tool", data=None),
                _header(store_url),
                _controls(range_key, fitted=fitted),
                _legend(),
                html.Div(id="banner", className="banner", style={"display": "none"}),
                _empty_state(store_url),
                _content(),
            ],
        )

    if initial_range == AUTO:

        def fitted_page() -> html.Div:  # each page load: the range that fits the data now
            try:
                key = reader.fitting_range()
            except DashboardError:
                return page(DEFAULT_FALLBACK, fitted=False)  # the banner will say why
            return page(key, fitted=True)

        app.layout = fitted_page
    else:
        app.layout = page(initial_range, fitted=False)
    register_callbacks(app, reader)
    warm_up()
    return app
