"""What the charts plot: the numbers of the view model, one colour per layer everywhere."""

from __future__ import annotations

from typing import Any

import pytest

from airmeter import Layer
from airstore import MemoryStore
from dashboard.data import DashboardData
from dashboard.figures import LAYER_COLOURS, calls_figure, latency_figure, layers_figure
from dashboard.types import DashboardView
from tests.dashboard.seed import make_records, write_records

NOW_MS = 1_790_000_000_000
HOUR_MS = 3_600_000


@pytest.fixture
async def view() -> DashboardView:
    store = MemoryStore()
    await write_records(store, make_records(now_ms=NOW_MS, count=2000, span_ms=HOUR_MS, seed=3))
    data = DashboardData(store, url="test", clock=lambda: NOW_MS / 1000)
    try:
        return await data.view(data.resolve("1h"))
    finally:
        await data.close()


def _traces(fig: Any) -> list[dict[str, Any]]:
    return list(fig.to_plotly_json()["data"])


def test_layer_cost_bars_add_up_to_the_headline_cost(view: DashboardView) -> None:
    calls, cost = _traces(layers_figure(view))
    assert (
        list(calls["x"])
        == list(cost["x"])
        == [sl.layer.code for sl in view.snapshot.layers.values()]
    )
    assert sum(calls["y"]) == view.snapshot.total_calls
    # Handlers reported some costs (see seed.py), so calls x weight would not match the headline.
    assert sum(sl.weighted_cost for sl in view.snapshot.layers.values()) != pytest.approx(
        view.snapshot.total_cost
    )
    assert sum(cost["y"]) == pytest.approx(view.snapshot.total_cost)
    assert [c[0] for c in cost["customdata"]] == [
        sl.weighted_cost for sl in view.snapshot.layers.values()
    ]
    want = [LAYER_COLOURS[sl.layer] for sl in view.snapshot.layers.values()]
    assert list(calls["marker"]["color"]) == list(cost["marker"]["color"]) == want


def test_calls_chart_stacks_every_call_in_its_layer_colour(view: DashboardView) -> None:
    traces = _traces(calls_figure(view))
    assert sum(sum(t["y"]) for t in traces) == view.snapshot.total_calls
    for trace in traces:
        layer = Layer[trace["name"].split()[0]]
        assert trace["marker"]["color"] == LAYER_COLOURS[layer]


def test_time_charts_share_the_range_and_percentiles_avoid_layer_colours(
    view: DashboardView,
) -> None:
    ranges = [
        fig.to_plotly_json()["layout"]["xaxis"]["range"]
        for fig in (calls_figure(view), latency_figure(view))
    ]
    assert ranges[0] == ranges[1]
    lo, hi = (d.timestamp() * 1000 for d in ranges[0])
    assert lo <= min(view.snapshot.series[0].start_ms, view.range.since_ms)
    assert hi == view.snapshot.series[-1].start_ms + view.range.bucket_ms >= view.range.until_ms
    # Every latency point (drawn at its bucket's centre) lies inside the shown span.
    for trace in _traces(latency_figure(view)):
        assert all(lo < x.timestamp() * 1000 < hi for x in trace["x"])
    # Layer colours are vivid; percentile lines stay neutral so no one reads them as layers.
    assert all(_chroma(c) > 100 for c in LAYER_COLOURS.values())
    for trace in _traces(latency_figure(view)):
        assert _chroma(trace["line"]["color"]) < 60, trace["name"]


def _chroma(hex_colour: str) -> int:
    rgb = [int(hex_colour[i : i + 2], 16) for i in (1, 3, 5)]
    return max(rgb) - min(rgb)


def test_histogram_labels_are_short_and_cover_the_bins() -> None:
    from dashboard.data import latency_histogram
    from dashboard.figures import bin_label, histogram_figure
    from dashboard.types import ToolDetail

    bins = latency_histogram([0.005, 0.3, 1.5, 3.0, 4.0, 1200.0, 4500.0])
    detail = ToolDetail(tool="t", calls=7, histogram=bins, latest=())
    (trace,) = _traces(histogram_figure(detail, Layer.L2))
    assert list(trace["x"]) == [bin_label(b.lo_ms, b.hi_ms) for b in bins]
    assert sum(trace["y"]) == 7
    assert trace["marker"]["color"] == LAYER_COLOURS[Layer.L2]
    assert bin_label(0.0, 0.01) == "0–0.01"
    assert bin_label(1000.0, 2000.0) == "1k–2k"
    assert max(len(label) for label in trace["x"]) <= 9  # legible side by side on the axis
