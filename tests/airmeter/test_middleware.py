"""The meter middleware against a minimal call context (aircore's ToolContext shape)."""

from __future__ import annotations

from typing import Any

import pytest

from airmeter import (
    CALLS_NAMESPACE,
    Layer,
    MemorySink,
    Meter,
    MeterMiddleware,
    create_meter_hook,
    report_usage,
)
from airmeter.errors import MeterConfigError
from airmeter.redact import REDACTED
from airstore import MemoryStore
from tests.airmeter.fakes import FakeContext, handler_returning


class JsonRpcError(Exception):
    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code


async def _meter_with_sink() -> tuple[Meter, MemorySink]:
    sink = MemorySink()
    meter = Meter(sinks=[sink], server="demo", instance_id="i-1")
    await meter.start()
    return meter, sink


async def test_a_successful_call_is_recorded_with_every_field() -> None:
    meter, sink = await _meter_with_sink()
    mw = MeterMiddleware(meter)
    ctx = FakeContext(
        "get_user",
        {"id": 7},
        request_id="42",
        session_id="s-1",
        transport="pipe",
        tool_meta={"category_key": "users", "version": "1.2.0"},
    )
    result = await mw(ctx, handler_returning({"name": "ada"}))
    assert result == {"name": "ada"}
    await meter.stop()
    (rec,) = sink.records
    assert (rec.tool, rec.layer, rec.ok, rec.error_type) == ("get_user", Layer.L2, True, None)
    assert (rec.server, rec.instance_id, rec.request_id, rec.session_id) == (
        "demo",
        "i-1",
        "42",
        "s-1",
    )
    assert (rec.protocol_version, rec.transport, rec.client_name) == (
        "2025-11-25",
        "pipe",
        "test-client",
    )
    assert (rec.category, rec.tool_version) == ("users", "1.2.0")
    assert rec.input_bytes == len(b'{"id":7}')
    assert rec.output_bytes == len(b'{"name":"ada"}')
    assert rec.latency_ms >= 0
    assert rec.arguments is None  # not recorded unless opted in
    assert rec.result is None


async def test_error_types_and_errors_are_never_swallowed() -> None:
    meter, sink = await _meter_with_sink()
    mw = MeterMiddleware(meter)

    async def raise_value_error(ctx: Any) -> Any:
        raise ValueError("bad input")

    async def raise_rpc(ctx: Any) -> Any:
        raise JsonRpcError(-32602, "invalid params")

    with pytest.raises(ValueError, match="bad input"):
        await mw(FakeContext("fetch_url"), raise_value_error)
    with pytest.raises(JsonRpcError):
        await mw(FakeContext("fetch_url"), raise_rpc)
    error_result = {"content": [{"type": "text", "text": "nope"}], "isError": True}
    assert await mw(FakeContext("fetch_url"), handler_returning(error_result)) is error_result
    await meter.stop()
    assert [(r.ok, r.error_type) for r in sink.records] == [
        (False, "ValueError"),
        (False, "-32602"),
        (False, "tool_error"),
    ]
    assert sink.records[0].error_message == "bad input"


async def test_explicit_layer_and_annotations_from_the_context_classify() -> None:
    meter, sink = await _meter_with_sink()
    mw = MeterMiddleware(meter)
    await mw(FakeContext("frobnicate", layer=6), handler_returning(1))
    await mw(FakeContext("thing", annotations={"openWorldHint": True}), handler_returning(1))
    await meter.stop()
    assert [r.layer for r in sink.records] == [Layer.L6, Layer.L5]


async def test_handlers_report_tokens_and_cost_through_context_or_function() -> None:
    meter, sink = await _meter_with_sink()
    mw = MeterMiddleware(meter)

    async def via_function(ctx: Any) -> str:
        assert report_usage(tokens_in=10, tokens_out=5)
        assert report_usage(tokens_out=5, cost=0.25)
        return "ok"

    async def via_context(ctx: Any) -> str:
        ctx.usage["tokens_in"] = 3
        ctx.usage["cost"] = 1.5
        return "ok"

    await mw(FakeContext("generate_text"), via_function)
    await mw(FakeContext("generate_text"), via_context)
    await meter.stop()
    a, b = sink.records
    assert (a.tokens_in, a.tokens_out, a.cost) == (10, 10, 0.25)
    assert (b.tokens_in, b.tokens_out, b.cost) == (3, None, 1.5)
    assert not report_usage(tokens_in=1)  # outside a metered call


async def test_opt_in_arguments_and_results_are_redacted() -> None:
    meter, sink = await _meter_with_sink()
    mw = MeterMiddleware(meter, capture_arguments=True, capture_results=True)
    args = {"q": "x", "api_key": "sk-123", "nested": {"password": "p"}}
    await mw(FakeContext("search", args), handler_returning({"token": "t", "hits": [1]}))
    await meter.stop()
    (rec,) = sink.records
    assert rec.arguments == {"q": "x", "api_key": REDACTED, "nested": {"password": REDACTED}}
    assert rec.result == {"token": REDACTED, "hits": [1]}
    assert args["api_key"] == "sk-123"


async def test_hook_creates_its_meter_on_start_with_the_servers_store() -> None:
    store = MemoryStore()
    hook = create_meter_hook(instance_id="i-9")
    with pytest.raises(MeterConfigError):
        _ = hook.meter
    await hook(FakeContext("echo"), handler_returning("x"))  # before start: passes through
    await hook.start(server_name="svc", store=store)
    for i in range(20):
        await hook(FakeContext("echo", request_id=str(i), server_name="svc"), handler_returning(i))
    await hook.stop()
    logged = await store.query(CALLS_NAMESPACE, limit=100)
    assert len(logged) == 20
    assert {e["server"] for e in logged} == {"svc"}
    assert {e["instance_id"] for e in logged} == {"i-9"}
    assert {e["layer"] for e in logged} == {"L1"}


def test_meter_and_meter_options_are_exclusive() -> None:
    with pytest.raises(MeterConfigError):
        MeterMiddleware(Meter(), server="x")
