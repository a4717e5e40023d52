"""Plotly figures for the dashboard, one consistent colour per layer everywhere."""

from __future__ import annotations

from datetime import datetime
from typing import Any

import plotly.graph_objects as go

from airmeter import Layer
from dashboard.types import DashboardView, ToolDetail

__all__ = [
    "LAYER_COLOURS",
    "bin_label",
    "calls_figure",
    "empty_figure",
    "histogram_figure",
    "latency_figure",
    "layers_figure",
    "warm_up",
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
# Percentiles in slate shades and dashes: no layer colour means anything else on the page.
_PCT_STYLE = {
    "p50": {"color": "#94a3b8", "width": 2},
    "p95": {"color": "#475569", "width": 2, "dash": "dash"},
    "p99": {"color": "#0f172a", "width": 2.5},
}
_FONT = "Inter, ui-sans-serif, system-ui, -apple-system, Segoe UI, Roboto, sans-serif"


_FEW_POINTS = 20
"""Below this many points a series gets larger markers."""


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


def warm_up() -> None:
    """Build and encode a small figure of every kind the page uses.

    plotly loads its property validators on first use (~0.1 s); doing that when the app is
    created keeps it out of the first page load's callbacks.
    """
    bar = go.Bar(x=[1], y=[1], marker={"color": "#000", "pattern": {"shape": "/"}})
    line = go.Scatter(x=[1], y=[1], line={"color": "#000", "dash": "dash"})
    _layout(go.Figure([bar, line])).to_plotly_json()


def empty_figure(message: str = "no calls in this range") -> go.Figure:
    """A blank chart carrying a short centred message."""
    fig = go.Figure()
    fig.add_annotation(
        text=message, showarrow=False, font={"size": 13, "color": "#94a3b8"}, x=0.5, y=0.5
    )
    fig.update_xaxes(visible=False)
    fig.update_yaxes(visible=False)
    return _layout(fig)


def _dt(ms: float) -> datetime:
    return datetime.fromtimestamp(ms / 1000)


def _times(view: DashboardView, *, centre: bool = False) -> list[datetime]:
    half = view.range.bucket_ms / 2 if centre else 0
    return [_dt(b.start_ms + half) for b in view.snapshot.series]


def _x_range(view: DashboardView) -> list[datetime]:
    """The same x span on both time charts: the range's buckets, first start to last end."""
    if not view.snapshot.series:
        return [_dt(view.range.since_ms), _dt(view.range.until_ms)]
    first, last = view.snapshot.series[0].start_ms, view.snapshot.series[-1].start_ms
    return [_dt(min(first, view.range.since_ms)), _dt(last + view.range.bucket_ms)]


def calls_figure(view: DashboardView) -> go.Figure:
    """Calls per bucket, stacked by layer."""
    if view.snapshot.total_calls == 0:
        return empty_figure()
    fig = go.Figure()
    x = _times(view)
    for layer in Layer:
        ys = [b.layers.get(layer, 0) for b in view.snapshot.series]
        if not any(ys):
            continue
        fig.add_trace(
            go.Bar(
                x=x,
                y=ys,
                name=f"{layer.code} {layer.info.name}",
                marker={"color": LAYER_COLOURS[layer], "line": {"width": 0}},
                offset=0,
                width=view.range.bucket_ms * 0.88,
                hovertemplate=f"{layer.code}: %{{y:,}} calls<extra></extra>",
            )
        )
    fig = _layout(fig, barmode="stack", hovermode="x unified", showlegend=False)
    fig.update_xaxes(range=_x_range(view), type="date")
    return fig


def latency_figure(view: DashboardView) -> go.Figure:
    """p50/p95/p99 latency per bucket (ms, log scale).

    Only buckets with calls are points, joined by lines: with few calls spread over the range,
    a line broken at every empty bucket was a scatter of isolated dots.
    """
    if view.snapshot.total_calls == 0:
        return empty_figure()
    fig = go.Figure()
    x = _times(view, centre=True)
    for name in ("p50", "p95", "p99"):
        values = [getattr(b, f"{name}_ms") for b in view.snapshot.series]
        points = [(t, v) for t, v in zip(x, values, strict=True) if v is not None]
        fig.add_trace(
            go.Scatter(
                x=[t for t, _ in points],
                y=[v for _, v in points],
                name=name,
                mode="lines+markers",
                marker={"size": 7 if len(points) < _FEW_POINTS else 5},
                line=_PCT_STYLE[name],
                hovertemplate=f"{name}: %{{y:.1f}} ms<extra></extra>",
            )
        )
    fig = _layout(fig, hovermode="x unified")
    fig.update_xaxes(range=_x_range(view), type="date")
    fig.update_yaxes(type="log", dtick=1, title_text="ms", rangemode="normal")
    return fig


def layers_figure(view: DashboardView) -> go.Figure:
    """Calls and cost per layer, side by side.

    The cost bars use the headline's measure (what calls reported, else their layer's weight), so
    they add up to the headline cost; the hover also shows calls x weight for comparison.
    """
    if view.snapshot.total_calls == 0:
        return empty_figure()
    layers = tuple(view.snapshot.layers.values())  # L1 … L7
    codes = [s.layer.code for s in layers]
    colours = [LAYER_COLOURS[s.layer] for s in layers]
    fig = go.Figure()
    fig.add_trace(
        go.Bar(
            x=codes,
            y=[s.calls for s in layers],
            name="calls",
            offsetgroup="calls",
            marker={"color": colours},
            hovertemplate="%{x}: %{y:,} calls<extra></extra>",
        )
    )
    fig.add_trace(
        go.Bar(
            x=codes,
            y=[s.cost for s in layers],
            customdata=[[s.weighted_cost, s.layer.weight] for s in layers],
            name="cost (units)",
            offsetgroup="cost",
            marker={"color": colours, "opacity": 0.45, "pattern": {"shape": "/"}},
            yaxis="y2",
            hovertemplate=(
                "%{x}: cost %{y:,.2f} units<br>"
                "(calls × weight %{customdata[1]} = %{customdata[0]:,})<extra></extra>"
            ),
        )
    )
    return _layout(
        fig,
        barmode="group",
        bargap=0.25,
        yaxis={"title": {"text": "calls"}},
        yaxis2={
            "title": {"text": "cost (units)"},
            "overlaying": "y",
            "side": "right",
            "rangemode": "tozero",
            "showgrid": False,
        },
        showlegend=True,
    )


def histogram_figure(detail: ToolDetail, layer: Layer | None) -> go.Figure:
    """A tool's latency histogram on the 1-2-5 bins of :func:`latency_histogram`."""
    if not detail.histogram:
        return empty_figure("no calls of this tool in the range")
    colour = LAYER_COLOURS[layer] if layer is not None else "#64748b"
    labels = [bin_label(b.lo_ms, b.hi_ms) for b in detail.histogram]
    fig = go.Figure(
        go.Bar(
            x=labels,
            y=[b.count for b in detail.histogram],
            marker={"color": colour},
            hovertemplate="%{x} ms: %{y:,} calls<extra></extra>",
        )
    )
    fig = _layout(fig, height=260, bargap=0.08, showlegend=False)
    tilt = -35 if len(labels) > 7 else 0
    fig.update_xaxes(title_text="latency (ms)", type="category", tickangle=tilt)
    return fig


def bin_label(lo_ms: float, hi_ms: float) -> str:
    """A histogram bin's short label in ms (an en dash between the edges): 1k for 1000."""
    return f"{_short(lo_ms)}–{_short(hi_ms)}"


def _short(value: float) -> str:
    if value >= 1000:
        return f"{value / 1000:g}k"
    return f"{value:g}"
