"""The one metering engine through a real aircore server: the typed call contract, validation as
a link of the onion, one record per call built once, and an honest class for every outcome."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from aircore import AirError, ToolContext, define_plugin, define_server, define_tool
from aircore.context import InputRequired
from aircore.validation import SchemaValidator
from airmeter import (
    Budget,
    CallInfo,
    CallSuspended,
    MemorySink,
    Meter,
    MeterMiddleware,
    error_class_of,
)
from airmeter.budget import BUDGET_ERROR_TYPE
from tests.airmeter.fakes import FakeContext
from tests.airmeter.helpers import Clock


class CountingValidator(SchemaValidator):
    """The tool's own compiled validator, counting how often it runs."""

    def __init__(self, inner: SchemaValidator) -> None:
        self.inner = inner
        self.runs = 0

    def validate(self, value: Any) -> Any:
        self.runs += 1
        return self.inner.validate(value)


async def test_a_tool_context_is_the_call_info_the_meter_reads() -> None:
    seen: list[object] = []

    def probe(params: dict[str, Any], ctx: ToolContext) -> str:
        seen.append(ctx)
        return "ok"

    server = define_server(name="s", tools=[define_tool("probe", params={"q": "string"},
                                                        handler=probe)])  # fmt: skip
    async with server:
        await server.call_tool("probe", {"q": "x"}, request_id="7", client_name="c")
    (ctx,) = seen
    assert isinstance(ctx, CallInfo)
    assert isinstance(ctx, ToolContext)
    assert ctx.input_schema is not None
    assert ctx.input_schema["properties"]["q"]["type"] == "string"
    assert not isinstance(object(), CallInfo)


async def test_input_required_suspends_the_call_and_is_recorded_as_done() -> None:
    assert issubclass(InputRequired, CallSuspended)
    sink = MemorySink()
    meter = Meter(sinks=[sink], server="s")
    mw = MeterMiddleware(meter)

    async def needs_input(ctx: Any) -> Any:
        raise InputRequired({"input-0": {"method": "elicitation/create", "params": {}}})

    with pytest.raises(InputRequired):
        await mw(FakeContext("ask_user"), needs_input)
    await meter.stop()
    (rec,) = sink.records
    assert (rec.ok, rec.error_type, rec.error_class) == (True, None, None)


async def test_a_refused_call_flows_through_the_chain_once_even_over_a_spent_budget() -> None:
    ran: list[str] = []
    plugin_saw: list[str] = []

    def fetch_url(params: dict[str, Any]) -> str:  # L5: 20 units a call
        ran.append(params["url"])
        return "page"

    async def inner(ctx: ToolContext, call_next: Any) -> Any:
        plugin_saw.append(str(ctx.request_id))
        return await call_next(ctx)

    tool = define_tool(name="fetch_url", params={"url": "string"}, handler=fetch_url)
    assert tool.validator is not None
    counting = CountingValidator(tool.validator)
    tool.validator = counting
    budget = Budget(daily_limit=20, on_exceed="block", clock=Clock(1_800_000_000.0))
    sink = MemorySink()
    meter = Meter(sinks=[sink], server="s")
    server = define_server(
        name="s",
        tools=[tool],
        meter=MeterMiddleware(meter, budget=budget),
        use=[define_plugin("watch", middleware=[inner])],
    )
    async with server:
        first = await server.call_tool("fetch_url", {"url": "https://a.test"}, request_id="1")
        blocked = await server.call_tool("fetch_url", {"url": "https://b.test"}, request_id="2")
        refused = await server.call_tool("fetch_url", {"url": 5}, request_id="3")
    await meter.stop()
    assert not first.get("isError")
    assert "daily budget exceeded" in blocked["content"][0]["text"]
    assert refused["content"][0]["text"].startswith("[-32602] Invalid arguments")
    assert counting.runs == 3  # once per call: never a second validation
    assert ran == ["https://a.test"]
    assert plugin_saw == ["1"]  # the blocked and the refused call stopped before the plugins
    recs = {r.request_id: r for r in sink.records}
    assert (recs["2"].error_type, recs["2"].error_class, recs["2"].cost) == (
        BUDGET_ERROR_TYPE, "budget", 0.0)  # fmt: skip
    assert (recs["3"].error_type, recs["3"].error_class, recs["3"].cost) == (
        "-32602", "refused", 0.0)  # fmt: skip
    assert budget.status().spent_today == 20.0


async def test_each_record_is_built_once_and_shared_by_the_live_view_and_every_sink() -> None:
    first, second = MemorySink(), MemorySink()
    meter = Meter(sinks=[first, second], server="s")
    server = define_server(
        name="s", tools=[define_tool("get_user", handler=lambda p: {"n": 1})],
        meter=MeterMiddleware(meter),
    )  # fmt: skip
    async with server:
        await server.call_tool("get_user", {})
        (live,) = meter.recent()
    await meter.stop()
    assert first.records[0] is second.records[0] is live
    assert live.output_bytes == len(b'{"n":1}')


async def test_every_outcome_is_recorded_with_its_error_class() -> None:
    entered = asyncio.Event()

    async def slow(params: dict[str, Any]) -> str:
        entered.set()
        await asyncio.Event().wait()  # only a cancel ends it
        return "late"

    def tool_error(params: dict[str, Any]) -> dict[str, Any]:
        return {"content": [{"type": "text", "text": "no such city"}], "isError": True}

    def boom(params: dict[str, Any]) -> str:
        raise KeyError("missing")

    def coded(params: dict[str, Any]) -> str:
        raise AirError(-32050, "upstream said no")

    sink = MemorySink()
    meter = Meter(sinks=[sink], server="s")
    timeout = define_plugin(
        "timeout",
        middleware=[_timeout_for("slow_lookup")],
    )
    server = define_server(
        name="s",
        tools=[
            define_tool("ok_tool", handler=lambda p: "fine"),
            define_tool("tool_error", handler=tool_error),
            define_tool("boom", handler=boom),
            define_tool("coded", handler=coded),
            define_tool("typed", params={"n": "number"}, handler=lambda p: p["n"]),
            define_tool("slow_lookup", handler=slow),
            define_tool("slow_wait", handler=slow),
        ],
        meter=MeterMiddleware(meter),
        use=[timeout],
    )
    async with server:
        for name, args in (("ok_tool", {}), ("tool_error", {}), ("boom", {}), ("coded", {}),
                           ("typed", {"n": "x"}), ("slow_lookup", {})):  # fmt: skip
            await server.call_tool(name, args, request_id=name)
        task = asyncio.create_task(server.call_tool("slow_wait", {}, request_id="slow_wait"))
        await asyncio.wait_for(entered.wait(), 10)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
    await meter.stop()
    got = {r.request_id: (r.ok, r.error_type, r.error_class) for r in sink.records}
    assert got == {
        "ok_tool": (True, None, None),
        "tool_error": (False, "tool_error", "tool_error"),
        "boom": (False, "KeyError", "exception"),
        "coded": (False, "-32050", "protocol"),
        "typed": (False, "-32602", "refused"),
        "slow_lookup": (False, "-32001", "timeout"),
        "slow_wait": (False, "cancelled", "cancelled"),
    }
    for rec in sink.records:
        assert rec.error_class == (None if rec.ok else error_class_of(rec.error_type))


def _timeout_for(tool: str) -> Any:
    """A middleware that times one tool out at once (the deadline is already past)."""
    from aircore.errors import ToolTimeoutError

    async def timeout(ctx: ToolContext, call_next: Any) -> Any:
        if ctx.tool_name == tool:
            raise ToolTimeoutError(f"tool {tool!r} timed out")
        return await call_next(ctx)

    return timeout


@pytest.mark.parametrize(
    ("error_type", "expected"),
    [
        ("tool_error", "tool_error"),
        ("ValueError", "exception"),
        ("TimeoutError", "timeout"),
        ("-32001", "timeout"),
        ("-32602", "refused"),
        ("-32601", "protocol"),
        ("-32603", "exception"),  # internal error: the handler's fault (not JSON, SystemExit)
        ("cancelled", "cancelled"),
        ("budget_exceeded", "budget"),
        (None, "exception"),
    ],
)
def test_error_class_of_every_error_type(error_type: str | None, expected: str) -> None:
    assert error_class_of(error_type) == expected


async def test_error_classes_reach_rollups_prometheus_and_opentelemetry() -> None:
    from airmeter import PrometheusSink
    from airmeter.semconv import AIR_ERROR_CLASS, ERROR_TYPE, metric_attributes
    from tests.airmeter.prom_parser import parse

    def boom(params: dict[str, Any]) -> str:
        raise KeyError("missing")

    def tool_error(params: dict[str, Any]) -> dict[str, Any]:
        return {"content": [{"type": "text", "text": "no"}], "isError": True}

    prom = PrometheusSink()
    meter = Meter(sinks=[prom], server="s")
    server = define_server(
        name="s",
        tools=[
            define_tool("lookup", params={"n": "number"}, handler=boom),
            define_tool("other", handler=tool_error),
        ],
        meter=MeterMiddleware(meter),
    )
    async with server:
        await server.call_tool("lookup", {"n": 1})  # exception
        await server.call_tool("lookup", {"n": "x"})  # refused
        await server.call_tool("lookup", {"n": "y"})  # refused
        await server.call_tool("lookup", {"n": 2})  # exception
        await server.call_tool("other", {})  # tool_error
        snap = await meter.snapshot()
        records = meter.recent()
    await meter.stop()
    assert snap.errors_by_class == {"exception": 2, "refused": 2, "tool_error": 1}
    lookup = snap.tool("lookup")
    assert lookup is not None
    assert lookup.errors == 4
    assert lookup.error_rate == 0.5  # the two refusals show apart, not as the tool's failures
    assert lookup.errors_by_class == {"exception": 2, "refused": 2}
    assert snap.to_dict()["errors_by_class"] == {"exception": 2, "refused": 2, "tool_error": 1}
    samples = parse(prom.render())["air_mcp_errors_total"].samples
    got = {(s.labels["tool"], s.labels["error_type"], s.labels["error_class"]): s.value
           for s in samples}  # fmt: skip
    assert got == {
        ("lookup", "KeyError", "exception"): 2,
        ("lookup", "-32602", "refused"): 2,
        ("other", "tool_error", "tool_error"): 1,
    }
    refused = next(r for r in records if r.error_type == "-32602")
    attrs = metric_attributes(refused)
    assert (attrs[ERROR_TYPE], attrs[AIR_ERROR_CLASS]) == ("-32602", "refused")
