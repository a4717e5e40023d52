"""Drops and hung sinks are visible and bounded: a rate-limited warning, Prometheus series, a
health document the dashboard reads, and a timeout on every wait on a sink."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import httpx
import orjson
import pytest

from aircore import define_server, define_tool
from airmeter import CallRecord, Layer, MemorySink, Meter, MeterMiddleware, meter_health
from airmeter.metrics_app import prometheus_text, server_metrics_app
from airstore import MemoryStore
from tests.airmeter.prom_parser import parse

BOUND = 30.0  # a hang fails the test instead of blocking the suite


def rec(i: int) -> CallRecord:
    return CallRecord(ts_ms=1_800_000_000_000 + i, server="s", tool="get_user", layer=Layer.L2,
                      latency_ms=1.0, ok=True, request_id=str(i))  # fmt: skip


def _value(text: str, family: str, instance: str) -> float:
    (sample,) = [s for s in parse(text)[family].samples if s.labels == {"instance": instance}]
    return sample.value


async def test_drops_are_warned_once_counted_in_prometheus_and_kept_in_the_store(
    caplog: pytest.LogCaptureFixture,
) -> None:
    store = MemoryStore()
    meter = Meter(store=store, max_pending=5, instance_id="i-1", flush_interval=3600)
    with caplog.at_level(logging.WARNING, logger="airmeter"):
        for i in range(20):  # nothing is delivered meanwhile: 15 are dropped
            meter.record(rec(i))
        await meter.start()
        await meter.flush()  # delivers the 5 it kept
        for i in range(20, 40):
            meter.record(rec(i))  # the queue holds 5 again: 15 more dropped
        await meter.flush()
        await meter.stop()
    assert meter.stats.dropped == 30
    warnings = [m for m in caplog.messages if "records dropped" in m]
    assert len(warnings) == 1  # the final report; nothing in between reached the interval
    assert "30 records dropped" in warnings[0]
    (health,) = await meter_health(store)
    assert (health.instance_id, health.dropped, health.delivered) == ("i-1", 30, 10)
    assert health.degraded
    text = await prometheus_text(meter)
    assert _value(text, "air_meter_records_dropped_total", "i-1") == 30
    assert _value(text, "air_meter_records_total", "i-1") == 40


async def test_a_sink_that_never_returns_cannot_block_snapshot_stop_or_metrics() -> None:
    never = asyncio.Event()
    hung, good = MemorySink(block=never), MemorySink()
    store = MemoryStore()
    hook = MeterMiddleware(sinks=[hung, good], sink_timeout=0.2, instance_id="i-hung")
    server = define_server(
        name="s", tools=[define_tool("get_user", handler=lambda p: "ada")], storage=store,
        meter=hook,
    )  # fmt: skip
    async with asyncio.timeout(BOUND):
        await server.start()
        await server.call_tool("get_user", {})
        snap = await hook.meter.snapshot()  # delivers, waits on the hung sink at most 0.2 s
        assert snap.total_calls == 1
        app = server_metrics_app(server)
        assert app is not None
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://localhost") as client:
            scraped = await client.get("/metrics")
        assert scraped.status_code == 200
        assert _value(scraped.text, "air_meter_sink_timeouts_total", "i-hung") >= 1
        await server.stop()
    assert hung.entered.is_set()
    assert not hung.records
    assert len(good.records) == 1  # the other sink still got the batch
    assert hook.meter.stats.sink_timeouts == 1  # the write; the meter went on without it


async def test_a_sink_that_ignores_cancellation_is_left_behind() -> None:
    release = asyncio.Event()

    class Stubborn:
        def __init__(self) -> None:
            self.finished = False

        async def write(self, records: Any) -> None:
            while not release.is_set():
                try:
                    await release.wait()
                except asyncio.CancelledError:
                    continue  # refuses to be cancelled
            self.finished = True

        async def close(self) -> None:
            return None

    sink = Stubborn()
    meter = Meter(sinks=[sink], sink_timeout=0.1)
    async with asyncio.timeout(BOUND):
        meter.record(rec(1))
        await meter.flush()
        await meter.stop()
    assert meter.stats.sink_timeouts == 1
    release.set()  # let the abandoned write end, so the test leaves no task behind
    for _ in range(100):
        if sink.finished:
            break
        await asyncio.sleep(0)
    assert sink.finished


async def test_the_call_log_is_capped_by_age_and_size_while_rollups_stay() -> None:
    from airmeter import snapshot
    from airmeter.store_sink import DEFAULT_ROLLUP_TTL

    assert DEFAULT_ROLLUP_TTL == 400 * 86_400.0
    now_ms = 1_800_000_000_000
    store = MemoryStore(clock=lambda: now_ms / 1000)
    meter = Meter(store=store, log_max_age=7 * 86_400.0, log_max_bytes=200_000)
    recent = [rec(i) for i in range(10)]  # at "now"
    ten_days_ago = [
        CallRecord(ts_ms=now_ms - 10 * 86_400_000 + i, server="s", tool="get_user",
                   layer=Layer.L2, latency_ms=1.0, ok=True, request_id=f"o{i}")
        for i in range(10)
    ]  # fmt: skip
    for r in ten_days_ago + recent:
        meter.record(r)
    await meter.flush()
    for i in range(5000):  # ~100 bytes a line: more than 200 000 bytes
        meter.record(rec(100 + i))
    await meter.stop()
    logged = await store.query("meter.calls", limit=10_000)
    assert not any(str(e.get("request_id", "")).startswith("o") for e in logged)  # age cap
    assert sum(len(orjson.dumps(e)) + 1 for e in logged) <= 200_000  # size cap
    assert len(logged) < 5010
    snap = await snapshot(store)
    assert snap.total_calls == 5020  # the rollups keep every call
