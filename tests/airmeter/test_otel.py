"""OtelSink against a real OTLP/HTTP receiver, and with the collector down or unresponsive."""

from __future__ import annotations

import asyncio
import socket
import threading
from collections.abc import AsyncIterator, Iterator, Sequence
from typing import Any

import pytest
from opentelemetry import trace
from opentelemetry.proto.trace.v1.trace_pb2 import Span as PbSpan
from opentelemetry.proto.trace.v1.trace_pb2 import Status as PbStatus
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExporter, SpanExportResult
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind

from airmeter import CallRecord, Layer
from airmeter.errors import MeterConfigError
from airmeter.otel import OtelSink
from airmeter.otel_settings import otel_settings
from airmeter.otel_span import annotate_current_span
from airmeter.semconv import DURATION_BUCKETS_S
from tests.airmeter.otlp_receiver import Receiver, otlp_receiver

TS = 1_760_000_000_000


def _record(tool: str, layer: Layer, **kw: Any) -> CallRecord:
    base: dict[str, Any] = {
        "ts_ms": TS,
        "server": "demo",
        "tool": tool,
        "layer": layer,
        "latency_ms": 12.5,
        "ok": True,
        "request_id": "7",
        "session_id": "sess-1",
        "protocol_version": "2025-11-25",
        "transport": "stdio",
    }
    base.update(kw)
    return CallRecord(**base)


RECORDS = [
    _record("get_user", Layer.L2),
    _record("get_user", Layer.L2, latency_ms=150.0, request_id="8"),
    _record("fetch_url", Layer.L5, ok=False, error_type="tool_error", latency_ms=700.0),
    _record("summarize", Layer.L4, ok=False, error_type="TimeoutError", transport="http"),
]


def _attrs(span: Any) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for kv in span.attributes:
        value = kv.value
        out[kv.key] = getattr(value, value.WhichOneof("value"))
    return out


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    with otlp_receiver() as rec:
        yield rec


@pytest.fixture
async def sink(receiver: Receiver) -> AsyncIterator[OtelSink]:
    env = {"OTEL_EXPORTER_OTLP_ENDPOINT": receiver.url, "OTEL_SERVICE_NAME": "air-test"}
    created = OtelSink.from_env(env)
    assert created is not None
    yield created
    await created.close()


async def test_each_record_arrives_as_a_server_span_named_after_the_tool(
    sink: OtelSink, receiver: Receiver
) -> None:
    await sink.write(RECORDS)
    assert await sink.force_flush()
    assert receiver.wait_for(lambda: len(receiver.spans()) >= 4)
    spans = {(s.name, _attrs(s).get("jsonrpc.request.id")): s for s in receiver.spans()}
    assert set(spans) == {
        ("tools/call get_user", "7"),
        ("tools/call get_user", "8"),
        ("tools/call fetch_url", "7"),
        ("tools/call summarize", "7"),
    }
    ok = spans[("tools/call get_user", "7")]
    assert ok.kind == PbSpan.SPAN_KIND_SERVER
    assert ok.start_time_unix_nano == TS * 1_000_000
    assert ok.end_time_unix_nano - ok.start_time_unix_nano == 12_500_000
    assert _attrs(ok) == {
        "mcp.method.name": "tools/call",
        "gen_ai.tool.name": "get_user",
        "gen_ai.operation.name": "execute_tool",
        "jsonrpc.request.id": "7",
        "mcp.protocol.version": "2025-11-25",
        "mcp.session.id": "sess-1",
        "network.transport": "pipe",
        "air.layer": "L2",
        "air.server": "demo",
    }
    assert ok.status.code != PbStatus.STATUS_CODE_ERROR
    tool_error = spans[("tools/call fetch_url", "7")]
    assert _attrs(tool_error)["error.type"] == "tool_error"
    assert _attrs(tool_error)["air.layer"] == "L5"
    assert tool_error.status.code == PbStatus.STATUS_CODE_ERROR
    crashed = _attrs(spans[("tools/call summarize", "7")])
    assert crashed["error.type"] == "TimeoutError"
    assert crashed["network.transport"] == "tcp"
    resource = receiver.traces[0].resource_spans[0].resource
    service = [kv.value.string_value for kv in resource.attributes if kv.key == "service.name"]
    assert service == ["air-test"]


async def test_duration_histogram_is_in_seconds_with_the_advised_buckets(
    sink: OtelSink, receiver: Receiver
) -> None:
    await sink.write(RECORDS)
    assert await sink.force_flush()
    assert receiver.wait_for(lambda: bool(receiver.metric_points("mcp.server.operation.duration")))
    metric = receiver.metric_points("mcp.server.operation.duration")[-1]
    assert metric.unit == "s"
    points = {
        (_attrs(p)["gen_ai.tool.name"], _attrs(p).get("error.type")): p
        for p in metric.histogram.data_points
    }
    assert set(points) == {
        ("get_user", None),
        ("fetch_url", "tool_error"),
        ("summarize", "TimeoutError"),
    }
    get_user = points[("get_user", None)]
    assert list(get_user.explicit_bounds) == list(DURATION_BUCKETS_S)
    assert get_user.count == 2
    assert get_user.sum == pytest.approx(0.1625)
    # 0.0125 s falls in (0.01, 0.02], 0.15 s in (0.1, 0.2]
    assert list(get_user.bucket_counts) == [0, 1, 0, 0, 1] + [0] * 10
    assert _attrs(get_user)["air.layer"] == "L2"


async def test_call_counter_counts_by_layer(sink: OtelSink, receiver: Receiver) -> None:
    await sink.write(RECORDS)
    assert await sink.force_flush()
    assert receiver.wait_for(lambda: bool(receiver.metric_points("air.mcp.calls")))
    metric = receiver.metric_points("air.mcp.calls")[-1]
    assert metric.sum.is_monotonic
    by_layer: dict[str, int] = {}
    for point in metric.sum.data_points:
        layer = _attrs(point)["air.layer"]
        by_layer[layer] = by_layer.get(layer, 0) + point.as_int
    assert by_layer == {"L2": 2, "L5": 1, "L4": 1}


async def test_signal_specific_endpoint_wins_over_the_base(receiver: Receiver) -> None:
    env = {
        "OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:9/nowhere",
        "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": f"{receiver.url}/custom/v1/traces",
        "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT": f"{receiver.url}/custom/v1/metrics",
    }
    sink = OtelSink.from_env(env)
    assert sink is not None
    try:
        await sink.write(RECORDS[:1])
        assert await sink.force_flush()
        assert receiver.wait_for(
            lambda: {"/custom/v1/traces", "/custom/v1/metrics"} <= set(receiver.paths)
        )
    finally:
        await sink.close()


def _refused_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port  # closed again: connecting is refused


async def test_collector_down_never_raises_and_records_keep_flowing() -> None:
    env = {"OTEL_EXPORTER_OTLP_ENDPOINT": f"http://127.0.0.1:{_refused_port()}"}
    sink = OtelSink.from_env(env)
    assert sink is not None
    await sink.write(RECORDS)
    await sink.force_flush()  # exports fail (logged by the SDK), nothing raises
    await sink.write(RECORDS)
    await sink.force_flush()
    assert sink.spans_started == 8
    assert (sink.write_errors, sink.dropped) == (0, 0)
    await asyncio.wait_for(sink.close(), timeout=2.0)


async def test_a_stuck_exporter_makes_the_sink_drop_and_count_never_block() -> None:
    release = threading.Event()
    entered = threading.Event()

    class StuckExporter(SpanExporter):
        def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
            entered.set()
            release.wait(10)
            return SpanExportResult.SUCCESS

    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(StuckExporter()))  # exports inline
    meter_provider = MeterProvider()
    sink = OtelSink(
        settings=otel_settings({}, requested=True),
        tracer_provider=provider,
        meter_provider=meter_provider,
        max_pending_batches=2,
    )
    try:
        await sink.write(RECORDS[:1])
        assert await asyncio.to_thread(entered.wait, 10)  # the worker is stuck in export
        for _ in range(5):
            await sink.write(RECORDS)  # returns at once: queued or dropped
        assert sink.dropped == 3 * len(RECORDS)
    finally:
        release.set()
        await sink.close()
        provider.shutdown()
        meter_provider.shutdown()
    assert sink.spans_started == 1 + 2 * len(RECORDS)


async def test_close_with_an_unresponsive_collector_returns_in_bounded_time() -> None:
    accepted = asyncio.Event()
    held: list[asyncio.StreamWriter] = []

    async def black_hole(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        held.append(writer)  # read nothing, answer nothing
        accepted.set()

    server = await asyncio.start_server(black_hole, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    sink = OtelSink.from_env({"OTEL_EXPORTER_OTLP_ENDPOINT": f"http://127.0.0.1:{port}"})
    assert sink is not None
    try:
        await sink.write(RECORDS)
        # close() must not wait for the stuck exports beyond its own bound
        await asyncio.wait_for(sink.close(), timeout=2.0)
        await asyncio.wait_for(accepted.wait(), timeout=10)
    finally:
        for writer in held:
            writer.close()
        server.close()
        await server.wait_closed()


async def test_a_write_after_close_is_ignored(sink: OtelSink) -> None:
    await sink.close()
    await sink.write(RECORDS)
    assert sink.spans_started == 0
    await sink.close()  # idempotent


async def test_own_providers_leave_the_global_ones_alone(sink: OtelSink) -> None:
    await sink.write(RECORDS[:1])
    assert not isinstance(trace.get_tracer_provider(), TracerProvider)


async def test_sdk_span_of_the_call_gets_our_attributes_and_no_duplicate(
    receiver: Receiver,
) -> None:
    sdk_spans = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(sdk_spans))
    tracer = provider.get_tracer("mcp-python-sdk")
    record = _record("get_user", Layer.L2)
    attrs = {"mcp.method.name": "tools/call", "gen_ai.tool.name": "get_user"}
    with tracer.start_as_current_span("tools/call get_user", kind=SpanKind.SERVER) as span:
        span.set_attributes(attrs)
        assert annotate_current_span(record)
    sink = OtelSink.from_env({"OTEL_EXPORTER_OTLP_ENDPOINT": receiver.url})
    assert sink is not None
    try:
        await sink.write([record])
        assert await sink.force_flush()
        assert receiver.wait_for(lambda: bool(receiver.metric_points("air.mcp.calls")))
        assert sink.spans_started == 0
        assert receiver.spans() == []
    finally:
        await sink.close()
    (finished,) = sdk_spans.get_finished_spans()
    assert finished.attributes is not None
    assert finished.attributes["air.layer"] == "L2"
    assert finished.attributes["jsonrpc.request.id"] == "7"
    provider.shutdown()


def test_a_span_of_something_else_is_not_annotated() -> None:
    provider = TracerProvider()
    tracer = provider.get_tracer("app")
    record = _record("get_user", Layer.L2)
    with tracer.start_as_current_span("GET /mcp", kind=SpanKind.SERVER):
        assert not annotate_current_span(record)
    other = {"mcp.method.name": "tools/call", "gen_ai.tool.name": "other_tool"}
    with tracer.start_as_current_span("tools/call other", kind=SpanKind.SERVER, attributes=other):
        assert not annotate_current_span(record)
    assert not annotate_current_span(record)  # no span at all
    assert not record.traced
    provider.shutdown()


def test_settings_follow_the_environment() -> None:
    assert OtelSink.from_env({}) is None
    off = {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318", "OTEL_SDK_DISABLED": "true"}
    assert OtelSink.from_env(off) is None
    assert OtelSink.from_env({"OTEL_SDK_DISABLED": "TRUE"}, requested=True) is None
    settings = otel_settings({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318/"})
    assert settings.enabled
    assert settings.traces_endpoint == "http://c:4318/v1/traces"
    assert settings.metrics_endpoint == "http://c:4318/v1/metrics"
    assert otel_settings({}, requested=True).traces_endpoint == "http://localhost:4318/v1/traces"
    grpc = otel_settings({"OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"}, requested=True)
    assert (grpc.traces_protocol, grpc.traces_endpoint) == ("grpc", "http://localhost:4317")
    odd = otel_settings(
        {"OTEL_EXPORTER_OTLP_PROTOCOL": "http/json", "OTEL_BSP_MAX_QUEUE_SIZE": "-3"}
    )
    assert (odd.enabled, odd.traces_protocol, odd.max_queue_size) == (False, "http/protobuf", 2048)
    named = otel_settings({"OTEL_RESOURCE_ATTRIBUTES": "a=b,service.name=svc"}, service_name="x")
    assert named.service_name == "svc"
    assert otel_settings({}, service_name="x").service_name == "x"
    with pytest.raises(MeterConfigError, match="export_timeout_s"):
        otel_settings({}, export_timeout_s=0)


async def test_grpc_without_its_package_falls_back_to_http(
    receiver: Receiver, monkeypatch: pytest.MonkeyPatch
) -> None:
    from airmeter import _otel_exporters

    monkeypatch.setattr(_otel_exporters, "_GRPC_TRACES", "airmeter_no_such_module.traces")
    monkeypatch.setattr(_otel_exporters, "_GRPC_METRICS", "airmeter_no_such_module.metrics")
    env = {"OTEL_EXPORTER_OTLP_ENDPOINT": receiver.url, "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"}
    sink = OtelSink.from_env(env)
    assert sink is not None
    assert sink.settings.traces_protocol == "grpc"
    try:
        await sink.write(RECORDS[:1])
        assert await sink.force_flush()
        assert receiver.wait_for(lambda: len(receiver.spans()) == 1)
    finally:
        await sink.close()


async def test_global_providers_are_used_when_asked_and_never_shut_down() -> None:
    before = trace.get_tracer_provider()
    sink = OtelSink(settings=otel_settings({}, requested=True), use_global_providers=True)
    await sink.write(RECORDS)
    assert await sink.force_flush()
    await sink.close()
    assert sink.write_errors == 0
    assert sink.spans_started == len(RECORDS)  # started on the global (here no-op) provider
    assert trace.get_tracer_provider() is before
