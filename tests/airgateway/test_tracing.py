"""One trace from client to gateway to server: the client's span, the gateway's span and the
aircore server's span reach a real OTLP receiver with one trace id and the right parents, for
a stateless 2026-07-28 call (the fast path) and a legacy-session call."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

from tests.airgateway.procs import Proc, air, free_port, http_replica, started
from tests.airgateway.rpc import envelope, legacy_request
from tests.airmeter.otlp_receiver import Receiver, otlp_receiver

pytestmark = pytest.mark.slow
WAIT = 30.0
_KIND_SERVER = 2  # the OTLP protobuf enum value of SPAN_KIND_SERVER


@pytest.fixture(scope="module")
def traced(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Proc, Receiver]]:
    tmp = tmp_path_factory.mktemp("traced")
    port = free_port()
    config = tmp / "gw.yml"
    config.write_text(f"servers:\n  - name: notes\n    url: http://127.0.0.1:{port}/mcp\n")
    with otlp_receiver() as receiver:
        env = {"OTEL_EXPORTER_OTLP_ENDPOINT": receiver.url, "OTEL_BSP_SCHEDULE_DELAY": "100"}
        upstream = [*http_replica("a", port), "--otel"]
        gateway = air("gateway", "--config", str(config), "--port", "0", "--store", "memory://",
                      "--no-meter", "--otel")  # fmt: skip
        with (
            started(upstream, env={"REPLICA": "a", "OTEL_SERVICE_NAME": "upstream", **env}),
            started(gateway, env={"OTEL_SERVICE_NAME": "gateway", **env}) as gw,
        ):
            yield gw, receiver


def _client_span() -> tuple[Any, dict[str, str], InMemorySpanExporter]:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    span = provider.get_tracer("test-client").start_span("client call", kind=SpanKind.CLIENT)
    carrier: dict[str, str] = {}
    TraceContextTextMapPropagator().inject(carrier, context=trace.set_span_in_context(span))
    return span, carrier, exporter


def _chain(receiver: Receiver, trace_id: bytes) -> tuple[Any, Any]:
    """(the gateway's span, the server's span) of one trace, once both arrived."""

    def found() -> bool:
        mine = [s for s in receiver.spans() if s.trace_id == trace_id]
        return len(mine) >= 2

    assert receiver.wait_for(found, WAIT), receiver.spans()
    spans = [s for s in receiver.spans() if s.trace_id == trace_id]
    keys = [{kv.key for kv in s.attributes} for s in spans]
    gateway = [s for s, k in zip(spans, keys, strict=True) if "air.gateway.upstream" in k]
    server = [s for s, k in zip(spans, keys, strict=True) if "air.gateway.upstream" not in k]
    assert len(gateway) == 1, spans
    assert len(server) == 1, spans
    return gateway[0], server[0]


def _attrs(span: Any) -> dict[str, Any]:
    return {kv.key: getattr(kv.value, kv.value.WhichOneof("value")) for kv in span.attributes}


def _check(receiver: Receiver, client_span: Any, exporter: InMemorySpanExporter) -> None:
    client_span.end()
    (client,) = exporter.get_finished_spans()
    trace_id = client.context.trace_id.to_bytes(16, "big")
    gateway, server = _chain(receiver, trace_id)
    assert gateway.parent_span_id == client.context.span_id.to_bytes(8, "big")
    assert server.parent_span_id == gateway.span_id
    assert gateway.kind == _KIND_SERVER
    assert server.kind == _KIND_SERVER
    attrs = _attrs(gateway)
    assert gateway.name == "tools/call echo"
    assert attrs["mcp.method.name"] == "tools/call"
    assert attrs["gen_ai.tool.name"] == "echo"
    assert attrs["air.gateway.upstream"] == "notes"
    assert attrs["air.gateway.replica"] == "notes#0"
    assert server.name == "tools/call echo"


async def test_a_stateless_call_makes_one_trace_client_gateway_server(
    traced: tuple[Proc, Receiver],
) -> None:
    gateway, receiver = traced
    span, carrier, exporter = _client_span()
    body, headers = envelope("tools/call", {"name": "echo", "arguments": {"text": "t"},
                                            "_meta": dict(carrier)})  # fmt: skip
    async with httpx.AsyncClient(timeout=WAIT) as http:
        reply = (await http.post(gateway.url, json=body, headers=headers)).json()
    assert reply["result"]["content"][0]["text"] == "a:t"
    _check(receiver, span, exporter)


async def test_a_legacy_session_call_makes_one_trace_client_gateway_server(
    traced: tuple[Proc, Receiver],
) -> None:
    gateway, receiver = traced
    span, carrier, exporter = _client_span()
    async with httpx.AsyncClient(timeout=WAIT) as http:
        init = await legacy_request(http, gateway.url, "initialize", {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "t", "version": "1"}}, None)  # fmt: skip
        sid = init.headers["mcp-session-id"]
        call = await legacy_request(http, gateway.url, "tools/call", {
            "name": "echo", "arguments": {"text": "l"}, "_meta": dict(carrier)}, sid)  # fmt: skip
    assert call.json()["result"]["content"][0]["text"] == "a:l"
    _check(receiver, span, exporter)


async def test_a_call_without_trace_context_starts_a_trace_at_the_gateway(
    traced: tuple[Proc, Receiver],
) -> None:
    gateway, receiver = traced
    body, headers = envelope("tools/call", {"name": "echo", "arguments": {"text": "n"}})
    async with httpx.AsyncClient(timeout=WAIT) as http:
        reply = (await http.post(gateway.url, json=body, headers=headers)).json()
    assert reply["result"]["content"][0]["text"] == "a:n"

    def rooted() -> bool:
        return any(
            not s.parent_span_id and "air.gateway.upstream" in {kv.key for kv in s.attributes}
            for s in receiver.spans()
        )

    assert receiver.wait_for(rooted, WAIT)
    root = next(s for s in receiver.spans() if not s.parent_span_id
                and "air.gateway.upstream" in {kv.key for kv in s.attributes})  # fmt: skip
    _gateway, server = _chain(receiver, root.trace_id)
    assert server.parent_span_id == root.span_id
