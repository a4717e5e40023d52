"""Trace context from a request's ``_meta``: a record's span joins the caller's trace, a live
call span (the gateway's) is passed on and gets no duplicate from the sink."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind

from airmeter import CallRecord, Layer
from airmeter import trace_context as tc
from airmeter.otel import OtelSink

TRACE = "0af7651916cd43dd8448eb211c80319c"
PARENT = "b7ad6b7169203331"
CARRIER = {"traceparent": f"00-{TRACE}-{PARENT}-01", "tracestate": "vendor=1"}


def _record(call_id: str, **kw: Any) -> CallRecord:
    base: dict[str, Any] = {
        "ts_ms": 1_760_000_000_000,
        "server": "s",
        "tool": "echo",
        "layer": Layer.L1,
        "latency_ms": 1.0,
        "ok": True,
        "call_id": call_id,
    }
    base.update(kw)  # fmt: skip
    return CallRecord(**base)


@pytest.fixture
async def sink() -> AsyncIterator[tuple[OtelSink, InMemorySpanExporter]]:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    created = OtelSink(tracer_provider=provider)
    yield created, exporter
    await created.close()


def test_nothing_is_remembered_without_an_open_sink() -> None:
    assert not tc.exporting()
    tc.remember_parent("c1", CARRIER)
    assert tc.take_parent("c1") is None


async def test_a_records_span_is_the_child_of_the_requests_traceparent(
    sink: tuple[OtelSink, InMemorySpanExporter],
) -> None:
    otel, exporter = sink
    tc.remember_parent("c1", CARRIER)
    await otel.write([_record("c1"), _record("c2")])
    assert await otel.force_flush()
    spans = {s.attributes["air.call.id"]: s for s in exporter.get_finished_spans()}  # type: ignore[index]
    joined, alone = spans["c1"], spans["c2"]
    assert f"{joined.context.trace_id:032x}" == TRACE
    assert joined.parent is not None
    assert f"{joined.parent.span_id:016x}" == PARENT
    assert alone.parent is None
    assert f"{alone.context.trace_id:032x}" != TRACE
    assert tc.take_parent("c1") is None  # consumed


async def test_a_live_call_span_is_passed_on_and_the_sink_adds_no_second_one(
    sink: tuple[OtelSink, InMemorySpanExporter],
) -> None:
    otel, exporter = sink
    span = otel.start_call_span("echo", carrier=CARRIER, attributes={"air.gateway.replica": "a#0"})
    passed: dict[str, Any] = {"traceparent": "00-" + "1" * 32 + "-" + "2" * 16 + "-01", "x": 1}
    span.inject(passed)
    record = _record("g1", ok=False, error_type="tool_error")
    span.end(record, {"air.gateway.upstream": "notes"})
    await otel.write([record])
    assert await otel.force_flush()
    (finished,) = exporter.get_finished_spans()
    assert finished.kind is SpanKind.SERVER
    assert finished.name == "tools/call echo"
    assert f"{finished.context.trace_id:032x}" == TRACE
    assert finished.parent is not None
    assert f"{finished.parent.span_id:016x}" == PARENT
    assert passed["traceparent"] == f"00-{TRACE}-{finished.context.span_id:016x}-01"
    assert passed["x"] == 1
    attrs = dict(finished.attributes or {})
    assert attrs["error.type"] == "tool_error"
    assert attrs["air.gateway.upstream"] == "notes"
    assert attrs["air.gateway.replica"] == "a#0"
    assert otel.spans_started == 0  # the sink made none for that record


@pytest.mark.parametrize(
    "carrier",
    [None, {}, {"traceparent": "junk"}, {"traceparent": 7}, {"traceparent": "00-" + "0" * 32 + "-"
                                                             + "0" * 16 + "-01"}],
)  # fmt: skip
async def test_a_missing_or_invalid_traceparent_starts_a_new_trace(
    sink: tuple[OtelSink, InMemorySpanExporter], carrier: dict[str, Any] | None
) -> None:
    otel, exporter = sink
    tc.remember_parent("c3", carrier)
    await otel.write([_record("c3")])
    assert await otel.force_flush()
    (span,) = exporter.get_finished_spans()
    assert span.parent is None


async def test_the_tables_stay_bounded(sink: tuple[OtelSink, InMemorySpanExporter]) -> None:
    for i in range(tc.MAX_REMEMBERED + 50):
        tc.remember_parent(f"k{i}", CARRIER)
        tc.mark_traced(f"k{i}")
    assert tc.take_parent("k0") is None  # the oldest went first
    assert tc.take_parent(f"k{tc.MAX_REMEMBERED + 49}") is not None
    assert not tc.take_traced("k0")
    assert tc.take_traced(f"k{tc.MAX_REMEMBERED + 49}")
