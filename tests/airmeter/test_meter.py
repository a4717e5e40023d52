"""The Meter: ring buffer, bounded pending batch with drop counting, delivery, zero loss."""

from __future__ import annotations

import asyncio
import logging

import pytest

from airmeter import CALLS_NAMESPACE, CallRecord, Layer, MemorySink, Meter, StoreSink
from airmeter.errors import MeterClosedError, MeterConfigError
from airstore import MemoryStore
from tests.airmeter.helpers import T0, make_records


def rec(i: int, tool: str = "get_user") -> CallRecord:
    return CallRecord(
        ts_ms=T0 + i,
        server="s",
        tool=tool,
        layer=Layer.L2,
        latency_ms=1.0,
        ok=True,
        request_id=str(i),
    )


async def test_records_reach_every_sink_in_order() -> None:
    a, b = MemorySink(), MemorySink()
    async with Meter(sinks=[a, b], flush_interval=0.01) as meter:
        for i in range(50):
            meter.record(rec(i))
        got = await a.wait_for(50)
        await b.wait_for(50)
    assert [r.request_id for r in got] == [str(i) for i in range(50)]
    assert a.closed
    assert b.closed
    assert meter.stats.delivered == 50


async def test_ring_buffer_keeps_only_the_newest_records() -> None:
    meter = Meter(ring_size=5)
    for i in range(12):
        meter.record(rec(i))
    assert [r.request_id for r in meter.recent()] == ["7", "8", "9", "10", "11"]
    assert [r.request_id for r in meter.recent(2)] == ["10", "11"]
    assert meter.recent(0) == []
    await meter.stop()


async def test_overload_drops_and_counts_without_blocking() -> None:
    gate = asyncio.Event()
    slow = MemorySink(block=gate)
    meter = Meter(sinks=[slow], max_pending=10, batch_size=1, flush_interval=0.01)
    await meter.start()
    meter.record(rec(0))
    await asyncio.wait_for(slow.entered.wait(), 5)  # the sink now holds batch [0]
    for i in range(1, 31):
        meter.record(rec(i))  # returns at once although the sink is stuck
    assert meter.stats.dropped == 20
    assert meter.stats.pending == 10
    gate.set()
    await meter.stop()
    assert [r.request_id for r in slow.records] == [str(i) for i in range(11)]
    stats = meter.stats
    assert (stats.recorded, stats.delivered, stats.dropped, stats.pending) == (31, 11, 20, 0)


async def test_clean_stop_delivers_everything_pending() -> None:
    store = MemoryStore()
    sink = MemorySink()
    meter = Meter(store=store, sinks=[sink], flush_interval=3600, batch_size=10**6)
    await meter.start()
    records = make_records(5000)
    for r in records:
        meter.record(r)
    assert meter.stats.pending == 5000  # nothing delivered yet: the interval is an hour
    await meter.stop()
    logged = await store.query(CALLS_NAMESPACE, limit=10_000)
    assert len(logged) == 5000
    assert sorted(e["request_id"] for e in logged) == sorted(r.request_id for r in records)
    assert len(sink.records) == 5000
    assert meter.stats.dropped == 0
    await store.close()


async def test_stop_without_start_still_delivers() -> None:
    sink = MemorySink()
    meter = Meter(sinks=[sink])
    meter.record(rec(1))
    await meter.stop()
    assert len(sink.records) == 1
    await meter.stop()  # idempotent


async def test_a_failing_sink_is_counted_and_does_not_stop_the_others() -> None:
    bad, good = MemorySink(fail=RuntimeError("collector down")), MemorySink()
    async with Meter(sinks=[bad, good], flush_interval=0.01) as meter:
        meter.record(rec(1))
        await good.wait_for(1)
    assert meter.stats.sink_errors >= 1
    assert len(good.records) == 1


async def test_a_sink_failing_on_every_delivery_is_logged_once_not_each_time(
    caplog: pytest.LogCaptureFixture,
) -> None:
    bad = MemorySink(fail=RuntimeError("collector down"))
    meter = Meter(sinks=[bad])
    with caplog.at_level(logging.ERROR, logger="airmeter.meter"):
        for i in range(10):
            meter.record(rec(i))
            await meter.flush()
    assert meter.stats.sink_errors == 10
    logged = [r for r in caplog.records if "failed on" in r.getMessage()]
    assert len(logged) == 1
    assert logged[0].exc_info is not None
    assert "collector down" in caplog.text


async def test_records_after_stop_are_dropped_and_start_is_refused() -> None:
    meter = Meter()
    await meter.stop()
    meter.record(rec(1))
    assert meter.stats.dropped == 1
    with pytest.raises(MeterClosedError):
        await meter.start()


def test_bad_options_are_config_errors() -> None:
    with pytest.raises(MeterConfigError):
        Meter(max_pending=0)
    with pytest.raises(MeterConfigError):
        StoreSink(MemoryStore(), writer="a:b")


async def test_store_sink_writes_one_log_entry_per_call_with_the_log_form() -> None:
    store = MemoryStore()
    sink = StoreSink(store, writer="w1")
    r = CallRecord(
        ts_ms=T0,
        server="demo",
        tool="fetch_url",
        layer=Layer.L5,
        latency_ms=12.5,
        ok=False,
        error_type="tool_error",
        request_id="42",
        session_id="s1",
        transport="pipe",
        input_bytes=10,
        output_bytes=20,
    )
    await sink.write([r])
    await sink.close()
    (entry,) = await store.query(CALLS_NAMESPACE)
    assert entry == {
        "_ts": T0,
        "server": "demo",
        "tool": "fetch_url",
        "layer": "L5",
        "latency_ms": 12.5,
        "ok": False,
        "error_type": "tool_error",
        "request_id": "42",
        "session_id": "s1",
        "transport": "pipe",
        "input_bytes": 10,
        "output_bytes": 20,
    }
    assert CallRecord.from_log(entry) == r
    hour = T0 // 3_600_000
    assert await store.list(f"meter.rollups.{hour}") == [f"{T0:013d}:w1"]
    assert await store.get("meter.rollups", "hours:w1") == [hour]


async def test_a_restarted_writer_merges_into_the_stored_minute() -> None:
    store = MemoryStore()
    for _ in range(2):
        sink = StoreSink(store, writer="w1")
        await sink.write([rec(1), rec(2)])
        await sink.close()
    meter = Meter(store=store)
    snap = await meter.snapshot()
    assert snap.total_calls == 4
    await meter.stop()


def test_instance_id_comes_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AIR_INSTANCE_ID", "web-1")
    assert Meter().instance_id == "web-1"
    monkeypatch.setenv("AIR_INSTANCE_ID", "bad:id")
    assert Meter().instance_id != "bad:id"
    monkeypatch.delenv("AIR_INSTANCE_ID")
    assert Meter(instance_id="x").instance_id == "x"


async def test_live_view_summarizes_the_ring_including_undelivered_calls() -> None:
    meter = Meter(ring_size=100, flush_interval=3600)
    records = make_records(250)
    for r in records:
        meter.record(r)
    live = meter.live()
    newest = records[-100:]
    assert live.total_calls == 100
    assert live.error_count == sum(1 for r in newest if not r.ok)
    assert meter.live(tool="health").total_calls == sum(1 for r in newest if r.tool == "health")
    await meter.stop()
