"""The data module's numbers, checked against an independent computation from the raw call log."""

from __future__ import annotations

import asyncio
import math
from collections import Counter
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from airmeter import Layer
from airstore import FileStore, MemoryStore, Store
from dashboard.data import (
    RECENT_ERRORS,
    DashboardData,
    open_store,
    parse_server_choice,
    server_choices,
)
from dashboard.errors import InvalidRangeError, StoreUnavailableError
from dashboard.ranges import RANGES, resolve_range
from dashboard.types import Filters, TimeRange
from tests.dashboard.seed import make_records, write_records

NOW_MS = 1_790_000_000_000
DAY_MS = 86_400_000
MIN_MS = 60_000


def _pct_ok(got: float | None, values: list[float], q: float) -> bool:
    """``got`` lies between the order statistics that any usual definition of the ``q``-th
    percentile picks (interpolated or nearest rank), give or take the meter's ~1 % buckets."""
    s = sorted(values)
    n = len(s)
    idx = ((n - 1) * q / 100, n * q / 100 - 1)
    lo = s[max(0, min(math.floor(i) for i in idx))]
    hi = s[min(n - 1, max(math.ceil(i) for i in idx))]
    return got is not None and lo * 0.98 - 0.01 <= got <= hi * 1.02 + 0.01


def _pcts_ok(got: tuple[float | None, ...], values: list[float]) -> bool:
    return all(_pct_ok(g, values, q) for g, q in zip(got, (50, 95, 99), strict=True))


def _floor_min(ms: int) -> int:
    return ms - ms % MIN_MS


def _in(records: list[dict[str, Any]], rng: TimeRange, **flt: Any) -> list[dict[str, Any]]:
    """Calls in the range at the meter's minute granularity: a minute counts if it overlaps."""
    lo = _floor_min(rng.since_ms)
    return [
        r
        for r in records
        if lo <= _floor_min(r["_ts"]) < rng.until_ms and all(r.get(k) == v for k, v in flt.items())
    ]


def _minutes(rng: TimeRange) -> float:
    return (-(-rng.until_ms // MIN_MS) * MIN_MS - _floor_min(rng.since_ms)) / MIN_MS


def _cost(r: dict[str, Any]) -> float:
    """A call's own cost, else its layer's weight (cost units: an L1 call = 1)."""
    return float(r["cost"]) if "cost" in r else float(Layer(int(r["layer"][1:])).weight)


@pytest.fixture(scope="module")
def records() -> list[dict[str, Any]]:
    """The calls of every ``seeded`` store (read, never changed, by the tests)."""
    return make_records(now_ms=NOW_MS, count=6000, span_ms=8 * DAY_MS)


@pytest.fixture(scope="module")
def file_data(tmp_path_factory: pytest.TempPathFactory, records: list[dict[str, Any]]) -> Path:
    """A FileStore written once with ``records``; each test opens its own reader on it."""
    path = tmp_path_factory.mktemp("seeded") / "data"

    async def write() -> None:
        async with FileStore(path) as writer:
            await write_records(writer, records)

    asyncio.run(write())
    return path


@pytest.fixture(params=["memory", "file"])
async def seeded(
    request: pytest.FixtureRequest, records: list[dict[str, Any]], file_data: Path
) -> AsyncIterator[tuple[DashboardData, list[dict[str, Any]]]]:
    if request.param == "memory":  # a store of its own: closing the view's data clears it
        store: Store = MemoryStore()
        await write_records(store, records)
    else:  # read-only: the tests share the directory, each with a reader of its own
        store = await open_store(f"file://{file_data}")
    data = DashboardData(store, url="test", clock=lambda: NOW_MS / 1000)
    yield data, records
    await data.close()


@pytest.mark.parametrize("key", sorted(RANGES))
async def test_headline_layers_and_tools_match_the_raw_log(
    seeded: tuple[DashboardData, list[dict[str, Any]]], key: str
) -> None:
    data, records = seeded
    rng = data.resolve(key)
    view = await data.view(rng)
    want = _in(records, rng)
    assert view.snapshot.total_calls == len(want) > 0
    assert view.snapshot.error_count == sum(not r["ok"] for r in want)
    assert view.snapshot.error_rate == pytest.approx(view.snapshot.error_count / len(want))
    assert view.snapshot.calls_per_min == pytest.approx(len(want) / _minutes(rng))
    assert view.snapshot.total_cost == pytest.approx(sum(_cost(r) for r in want))
    h = view.snapshot
    assert _pcts_ok((h.p50_ms, h.p95_ms, h.p99_ms), [r["latency_ms"] for r in want])
    by_layer = Counter(r["layer"] for r in want)
    for sl in view.snapshot.layers.values():
        assert sl.calls == by_layer.get(sl.layer.code, 0)
        assert sl.weighted_cost == sl.calls * sl.layer.weight
        assert sl.cost == pytest.approx(sum(_cost(r) for r in want if r["layer"] == sl.layer.code))
    # One cost measure everywhere: the layers and the tools add up to the headline.
    assert sum(sl.cost for sl in view.snapshot.layers.values()) == pytest.approx(
        view.snapshot.total_cost
    )
    assert sum(row.cost for row in view.snapshot.tools) == pytest.approx(view.snapshot.total_cost)
    assert {row.tool for row in view.snapshot.tools} == {r["tool"] for r in want}
    for row in view.snapshot.tools:
        mine = [r for r in want if r["tool"] == row.tool]
        assert row.calls == len(mine)
        assert row.errors == sum(not r["ok"] for r in mine)
        assert row.layer.code == mine[0]["layer"]
        assert row.cost == pytest.approx(sum(_cost(r) for r in mine))
        assert _pcts_ok((row.p50_ms, row.p95_ms, row.p99_ms), [r["latency_ms"] for r in mine])


async def test_series_buckets_count_every_call_by_layer(
    seeded: tuple[DashboardData, list[dict[str, Any]]],
) -> None:
    data, records = seeded
    rng = data.resolve("24h")
    view = await data.view(rng)
    want = _in(records, rng)
    assert sum(b.calls for b in view.snapshot.series) == len(want)
    first = view.snapshot.series[0].start_ms
    lo = _floor_min(rng.since_ms)
    assert first == lo - lo % rng.bucket_ms  # buckets sit on multiples of their width
    counts: Counter[tuple[int, str]] = Counter(
        ((_floor_min(r["_ts"]) - first) // rng.bucket_ms, r["layer"]) for r in want
    )
    for i, bucket in enumerate(view.snapshot.series):
        assert bucket.start_ms == first + i * rng.bucket_ms
        for layer in Layer:  # keyed by the Layer, a layer without calls left out
            assert bucket.layers.get(layer, 0) == counts.get((i, layer.code), 0)
        assert all(n > 0 for n in bucket.layers.values())
    busiest = max(view.snapshot.series, key=lambda b: b.calls)
    lat = [
        r["latency_ms"]
        for r in want
        if busiest.start_ms <= r["_ts"] < busiest.start_ms + rng.bucket_ms
    ]
    assert _pcts_ok((busiest.p50_ms, busiest.p95_ms, busiest.p99_ms), lat)


async def test_filters_by_tool_layer_and_server_narrow_every_number(
    seeded: tuple[DashboardData, list[dict[str, Any]]],
) -> None:
    data, records = seeded
    rng = data.resolve("7d")
    await data.view(rng)  # learns the tool names
    view = await data.view(rng, Filters(tool="fetch_url", server="billing"))
    want = _in(records, rng, tool="fetch_url", server="billing")
    assert view.snapshot.total_calls == len(want) > 0
    assert [row.tool for row in view.snapshot.tools] == ["fetch_url"]
    assert "plan_trip" in view.tool_names  # the dropdown keeps every known tool
    assert all(e.tool == "fetch_url" and e.server == "billing" for e in view.recent_errors)
    by_layer = await data.view(rng, Filters(layer=Layer.L7))
    assert by_layer.snapshot.total_calls == len(_in(records, rng, layer="L7"))
    assert {sl.layer for sl in by_layer.snapshot.layers.values() if sl.calls} == {Layer.L7}


async def test_recent_errors_are_the_newest_failures_with_their_details(
    seeded: tuple[DashboardData, list[dict[str, Any]]],
) -> None:
    data, records = seeded
    rng = data.resolve("7d")
    view = await data.view(rng)
    failed = sorted(
        (r for r in _in(records, rng) if not r["ok"]), key=lambda r: r["_ts"], reverse=True
    )
    assert [e.request_id for e in view.recent_errors] == [
        r["request_id"] for r in failed[:RECENT_ERRORS]
    ]
    top = view.recent_errors[0]
    assert (top.tool, top.error_type, top.message) == (
        failed[0]["tool"],
        failed[0]["error_type"],
        failed[0]["error_message"],
    )
    # Every failure in the range, by type (refused arguments are "-32602"), most frequent first.
    by_type = Counter(r["error_type"] for r in failed)
    assert dict(view.errors_by_type) == by_type
    assert [n for _, n in view.errors_by_type] == sorted(by_type.values(), reverse=True)
    assert by_type["-32602"] > 0


async def test_tool_detail_histogram_holds_every_sampled_call(
    seeded: tuple[DashboardData, list[dict[str, Any]]],
) -> None:
    data, records = seeded
    rng = data.resolve("7d")
    detail = await data.tool_detail("generate_reply", rng)
    mine = sorted(_in(records, rng, tool="generate_reply"), key=lambda r: -r["_ts"])
    assert detail.calls == len(mine) > 0
    assert sum(b.count for b in detail.histogram) == len(mine)
    for b in detail.histogram:
        assert b.count == sum(b.lo_ms <= r["latency_ms"] < b.hi_ms for r in mine)
    assert [c.request_id for c in detail.latest] == [r["request_id"] for r in mine[:25]]


async def test_empty_store_is_reported_as_empty() -> None:
    data = DashboardData(MemoryStore(), url="memory://", clock=lambda: NOW_MS / 1000)
    view = await data.view(data.resolve("1h"))
    assert view.store_empty
    assert view.snapshot.total_calls == 0
    assert view.snapshot.p50_ms is None
    assert view.snapshot.tools == ()


async def test_store_with_old_calls_only_is_not_empty(
    seeded: tuple[DashboardData, list[dict[str, Any]]],
) -> None:
    data, _ = seeded
    later = DashboardData(data._store, clock=lambda: (NOW_MS + 30 * DAY_MS) / 1000)
    view = await later.view(later.resolve("15m"))
    assert view.snapshot.total_calls == 0
    assert not view.store_empty


async def test_missing_store_gives_a_clear_typed_error(tmp_path: Path) -> None:
    url = f"file://{tmp_path}/nothing-here"
    with pytest.raises(StoreUnavailableError) as info:
        await open_store(url)
    assert "no store at" in info.value.message
    assert "air demo" in info.value.hint
    assert info.value.url == url


async def test_bad_url_and_wrong_kind_give_typed_errors(tmp_path: Path) -> None:
    with pytest.raises(StoreUnavailableError):
        await open_store("nonsense")
    (tmp_path / "file").write_text("x")
    with pytest.raises(StoreUnavailableError) as info:
        await open_store(f"file://{tmp_path}/file")
    assert "not a directory" in info.value.message


def test_custom_range_needs_a_start_before_its_end() -> None:
    rng = resolve_range("custom", now_ms=NOW_MS, start_ms=NOW_MS - 3 * 3_600_000)
    assert (rng.since_ms, rng.until_ms) == (NOW_MS - 3 * 3_600_000, NOW_MS)
    assert (rng.until_ms - rng.since_ms) / rng.bucket_ms <= 90
    with pytest.raises(InvalidRangeError):
        resolve_range("custom", now_ms=NOW_MS)
    with pytest.raises(InvalidRangeError):
        resolve_range("custom", now_ms=NOW_MS, start_ms=NOW_MS, end_ms=NOW_MS - 1)
    with pytest.raises(InvalidRangeError):
        resolve_range("2w", now_ms=NOW_MS)


async def test_unreadable_store_gives_a_clear_typed_error(tmp_path: Path) -> None:
    # The call log's file is a directory: the store exists but cannot be read.
    (tmp_path / "data" / "meter.calls.log.jsonl").mkdir(parents=True)
    url = f"file://{tmp_path}/data"
    with pytest.raises(StoreUnavailableError) as info:
        await open_store(url)
    assert "cannot read store" in info.value.message
    assert info.value.url == url


def test_server_choices_list_instances_only_for_servers_with_several() -> None:
    choices = server_choices({"b": {"b-1"}, "a": {"x:1", "a-2"}, "": {"z"}, "c": {""}})
    assert [(c.label, c.server, c.instance) for c in choices] == [
        ("a (all 2 instances)", "a", None),
        ("a (a-2)", "a", "a-2"),
        ("a (x:1)", "a", "x:1"),
        ("b", "b", None),
        ("c", "c", None),
    ]
    assert [parse_server_choice(c.value) for c in choices] == [
        (c.server, c.instance) for c in choices
    ]
    assert parse_server_choice(None) == parse_server_choice("") == (None, None)
    assert parse_server_choice("[not json") == ("[not json", None)
