"""Trace context from a request's ``_meta`` travels on the call and its record: a record's span
joins the caller's trace, a live call span (the gateway's) is passed on and gets no duplicate
from the sink, and no module keeps a table of calls."""

from __future__ import annotations

import ast
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind

from aircore import define_server, define_tool
from airmeter import CallRecord, Layer, MeterMiddleware
from airmeter.otel import OtelSink
from airmeter.trace_context import MAX_HEADER, trace_context_of

TRACE = "0af7651916cd43dd8448eb211c80319c"
PARENT = "b7ad6b7169203331"
CARRIER = {"traceparent": f"00-{TRACE}-{PARENT}-01", "tracestate": "vendor=1"}
ROOT = Path(__file__).resolve().parents[2]


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


def test_the_trace_context_is_read_from_meta_and_bounded() -> None:
    assert trace_context_of(CARRIER) == (CARRIER["traceparent"], "vendor=1")
    assert trace_context_of({"traceparent": "p"}) == ("p", None)
    assert trace_context_of(None) == (None, None)
    assert trace_context_of({"tracestate": "vendor=1"}) == (None, None)  # no parent, no state
    assert trace_context_of({"traceparent": 7, "tracestate": "s"}) == (None, None)
    assert trace_context_of({"traceparent": "p" * (MAX_HEADER + 1)}) == (None, None)
    assert trace_context_of({"traceparent": "p", "tracestate": "s" * (MAX_HEADER + 1)}) == (
        "p",
        None,
    )


async def test_a_records_span_is_the_child_of_the_requests_traceparent(
    sink: tuple[OtelSink, InMemorySpanExporter],
) -> None:
    otel, exporter = sink
    parent, state = trace_context_of(CARRIER)
    await otel.write([_record("c1", trace_parent=parent, trace_state=state), _record("c2")])
    assert await otel.force_flush()
    spans = {s.attributes["air.call.id"]: s for s in exporter.get_finished_spans()}  # type: ignore[index]
    joined, alone = spans["c1"], spans["c2"]
    assert f"{joined.context.trace_id:032x}" == TRACE
    assert joined.parent is not None
    assert f"{joined.parent.span_id:016x}" == PARENT
    assert joined.context.trace_state.get("vendor") == "1"
    assert alone.parent is None
    assert f"{alone.context.trace_id:032x}" != TRACE


async def test_a_servers_call_carries_the_trace_context_into_its_span(
    sink: tuple[OtelSink, InMemorySpanExporter],
) -> None:
    # the whole way: tools/call _meta -> ToolContext (a CallInfo) -> CallRecord -> OtelSink
    otel, exporter = sink
    hook = MeterMiddleware(sinks=[otel])
    echo = define_tool("echo", params={"text": "string"}, handler=lambda p, ctx: p["text"])
    server = define_server(name="traced", tools=[echo], meter=hook, storage="memory://")
    async with server:
        for i, meta in enumerate([CARRIER, {}]):
            params = {"name": "echo", "arguments": {"text": "t"}, "_meta": meta}
            answer = await server.handle_message(
                {"jsonrpc": "2.0", "id": i, "method": "tools/call", "params": params}
            )
            assert answer is not None
            assert answer["result"]["content"][0]["text"] == "t"
        await hook.meter.flush()
        assert await otel.force_flush()
    spans = {s.attributes["jsonrpc.request.id"]: s for s in exporter.get_finished_spans()}  # type: ignore[index]
    assert f"{spans['0'].context.trace_id:032x}" == TRACE
    assert spans["0"].parent is not None
    assert f"{spans['0'].parent.span_id:016x}" == PARENT
    assert spans["1"].parent is None


async def test_a_live_call_span_is_passed_on_and_the_sink_adds_no_second_one(
    sink: tuple[OtelSink, InMemorySpanExporter],
) -> None:
    otel, exporter = sink
    span = otel.start_call_span("echo", carrier=CARRIER, attributes={"air.gateway.replica": "a#0"})
    passed: dict[str, Any] = {"traceparent": "00-" + "1" * 32 + "-" + "2" * 16 + "-01", "x": 1}
    span.inject(passed)
    record = _record("g1", ok=False, error_type="tool_error")
    span.end(record, {"air.gateway.upstream": "notes"})
    assert record.traced
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
    parent, state = trace_context_of(carrier)
    await otel.write([_record("c3", trace_parent=parent, trace_state=state)])
    assert await otel.force_flush()
    (span,) = exporter.get_finished_spans()
    assert span.parent is None


def test_the_trace_context_never_reaches_the_call_log() -> None:
    record = _record("c4", trace_parent=CARRIER["traceparent"], trace_state="s", traced=True)
    assert not {"trace_parent", "trace_state", "traced"} & set(record.to_log())


_CONTAINERS = frozenset({"OrderedDict", "dict", "set", "list", "deque", "WeakValueDictionary"})


def _is_container(value: ast.expr | None) -> bool:
    if isinstance(value, ast.Dict | ast.Set):
        return True
    return isinstance(value, ast.Call) and ast.unparse(value.func).split(".")[-1] in _CONTAINERS


@pytest.mark.parametrize("module", ["trace_context", "otel_span", "otel"])
def test_no_module_keeps_a_table_of_calls(module: str) -> None:
    # the trace context travels on the call and its record, not through module-global state
    tree = ast.parse((ROOT / "airmeter" / f"{module}.py").read_text(encoding="utf-8"))
    tables = [
        ast.unparse(node)
        for node in tree.body
        if isinstance(node, ast.Assign | ast.AnnAssign) and _is_container(node.value)
    ]
    assert tables == []
    assert [ast.unparse(n) for n in ast.walk(tree) if isinstance(n, ast.Global)] == []
