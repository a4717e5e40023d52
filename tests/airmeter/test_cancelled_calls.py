"""Cancelled calls through a real aircore server: recorded as ``cancelled``, never swallowed."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from aircore import define_server, define_tool
from aircore.protocol.session import Connection
from airmeter import CALLS_NAMESPACE, MemorySink, Meter, MeterMiddleware, snapshot
from airmeter.middleware import CANCELLED_ERROR_TYPE
from airstore import MemoryStore


def _slow_server(started: asyncio.Event, meter: MeterMiddleware) -> Any:
    async def wait_forever(params: dict[str, Any]) -> str:
        started.set()
        await asyncio.Event().wait()  # only cancellation ends it
        return "never"

    def echo(params: dict[str, Any]) -> str:
        return str(params["text"])

    return define_server(
        name="slow",
        tools=[
            define_tool(name="wait_forever", params={}, handler=wait_forever),
            define_tool(name="echo", params={"text": "string"}, handler=echo),
        ],
        meter=meter,
    )


async def _start_call(server: Any, conn: Connection, request_id: str) -> asyncio.Task[Any]:
    """Run ``wait_forever`` as the transports do: one task per request, known by its id."""
    task = asyncio.create_task(server.call_tool("wait_forever", {}, request_id=request_id))
    conn.inflight[request_id] = task
    return task


async def test_client_cancel_and_shutdown_are_recorded_as_cancelled_and_propagate() -> None:
    started = asyncio.Event()
    sink = MemorySink()
    meter = Meter(sinks=[sink], server="slow")
    mw = MeterMiddleware(meter)
    server = _slow_server(started, mw)
    conn = Connection(transport="inproc")
    async with server:
        await server.call_tool("echo", {"text": "hi"}, request_id="0")
        # 1. the client sends notifications/cancelled for request "1"
        first = await _start_call(server, conn, "1")
        await asyncio.wait_for(started.wait(), 5)
        cancel = {
            "jsonrpc": "2.0",
            "method": "notifications/cancelled",
            "params": {"requestId": "1", "reason": "user pressed stop"},
        }
        assert await server.handle_message(cancel, conn) is None
        with pytest.raises(asyncio.CancelledError):  # the meter did not swallow it
            await asyncio.wait_for(first, 5)
        # 2. the connection closes (server shutdown): every in-flight call is cancelled
        started.clear()
        second = await _start_call(server, conn, "2")
        await asyncio.wait_for(started.wait(), 5)
        conn.cancel_all()
        with pytest.raises(asyncio.CancelledError):
            await asyncio.wait_for(second, 5)
    await meter.stop()
    by_id = {r.request_id: r for r in sink.records}
    assert set(by_id) == {"0", "1", "2"}
    assert (by_id["0"].ok, by_id["0"].error_type) == (True, None)
    for rid in ("1", "2"):
        rec = by_id[rid]
        assert (rec.tool, rec.ok, rec.error_type) == ("wait_forever", False, CANCELLED_ERROR_TYPE)
        assert rec.error_message is not None
        assert "cancelled" in rec.error_message
    assert "CancelledError" not in {r.error_type for r in sink.records}


async def test_cancelled_calls_reach_the_store_and_the_snapshot_under_their_own_type() -> None:
    started = asyncio.Event()
    mw = MeterMiddleware()  # the meter is created on start, with the server's store
    server = _slow_server(started, mw)
    store = MemoryStore()
    server.use_storage(store)
    conn = Connection(transport="inproc")
    async with server:
        task = await _start_call(server, conn, "9")
        await asyncio.wait_for(started.wait(), 5)
        conn.cancel_all()
        with pytest.raises(asyncio.CancelledError):
            await asyncio.wait_for(task, 5)
    (logged,) = await store.query(CALLS_NAMESPACE, limit=10)
    assert (logged["ok"], logged["error_type"]) == (False, "cancelled")
    snap = await snapshot(store)
    assert dict(snap.errors_by_type) == {"cancelled": 1}
    await store.close()
