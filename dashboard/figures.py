"""Plotly figures for the dashboard, one consistent colour per layer everywhere."""

from __future__ import annotations

from datetime import datetime
from typing import Any

import plotly.graph_objects as go

from airmeter import Layer
from dashboard.types import DashboardView, ToolDetail

__all__ = [
    "LAYER_COLOURS",
    "calls_figure",
    "empty_figure",
    "histogram_figure",
    "latency_figure",
    "layers_figure",
]

LAYER_COLOURS: dict[Layer, str] = {
    Layer.L1: "#38bdf8",  # sky: static
    Layer.L2: "#34d399",  # emerald: lookup
    Layer.L3: "#a3e635",  # lime: transform
    Layer.L4: "#facc15",  # amber: compute
    Layer.L5: "#fb923c",  # orange: external API
    Layer.L6: "#f43f5e",  # rose: LLM
    Layer.L7: "#a855f7",  # violet: agent
}
_PCT_COLOURS = {"p50": "#0ea5e9", "p95": "#f59e0b", "p99": "#ef4444"}
_FONT = "Inter, ui-sans-serif, system-ui, -apple-system, Segoe UI, Roboto, sans-serif"


def _layout(fig: go.Figure, *, height: int = 280, **extra: Any) -> go.Figure:
    fig.update_layout(
        template="plotly_white",
        height=height,
        margin={"l": 48, "r": 12, "t": 8, "b": 36},
        font={"family": _FONT, "size": 12, "color": "#334155"},
        paper_bgcolor="rgba(0,0,0,0)",
        plot_bgcolor="rgba(0,0,0,0)",
        legend={"orientation": "h", "y": -0.18, "x": 0, "font": {"size": 11}},
        hoverlabel={"font": {"family": _FONT}},
        **extra,
    )
    fig.update_xaxes(gridcolor="#eef2f7", zeroline=False)
    fig.update_yaxes(gridcolor="#eef2f7", zeroline=False, rangemode="tozero")
    return fig


def empty_figure(message: str = "no calls in this range") -> go.Figure:
    """A blank chart carrying a short centred message."""
    fig = go.Figure()
    fig.add_annotation(
        text=message, showarrow=False, font={"size": 13, "color": "#94a3b8"}, x=0.5, y=0.5
    )
    fig.update_xaxes(visible=False)
    fig.update_yaxes(visible=False)
    return _layout(fig)


def _times(view: DashboardView) -> list[datetime]:
    return [datetime.fromtimestamp(b.start_ms / 1000) for b in view.series]


def calls_figure(view: DashboardView) -> go.Figure:
    """Calls per bucket, stacked by layer."""
    if view.headline.calls == 0:
        return empty_figure()
    fig = go.Figure()
    x = _times(view)
    for layer in Layer:
        ys = [b.calls_by_layer[layer - 1] for b in view.series]
        if not any(ys):
            continue
        fig.add_trace(
            go.Bar(
                x=x,
                y=ys,
                name=f"{layer.code} {layer.info.name}",
                marker={"color": LAYER_COLOURS[layer], "line": {"width": 0}},
                hovertemplate=f"{layer.code}: %{{y}} calls<extra></extra>",
            )
        )
    return _layout(fig, barmode="stack", bargap=0.12, hovermode="x unified", showlegend=False)


def latency_figure(view: DashboardView) -> go.Figure:
    """p50/p95/p99 latency per bucket (ms, log scale)."""
    if view.headline.calls == 0:
        return empty_figure()
    fig = go.Figure()
    x = _times(view)
    for name in ("p50", "p95", "p99"):
        ys = [getattr(b, f"{name}_ms") for b in view.series]
        fig.add_trace(
            go.Scatter(
                x=x,
                y=ys,
                name=name,
                mode="lines+markers",
                marker={"size": 4},
                connectgaps=False,
                line={"color": _PCT_COLOURS[name], "width": 2},
                hovertemplate=f"{name}: %{{y:.1f}} ms<extra></extra>",
            )
        )
    fig = _layout(fig, hovermode="x unified")
    fig.update_yaxes(type="log", dtick=1, title_text="ms", rangemode="normal")
    return fig


def layers_figure(view: DashboardView) -> go.Figure:
    """Calls and weighted cost per layer, side by side."""
    if view.headline.calls == 0:
        return empty_figure()
    codes = [s.layer.code for s in view.layers]
    colours = [LAYER_COLOURS[s.layer] for s in view.layers]
    fig = go.Figure()
    fig.add_trace(
        go.Bar(
            x=codes,
            y=[s.calls for s in view.layers],
            name="calls",
            offsetgroup="calls",
            marker={"color": colours},
            hovertemplate="%{x}: %{y} calls<extra></extra>",
        )
    )
    fig.add_trace(
        go.Bar(
            x=codes,
            y=[s.weighted_cost for s in view.layers],
            name="weighted cost",
            offsetgroup="cost",
            marker={"color": colours, "opacity": 0.45, "pattern": {"shape": "/"}},
            yaxis="y2",
            hovertemplate="%{x}: %{y} cost units<extra></extra>",
        )
    )
    return _layout(
        fig,
        barmode="group",
        bargap=0.25,
        yaxis={"title": {"text": "calls"}},
        yaxis2={"title": {"text": "weighted cost"}, "overlaying": "y", "side": "right"},
        showlegend=True,
    )


def histogram_figure(detail: ToolDetail, layer: Layer | None) -> go.Figure:
    """A tool's latency histogram on the 1-2-5 bins of :func:`latency_histogram`."""
    if not detail.histogram:
        return empty_figure("no calls of this tool in the range")
    colour = LAYER_COLOURS[layer] if layer is not None else "#64748b"
    labels = [f"{_ms(b.lo_ms)}–{_ms(b.hi_ms)}" for b in detail.histogram]
    fig = go.Figure(
        go.Bar(
            x=labels,
            y=[b.count for b in detail.histogram],
            marker={"color": colour},
            hovertemplate="%{x}: %{y} calls<extra></extra>",
        )
    )
    fig = _layout(fig, height=240, bargap=0.08, showlegend=False)
    fig.update_xaxes(title_text="latency", type="category", tickangle=0)
    return fig


def _ms(value: float) -> str:
    if value >= 1000:
        return f"{value / 1000:g}s"
    return f"{value:g}ms"
