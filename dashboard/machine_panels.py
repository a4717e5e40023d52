"""The panels of :mod:`dashboard.machine`: every data location's servers, and the gateway's
added latency. Layout builders (:func:`machine_card`, :func:`gateway_card`) and the values one
refresh sends (:func:`machine_values`)."""

from __future__ import annotations

from typing import Any, Final

from dash import html
from dash.dash_table.DataTable import DataTable

from dashboard.present import fmt_count
from dashboard.types import DashboardView, GatewayPanel, MachinePanel

__all__ = ["MACHINE_OUTPUTS", "gateway_card", "machine_card", "machine_values"]

MACHINE_OUTPUTS: dict[str, tuple[str, str]] = {
    "machine": ("machine-table", "data"),
    "machine_note": ("machine-note", "children"),
    "gateway": ("gateway-table", "data"),
    "gateway_note": ("gateway-note", "children"),
    "gateway_style": ("gateway-panel", "style"),
}
"""The outputs these panels add to a refresh: name → (component id, property)."""

_CELL: Final = {"fontFamily": "inherit", "fontSize": "13px", "padding": "6px 10px",
                "border": "none", "borderBottom": "1px solid #eef2f7", "textAlign": "left",
                "backgroundColor": "transparent"}  # fmt: skip
_HEADER: Final = {"fontWeight": "600", "fontSize": "11px", "color": "#64748b",
                  "textTransform": "uppercase", "backgroundColor": "#f8fafc"}  # fmt: skip
_COUNT: Final = {"specifier": ","}
_FIXED: Final = {"specifier": ",.2f"}


def _table(table_id: str, columns: list[Any]) -> DataTable:
    return DataTable(id=table_id, columns=columns, data=[], page_size=10, sort_action="native",
                     style_as_list_view=True, style_cell=_CELL, style_header=_HEADER)  # fmt: skip


def machine_card() -> html.Div:
    """Every server on this machine, each with where its data is."""
    cols: list[Any] = [
        {"name": "server", "id": "server"},
        {"name": "instance", "id": "instance"},
        {"name": "calls", "id": "calls", "type": "numeric", "format": _COUNT},
        {"name": "errors", "id": "errors", "type": "numeric", "format": _COUNT},
        {"name": "error %", "id": "error_pct", "type": "numeric", "format": _FIXED},
        {"name": "p95 ms", "id": "p95", "type": "numeric", "format": _FIXED},
        {"name": "data", "id": "data"},
    ]
    return html.Div(
        id="machine-panel",
        className="card",
        children=[
            html.Div("Servers on this machine — where each one's data is", className="card-title"),
            html.Div(id="machine-note", className="machine-note"),
            _table("machine-table", cols),
        ],
    )


def gateway_card() -> html.Div:
    """The latency ``air gateway`` added to the calls it proxied (hidden without hops)."""
    cols: list[Any] = [
        {"name": "upstream", "id": "server"},
        {"name": "calls through the gateway", "id": "hops", "type": "numeric", "format": _COUNT},
        {"name": "added p50 ms", "id": "p50", "type": "numeric", "format": _FIXED},
        {"name": "added p95 ms", "id": "p95", "type": "numeric", "format": _FIXED},
        {"name": "added max ms", "id": "max", "type": "numeric", "format": _FIXED},
    ]
    return html.Div(
        id="gateway-panel",
        className="card",
        style={"display": "none"},
        children=[
            html.Div("Gateway — latency it added", className="card-title"),
            html.Div(id="gateway-note", className="gateway-note"),
            _table("gateway-table", cols),
        ],
    )


def _machine(panel: MachinePanel | None) -> tuple[list[dict[str, Any]], str]:
    if panel is None:
        return [], ""
    rows = [
        {
            "id": f"{r.data}|{r.server}|{r.instance_id}",
            "server": r.server or "-",
            "instance": r.instance_id or "-",
            "calls": r.calls,
            "errors": r.errors,
            "error_pct": round(r.error_rate * 100, 2),
            "p95": r.p95_ms,
            "data": r.data if not r.here else f"{r.data} (shown above)",
        }
        for r in panel.rows
    ]
    if not panel.everywhere:
        note = "this store only (opened with --store); without it, every data location"
    elif len(panel.locations) > 1:
        note = (f"{len(panel.locations)} data locations on this machine (registered in the "
                "per-user locations.json); the views above show the first: open another with "
                "air dashboard --store URL")  # fmt: skip
    else:
        note = "no other data location on this machine holds calls"
    if panel.more:
        note += f"; the {len(panel.rows)} busiest shown ({panel.more} more)"
    return rows, note


def _gateway(panel: GatewayPanel | None) -> tuple[list[dict[str, Any]], str, dict[str, str]]:
    if panel is None or not panel.hops:
        return [], "", {"display": "none"}
    rows = [
        {"id": r.server, "server": r.server, "hops": r.hops, "p50": r.added_p50_ms,
         "p95": r.added_p95_ms, "max": r.added_max_ms}
        for r in panel.rows
    ]  # fmt: skip
    note = (f"{fmt_count(panel.hops)} calls went through air gateway to upstreams that metered "
            "them into this store: each is counted once above, by the upstream that ran it; "
            "here is the time the gateway added (its time minus the upstream's)")  # fmt: skip
    return rows, note, {}


def machine_values(view: DashboardView) -> dict[str, Any]:
    """Every output of :data:`MACHINE_OUTPUTS` for a view."""
    machine, machine_note = _machine(view.machine)
    gateway, gateway_note, gateway_style = _gateway(view.gateway)
    return {"machine": machine, "machine_note": machine_note, "gateway": gateway,
            "gateway_note": gateway_note, "gateway_style": gateway_style}  # fmt: skip
