"""The meter records what the client got: a tool whose value is not JSON answers ``isError``
(-32603, ``ResultError``), and its record says so, not ``ok`` — returned by the handler or
by a middleware between the meter and the handler."""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest

from aircore import define_server, define_tool
from airmeter import MeterMiddleware
from airmeter.testing import MemorySink


class Opaque:
    """No JSON conversion: ``normalize_result`` refuses it."""


def _server(sink: MemorySink, *, middleware: Any = ()) -> Any:
    return define_server(
        name="shop",
        meter=MeterMiddleware(sinks=[sink]),
        middleware=list(middleware),
        tools=[
            define_tool("opaque", handler=lambda params: Opaque()),
            define_tool("nested", handler=lambda params: {"when": [1, Opaque()]}),
            define_tool("fine", handler=lambda params: {"at": dt.date(2026, 1, 5)}),
        ],
    )


@pytest.mark.parametrize("tool", ["opaque", "nested"])
async def test_a_result_that_is_not_json_is_recorded_as_the_failure_the_client_got(
    tool: str,
) -> None:
    sink = MemorySink()
    server = _server(sink)
    async with server:
        reply = await server.call_tool(tool, {}, request_id="r1")
        fine = await server.call_tool("fine", {}, request_id="r2")
        records = {r.request_id: r for r in await sink.wait_for(2)}
    assert reply["isError"] is True
    assert reply["content"][0]["text"].startswith("[-32603]")
    assert "isError" not in fine
    bad = records["r1"]
    assert (bad.ok, bad.error_type) == (False, "-32603")
    assert bad.error_message is not None
    assert "JSON" in bad.error_message
    assert (records["r2"].ok, records["r2"].error_type) == (True, None)


async def test_a_middleware_that_returns_a_value_that_is_not_json_is_recorded_failed() -> None:
    async def swap(ctx: Any, call_next: Any) -> Any:
        await call_next(ctx)
        return Opaque()

    sink = MemorySink()
    server = _server(sink, middleware=[swap])
    async with server:
        reply = await server.call_tool("fine", {}, request_id="m")
        (record,) = await sink.wait_for(1)
    assert reply["isError"] is True
    assert (record.ok, record.error_type) == (False, "-32603")
