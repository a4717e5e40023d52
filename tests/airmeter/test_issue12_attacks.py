"""The meter's part of the adversarial pass (issue 12, items 5-8), each original attack replayed
against real parts: megabyte arguments into ``memory://``, the secret shapes in error messages
with capture off (call log, OTLP spans at a real receiver, Prometheus text), 200,000 records
offered to a meter that delivers nothing, and a server's call log on disk with the defaults."""

from __future__ import annotations

import gc
import logging
import tracemalloc
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest

from aircore import define_server, define_tool
from airmeter import (
    CallRecord,
    Layer,
    Meter,
    MeterMiddleware,
    OtelSink,
    meter_health,
    recent_calls,
    snapshot,
)
from airmeter.fields import MAX_LINE_BYTES
from airmeter.metrics_app import prometheus_text
from airmeter.record import CALLS_NAMESPACE
from airmeter.store_sink import DEFAULT_LOG_MAX_AGE, DEFAULT_LOG_MAX_BYTES
from airstore import MemoryStore
from airstore.file import FileStore
from tests.airmeter.otlp_receiver import Receiver, otlp_receiver
from tests.airmeter.prom_parser import parse
from tests.airmeter.test_redact_shapes import SHAPES

MB = 1024 * 1024


async def test_megabyte_arguments_into_memory_leave_no_megabytes_behind() -> None:
    # before: a 3 MB argument made a 3 MB meter line; memory:// grew ~6 MB a call, for good
    def echo(params: dict[str, Any]) -> Any:
        return {"size": len(params["blob"])}

    store = MemoryStore()
    tool = define_tool("echo", params={"blob": "string"}, handler=echo)
    hook = MeterMiddleware(capture_arguments=True, capture_results=True)
    server = define_server(name="s", tools=[tool], storage=store, meter=hook)
    async with server:
        await server.call_tool("echo", {"blob": "warm-up"})
        await hook.meter.flush()
        gc.collect()
        tracemalloc.start()
        try:
            before, _ = tracemalloc.get_traced_memory()
            for i in range(20):
                await server.call_tool("echo", {"blob": chr(97 + i) * (3 * MB)})
            await hook.meter.flush()
            gc.collect()
            after, _ = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
        lines = await store.query(CALLS_NAMESPACE, limit=100)
        shown = await recent_calls(store, limit=100)  # what the dashboard's table reads
    assert after - before < 2 * MB  # 20 calls; it was ~120 MB
    assert len(lines) == 21
    assert max(len(orjson.dumps(line)) for line in lines) <= MAX_LINE_BYTES
    assert sum(len(orjson.dumps(r.to_log())) for r in shown) < 21 * 16 * 1024
    assert all(r.arguments_bytes and r.arguments_bytes > 3 * MB for r in shown[:20])


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    with otlp_receiver() as rec:
        yield rec


async def test_secret_shapes_in_error_messages_reach_no_log_span_or_metric_with_capture_off(
    receiver: Receiver,
) -> None:
    # before: error messages were recorded and shown with capture off, and never redacted
    def fail(params: dict[str, Any]) -> Any:
        raise ConnectionError(SHAPES[params["i"]][1])

    otel = OtelSink.from_env(
        {"OTEL_EXPORTER_OTLP_ENDPOINT": receiver.url, "OTEL_SERVICE_NAME": "attack"}
    )
    assert otel is not None
    store = MemoryStore()
    hook = MeterMiddleware(sinks=[otel])  # capture off: the default
    tool = define_tool("fail", params={"i": "integer"}, handler=fail)
    server = define_server(name="s", tools=[tool], storage=store, meter=hook)
    async with server:
        for i in range(len(SHAPES)):
            reply = await server.call_tool("fail", {"i": i})
            assert reply["isError"] is True
        await hook.meter.flush()
        metrics = await prometheus_text(hook.meter)
        logged = orjson.dumps(await store.query(CALLS_NAMESPACE, limit=100))
    await otel.close()
    assert receiver.wait_for(lambda: len(receiver.spans()) >= len(SHAPES))
    spans = b"".join(span.SerializeToString() for span in receiver.spans())
    assert parse(metrics)  # well-formed Prometheus text
    for what, _, secret, _ in SHAPES:
        for where, seen in (("log", logged), ("spans", spans), ("metrics", metrics.encode())):
            assert secret.encode() not in seen, (what, where)
    assert b"ConnectionError" in spans  # the spans carry the failure, without the secret


def _rec(i: int) -> CallRecord:
    return CallRecord(ts_ms=1_800_000_000_000 + i, server="s", tool="get_user", layer=Layer.L2,
                      latency_ms=1.0, ok=True, request_id=str(i))  # fmt: skip


async def test_two_hundred_thousand_records_overload_is_warned_counted_and_kept(
    caplog: pytest.LogCaptureFixture,
) -> None:
    # before: 100,000 of 200,000 dropped records showed only in meter.stats
    store = MemoryStore()
    meter = Meter(store=store, instance_id="i-1", flush_interval=3600)
    with caplog.at_level(logging.WARNING, logger="airmeter"):
        for i in range(200_000):  # nothing is delivered meanwhile: half of them overflow
            meter.record(_rec(i))
        await meter.start()
        await meter.stop()
    assert meter.stats.dropped == 100_000
    assert any("100000 records dropped" in m for m in caplog.messages)
    (health,) = await meter_health(store)
    assert (health.dropped, health.delivered, health.degraded) == (100_000, 100_000, True)
    (sample,) = [s for s in parse(await prometheus_text(meter))[
        "air_meter_records_dropped_total"].samples if s.labels == {"instance": "i-1"}]  # fmt: skip
    assert sample.value == 100_000


async def test_a_servers_call_log_on_disk_is_capped_by_default_and_stays_queryable(
    tmp_path: Path,
) -> None:
    # before: 221 MB of call log for 772 k calls, no retention by default
    data = tmp_path / "data"
    tool = define_tool("get_user", params={"id": "string"}, handler=lambda p: {"id": p["id"]})
    server = define_server(name="s", tools=[tool], storage=f"file://{data}", meter=True)
    async with server:
        for i in range(50):
            await server.call_tool("get_user", {"id": str(i)})
    async with FileStore(data) as store:
        (calls,) = [s for s in await store.stats() if s.namespace == CALLS_NAMESPACE]
    assert (calls.max_age, calls.max_bytes) == (DEFAULT_LOG_MAX_AGE, DEFAULT_LOG_MAX_BYTES)
    assert (DEFAULT_LOG_MAX_AGE, DEFAULT_LOG_MAX_BYTES) == (7 * 86_400.0, 1024**3)
    assert calls.log_entries == 50

    # the same caps, small, over rotated gzip segments: bounded on disk, newest first readable
    small = tmp_path / "small"
    async with FileStore(small, max_log_bytes=20_000) as store:
        meter = Meter(store=store, server="s", log_max_bytes=100_000)
        await meter.start()
        for i in range(6000):
            meter.record(_rec(i))
            if i % 500 == 0:
                await meter.flush()
        await meter.stop()
        (calls,) = [s for s in await store.stats() if s.namespace == CALLS_NAMESPACE]
        newest = await recent_calls(store, limit=5, now_ms=1_800_000_000_000 + 10_000)
        snap = await snapshot(store)
    assert calls.segments >= 1
    assert calls.log_bytes <= 100_000 + 20_000  # the cap, give or take the live segment
    assert [r.request_id for r in newest] == ["5999", "5998", "5997", "5996", "5995"]
    assert snap.total_calls == 6000  # the rollups keep every call
