"""Snapshots checked against an independent computation from the raw call log."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import orjson
import pytest

from airmeter import CALLS_NAMESPACE, Layer, Meter, StoreSink, parse_layer, snapshot
from airmeter.errors import MeterConfigError
from airmeter.histogram import bucket_of, bucket_value, percentile
from airstore import MemoryStore
from tests.airmeter.helpers import T0, close, exact_percentile, independent, make_records

OWN_FAILURES = {"tool_error", "TimeoutError"}  # what make_records fails with, bar -32602


async def _store_with(n: int, **kw: object) -> tuple[MemoryStore, list[dict[str, object]]]:
    store = MemoryStore()
    sink = StoreSink(store, writer="w1")
    records = make_records(n, **kw)  # type: ignore[arg-type]
    for i in range(0, n, 500):
        await sink.write(records[i : i + 500])
    await sink.close()
    raw = await store.query(CALLS_NAMESPACE, limit=n + 1)
    assert len(raw) == n
    return store, raw


async def test_snapshot_matches_the_raw_log() -> None:
    store, raw = await _store_with(4000)
    exp = independent(raw)
    snap = await snapshot(store)
    assert snap.total_calls == exp["total"]
    assert snap.error_count == exp["errors"]
    assert snap.success_rate == pytest.approx(1 - exp["errors"] / exp["total"])
    assert dict(snap.errors_by_type) == exp["by_type"]
    for q in ("p50", "p95", "p99"):
        assert close(getattr(snap, f"{q}_ms"), exp[q]), q
    assert snap.total_cost == pytest.approx(exp["cost"])
    assert {k.code: v.calls for k, v in snap.layers.items() if v.calls} == exp["by_layer"]
    for layer, row in snap.layers.items():
        assert row.layer is layer
        assert row.weighted_cost == row.calls * layer.weight
    assert {t.tool for t in snap.tools} == set(exp["by_tool"])
    for row in snap.tools:
        entries = exp["by_tool"][row.tool]
        lat = [e["latency_ms"] for e in entries]
        assert row.calls == len(entries)
        assert row.errors == sum(1 for e in entries if not e["ok"])
        # the tool's own failures only: a refused call (-32602) shows apart, not in the rate
        own = [e for e in entries if not e["ok"] and e["error_type"] in OWN_FAILURES]
        assert row.error_rate == pytest.approx(len(own) / row.calls)
        refused = sum(1 for e in entries if e.get("error_type") == "-32602")
        assert row.errors_by_class.get("refused", 0) == refused
        assert row.layer is parse_layer(entries[0]["layer"])
        for q in (50, 95, 99):
            assert close(getattr(row, f"p{q}_ms"), exact_percentile(lat, q)), (row.tool, q)
    assert [t.calls for t in snap.tools] == sorted((t.calls for t in snap.tools), reverse=True)
    assert snap.calls_per_min == pytest.approx(4000 / 30)
    await store.close()


async def test_filters_by_tool_layer_server_and_instance() -> None:
    store, raw = await _store_with(3000, servers=("a", "b"), instances=("i-1", "i-2"))
    for kwargs, pred in [
        ({"tool": "get_user"}, lambda e: e["tool"] == "get_user"),
        ({"layer": "L5"}, lambda e: e["layer"] == "L5"),
        ({"layer": 6}, lambda e: e["layer"] == "L6"),
        ({"server": "a"}, lambda e: e["server"] == "a"),
        ({"instance": "i-2"}, lambda e: e["instance_id"] == "i-2"),
        (
            {"server": "b", "tool": "run_agent"},
            lambda e: e["server"] == "b" and e["tool"] == "run_agent",
        ),
    ]:
        part = [e for e in raw if pred(e)]
        snap = await snapshot(store, **kwargs)  # type: ignore[arg-type]
        exp = independent(part)
        assert snap.total_calls == exp["total"], kwargs
        assert snap.error_count == exp["errors"], kwargs
        assert close(snap.p95_ms, exp["p95"]), kwargs
    snap = await snapshot(store)
    groups = {(s.server, s.instance_id): s.calls for s in snap.servers}
    for (srv, inst), calls in groups.items():
        assert calls == sum(1 for e in raw if e["server"] == srv and e["instance_id"] == inst)
    assert sum(groups.values()) == 3000
    await store.close()


async def test_time_window_is_minute_granular_and_series_sums_up() -> None:
    store, raw = await _store_with(3000, minutes=60)
    since, until = T0 + 10 * 60_000, T0 + 40 * 60_000
    part = [e for e in raw if since <= e["_ts"] < until]
    snap = await snapshot(store, since=since, until=until, bucket_ms=5 * 60_000)
    assert snap.total_calls == len(part)
    assert (snap.since_ms, snap.until_ms) == (since, until)
    assert len(snap.series) == 6
    for point in snap.series:
        inside = [e for e in part if point.start_ms <= e["_ts"] < point.start_ms + 5 * 60_000]
        assert point.calls == len(inside)
        assert point.errors == sum(1 for e in inside if not e["ok"])
        by_layer: dict[Layer, int] = {}
        for e in inside:
            layer = parse_layer(e["layer"])
            by_layer[layer] = by_layer.get(layer, 0) + 1
        assert dict(point.layers) == by_layer
        assert close(point.p50_ms, exact_percentile([e["latency_ms"] for e in inside], 50))
    # datetimes and a partial first minute select the same whole minutes
    dt = datetime.fromtimestamp((since + 30_000) / 1000, tz=UTC)
    snap2 = await snapshot(store, since=dt, until=until)
    assert snap2.total_calls == len(part)
    await store.close()


async def test_automatic_buckets_stay_within_the_limit() -> None:
    store, _ = await _store_with(2000, minutes=300)
    snap = await snapshot(store, max_buckets=60)
    assert len(snap.series) <= 60
    assert snap.bucket_ms % 60_000 == 0
    assert sum(p.calls for p in snap.series) == 2000
    await store.close()


async def test_empty_store_gives_an_empty_snapshot() -> None:
    store = MemoryStore()
    snap = await snapshot(store, since=timedelta(hours=1))
    assert snap.total_calls == 0
    assert snap.success_rate == 1.0
    assert snap.p50_ms is None
    assert snap.tools == ()
    assert len(snap.series) >= 1
    await store.close()


async def test_json_form_has_the_documented_top_level_keys() -> None:
    store, raw = await _store_with(500)
    snap = await snapshot(store)
    data = orjson.loads(snap.to_json())
    for key in (
        "total_calls",
        "error_count",
        "success_rate",
        "p50_ms",
        "p95_ms",
        "p99_ms",
        "layers",
        "tools",
        "series",
        "servers",
        "errors_by_type",
        "calls_per_min",
    ):
        assert key in data, key
    assert data["total_calls"] == len(raw)
    assert set(data["layers"]) == {f"L{i}" for i in range(1, 8)}
    assert data["tools"][0]["calls"] == snap.tools[0].calls
    # a Layer in the objects, its code in the JSON: {"layer": "L2"}, series layers by code
    assert data["tools"][0]["layer"] == snap.tools[0].layer.code
    assert {row["layer"] for row in data["layers"].values()} == set(data["layers"])
    assert all(set(p["layers"]) <= set(data["layers"]) for p in data["series"])
    assert sum(sum(p["layers"].values()) for p in data["series"]) == len(raw)
    assert all(isinstance(k, Layer) for p in snap.series for k in p.layers)
    assert snap.to_dict()["error_rate"] == pytest.approx(1 - snap.success_rate)
    await store.close()


async def test_meter_without_store_snapshots_its_memory() -> None:
    records = make_records(1000)
    meter = Meter()
    for r in records:
        meter.record(r)
    snap = await meter.snapshot()
    assert snap.total_calls == 1000
    assert snap.error_count == sum(1 for r in records if not r.ok)
    assert (await meter.snapshot(tool="health")).total_calls == sum(
        1 for r in records if r.tool == "health"
    )
    await meter.stop()


async def test_bad_snapshot_arguments_are_config_errors() -> None:
    store = MemoryStore()
    with pytest.raises(MeterConfigError):
        await snapshot(store, layer="L9")
    with pytest.raises(MeterConfigError):
        await snapshot(store, since="yesterday")  # type: ignore[arg-type]
    for bound in (float("inf"), float("nan")):
        with pytest.raises(MeterConfigError):
            await snapshot(store, until=bound)
    with pytest.raises(MeterConfigError):
        await snapshot(store, bucket_ms=0)
    await store.close()


@pytest.mark.parametrize("value", [0.0005, 0.01, 0.5, 1.0, 3.3, 150.0, 9_999.0, 1e6])
def test_histogram_buckets_are_within_one_and_a_half_percent(value: float) -> None:
    assert abs(bucket_value(bucket_of(value)) - value) <= 0.0149 * value + 0.001
    assert percentile({bucket_of(value): 3}, 99) == bucket_value(bucket_of(value))
    assert percentile({}, 50) is None


async def test_repeated_snapshots_see_new_calls_in_cached_buckets() -> None:
    store = MemoryStore()
    sink = StoreSink(store, writer="w1", persist_interval=0)
    records = make_records(2000, minutes=10)
    await sink.write(records[:1000])
    first = await snapshot(store, max_buckets=2)
    again = await snapshot(store, max_buckets=2)
    assert first.total_calls == again.total_calls == 1000
    await sink.write(records[1000:])
    later = await snapshot(store, max_buckets=2)
    raw = await store.query(CALLS_NAMESPACE, limit=5000)
    exp = independent(raw)
    assert later.total_calls == 2000
    assert later.error_count == exp["errors"]
    assert close(later.p99_ms, exp["p99"])
    hour_ns = f"meter.rollups.{T0 // 3_600_000}"
    first_minute = (await store.list(hour_ns))[0]
    assert await store.delete(hour_ns, first_minute)
    assert (await snapshot(store, max_buckets=2)).total_calls < 2000
    await sink.close()
    await store.close()
