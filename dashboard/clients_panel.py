"""The top clients panel and the client filter's values: who called, per OAuth client.

The figures come from the raw call log (the rollups hold no clients): the newest
:data:`~dashboard.data.CLIENTS_READ` calls of the range, the tool/layer/server filters applied.
"""

from __future__ import annotations

from typing import Any

from dash import dcc, html
from dash.dash_table.DataTable import DataTable

from dashboard.data import CLIENTS_READ, TOP_CLIENTS
from dashboard.types import DashboardView

__all__ = ["CLIENT_OUTPUTS", "client_filter", "client_values", "clients_card"]

CLIENT_OUTPUTS: dict[str, tuple[str, str]] = {
    "clients": ("clients-table", "data"),
    "clients_note": ("clients-note", "children"),
    "client_options": ("filter-client", "options"),
}
"""The page outputs this panel fills (name -> component id, property)."""

_COUNT = {"specifier": ","}
_FIXED = {"specifier": ",.2f"}


def client_filter() -> dcc.Dropdown:
    """The client filter: one OAuth client's calls on the whole page."""
    return dcc.Dropdown(id="filter-client", placeholder="All clients", className="filter")


def clients_card(table_style: dict[str, Any]) -> html.Div:
    """The "Top clients" card (filled by :func:`client_values`)."""
    columns: list[Any] = [
        {"name": "client", "id": "client"},
        {"name": "auth", "id": "auth"},
        {"name": "calls", "id": "calls", "type": "numeric", "format": _COUNT},
        {"name": "errors", "id": "errors", "type": "numeric", "format": _COUNT},
        {"name": "error %", "id": "error_pct", "type": "numeric", "format": _FIXED},
        {"name": "p95 ms", "id": "p95", "type": "numeric", "format": _FIXED},
        {"name": "cost (units)", "id": "cost", "type": "numeric", "format": _FIXED},
        {"name": "users", "id": "subjects", "type": "numeric", "format": _COUNT},
    ]
    return html.Div(
        className="card",
        children=[
            html.Div(
                f"Top clients — the {TOP_CLIENTS} busiest in the range", className="card-title"
            ),
            html.Div(id="clients-note", className="kpi-note"),
            DataTable(
                id="clients-table", columns=columns, data=[], page_size=TOP_CLIENTS, **table_style
            ),
        ],
    )


def client_values(view: DashboardView) -> dict[str, Any]:
    """The values of :data:`CLIENT_OUTPUTS` for ``view``."""
    rows = [
        {
            "id": row.client,
            "client": row.client,
            "auth": row.auth,
            "calls": row.calls,
            "errors": row.errors,
            "error_pct": round(row.error_rate * 100, 2),
            "p95": None if row.p95_ms is None else round(row.p95_ms, 2),
            "cost": round(row.cost, 2),
            "subjects": row.subjects,
        }
        for row in view.clients
    ]
    note = "users: distinct pseudonymous subjects; (none): calls without a client"
    if view.clients_partial:
        note = f"from the newest {CLIENTS_READ:,} calls of the range; " + note
    return {
        "clients": rows,
        "clients_note": note,
        "client_options": [{"label": c, "value": c} for c in view.client_names],
    }
