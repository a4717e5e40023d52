"""subscriptions/listen in-process (one shared channel, as on stdio): acknowledgment first,
tagged notifications, task status, cancellation, graceful end at shutdown, bounds."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from aircore import ToolContext, define_resource, define_server, define_tool
from aircore.errors import AirError
from aircore.protocol.session import Connection
from aircore.protocol.subscriptions import MAX_SUBSCRIPTIONS, SubscriptionHub
from aircore.protocol.tasks import TASKS_EXTENSION

SID = "io.modelcontextprotocol/subscriptionId"
META = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientCapabilities": {"extensions": {TASKS_EXTENSION: {}}},
}
WAIT = 10.0


class Recorder:
    def __init__(self) -> None:
        self.sent: list[dict[str, Any]] = []
        self.arrived = asyncio.Condition()

    async def __call__(self, message: dict[str, Any]) -> None:
        async with self.arrived:
            self.sent.append(message)
            self.arrived.notify_all()

    async def wait_for(self, count: int) -> list[dict[str, Any]]:
        async with asyncio.timeout(WAIT), self.arrived:
            await self.arrived.wait_for(lambda: len(self.sent) >= count)
        return self.sent


def _req(msg_id: Any, method: str, **params: Any) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": msg_id, "method": method, "params": {"_meta": META, **params}}


async def test_listen_acknowledges_tags_and_ends_gracefully_at_shutdown() -> None:
    gate = asyncio.Event()

    async def slow(_p: dict[str, Any], ctx: ToolContext) -> str:
        await ctx.start_task()
        await gate.wait()
        return "finished"

    server = define_server(
        name="s",
        tools=[define_tool("slow", handler=slow)],
        resources=[define_resource("res://x", handler=lambda _u: "x")],
    )
    rec = Recorder()
    conn = Connection(transport="pipe", sender=rec)
    async with server:
        created = await server.handle_message(_req(1, "tools/call", name="slow"), conn)
        assert created is not None
        task_id = created["result"]["taskId"]
        wanted = {"resourceSubscriptions": ["res://x"], "taskIds": [task_id, "other"]}
        listening = asyncio.ensure_future(
            server.handle_message(_req(7, "subscriptions/listen", notifications=wanted), conn)
        )
        (ack,) = await rec.wait_for(1)
        assert ack["method"] == "notifications/subscriptions/acknowledged"
        assert ack["params"] == {"_meta": {SID: 7}, "notifications": wanted}
        assert await server.resource_updated("res://x") == 1
        gate.set()
        sent = await rec.wait_for(3)
        assert sent[1] == {
            "jsonrpc": "2.0",
            "method": "notifications/resources/updated",
            "params": {"uri": "res://x", "_meta": {SID: 7}},
        }
        status = sent[2]["params"]
        assert sent[2]["method"] == "notifications/tasks"
        assert (status["taskId"], status["status"], status["_meta"]) == (
            task_id,
            "completed",
            {SID: 7},
        )
        assert status["result"]["content"][0]["text"] == "finished"
        server.dispatcher.close()
        async with asyncio.timeout(WAIT):
            end = await listening
    assert end is not None
    assert end["id"] == 7
    assert end["result"]["_meta"][SID] == 7


async def test_a_cancelled_listen_gets_no_answer_and_no_more_notifications() -> None:
    server = define_server(name="s", resources=[define_resource("res://x", handler=lambda _u: "")])
    rec = Recorder()
    conn = Connection(transport="pipe", sender=rec)
    async with server:
        task = asyncio.ensure_future(
            server.dispatcher.request(
                _req(
                    3, "subscriptions/listen", notifications={"resourceSubscriptions": ["res://x"]}
                ),
                conn,
            )
        )
        conn.inflight[3] = task
        await rec.wait_for(1)
        server.dispatcher.notification(
            {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 3}},
            conn,
        )
        with pytest.raises(asyncio.CancelledError):
            await task
        assert await server.resource_updated("res://x") == 0
    assert len(rec.sent) == 1


async def test_only_capabilities_the_server_has_are_honored() -> None:
    hub = SubscriptionHub({"tools": {"listChanged": False}, "resources": {"subscribe": False}})
    honored = hub.honor(
        {"notifications": {"toolsListChanged": True, "resourceSubscriptions": ["a"]}}, {}
    )
    assert honored == {}


def test_open_streams_are_bounded() -> None:
    hub = SubscriptionHub({})
    subs = [hub.open(i, {}, Connection(transport="pipe")) for i in range(MAX_SUBSCRIPTIONS)]
    with pytest.raises(AirError) as err:
        hub.open("one-more", {}, Connection(transport="pipe"))
    assert err.value.code == -32603
    hub.discard(subs[0])
    hub.open("fits-again", {}, Connection(transport="pipe"))


async def test_listen_is_a_2026_method_only() -> None:
    server = define_server(name="s")
    async with server:
        legacy = await server.handle_message(
            {"jsonrpc": "2.0", "id": 1, "method": "subscriptions/listen", "params": {}}
        )
    assert legacy is not None
    assert legacy["error"]["code"] == -32601
