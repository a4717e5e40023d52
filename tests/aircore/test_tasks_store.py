"""The task store in-process: bounded in number and age, unguessable ids, input bookkeeping,
and what start_task does when no task can be made."""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

import pytest

from aircore import ToolContext, define_server, define_tool
from aircore.errors import InvalidParamsError
from aircore.protocol.tasks import (
    MAX_TASKS,
    SOLE_CLIENT,
    TASKS_EXTENSION,
    TaskInputs,
    TaskStore,
)
from aircore.request_context import InputRequest

META = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientCapabilities": {"extensions": {TASKS_EXTENSION: {}}},
}


async def test_task_ids_are_long_random_and_unique() -> None:
    store = TaskStore(max_tasks=5000, max_per_caller=5000)
    ids = set()
    for _ in range(2000):
        record = store.create()
        assert record is not None
        ids.add(record.id)
    assert len(ids) == 2000
    assert min(len(i) for i in ids) >= 32


async def test_a_full_store_drops_finished_tasks_first_and_never_running_ones() -> None:
    store = TaskStore(max_tasks=2, max_per_caller=2)
    running = asyncio.get_running_loop().create_future()
    a, b = store.create(), store.create()
    assert a is not None
    assert b is not None
    store.attach(a, running)
    done: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
    store.attach(b, done)
    done.set_result({"content": []})
    await asyncio.sleep(0)  # the done callback settles b
    assert b.status == "completed"
    c = store.create()
    assert c is not None
    with pytest.raises(InvalidParamsError):
        store.get(b.id)  # the finished one made room
    assert store.create() is None  # a and c still run: nothing is dropped
    assert store.get(a.id) is a
    running.cancel()


async def test_each_caller_holds_at_most_its_share_of_running_tasks() -> None:
    store = TaskStore(max_tasks=16, max_per_caller=2)
    loop = asyncio.get_running_loop()
    a1, a2 = store.create(owner="a"), store.create(owner="a")
    assert a1 is not None
    assert a2 is not None
    assert store.create(owner="a") is None  # past a's share, while the store has room
    b = store.create(owner="b")
    assert b is not None
    assert store.running("a") == 2
    assert store.running("b") == 1
    done: asyncio.Future[Any] = loop.create_future()
    store.attach(a1, done)
    done.set_result({"content": []})
    await asyncio.sleep(0)  # a1 completes: its slot of a's share is free again
    assert store.running("a") == 1
    a3 = store.create(owner="a")
    assert a3 is not None
    cancelled: asyncio.Future[Any] = loop.create_future()
    store.attach(a3, cancelled)
    store.cancel(a3)
    await asyncio.sleep(0)
    assert a3.status == "cancelled"
    assert store.running("a") == 1
    store.close()  # forgotten tasks hold nothing
    assert store.running("a") == 0
    assert store.running("b") == 0
    default = TaskStore()
    assert default.max_per_caller == MAX_TASKS // 8
    sole = TaskStore(max_tasks=8, max_per_caller=2)  # stdio: the server's only client
    assert all(sole.create(owner=SOLE_CLIENT) is not None for _ in range(8))


async def test_an_expired_task_is_forgotten_and_its_work_cancelled() -> None:
    store = TaskStore(ttl_ms=0)
    record = store.create()
    assert record is not None
    work: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
    store.attach(record, work)
    async with asyncio.timeout(10):
        with contextlib.suppress(asyncio.CancelledError):
            await work  # the expiry timer cancels it
    assert work.cancelled()
    with pytest.raises(InvalidParamsError):
        store.get(record.id)
    assert len(store) == 0


async def test_shutdown_cancels_running_tasks_and_forgets_all() -> None:
    store = TaskStore()
    record = store.create()
    assert record is not None
    work: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
    store.attach(record, work)
    store.close()
    assert work.cancelled()
    assert len(store) == 0


async def test_answers_are_taken_only_for_outstanding_keys() -> None:
    store = TaskStore()
    record = store.create()
    assert record is not None
    inputs = TaskInputs(store, record)
    asking = asyncio.ensure_future(
        inputs.ask({"a": InputRequest.roots(), "b": InputRequest.roots()})
    )
    await asyncio.sleep(0)
    assert record.status == "input_required"
    assert set(record.detailed()["inputRequests"]) == {"a", "b"}
    store.update(record, {"a": {"roots": []}, "zzz": {"roots": []}})
    assert record.status == "input_required"
    assert set(record.detailed()["inputRequests"]) == {"b"}
    store.update(record, {"a": {"roots": ["again"]}, "b": {"roots": [1]}})
    assert await asking == {"a": {"roots": []}, "b": {"roots": [1]}}
    assert record.status == "working"
    # a key is never used twice within one task
    again = asyncio.ensure_future(inputs.ask({"a": InputRequest.roots()}))
    await asyncio.sleep(0)
    assert set(record.detailed()["inputRequests"]) == {"a~2"}
    again.cancel()


async def test_start_task_goes_on_inline_or_refuses_when_no_task_can_be_made() -> None:
    async def maybe(_p: dict[str, Any], ctx: ToolContext) -> str:
        return f"task={await ctx.start_task()}"

    async def must(_p: dict[str, Any], ctx: ToolContext) -> str:
        await ctx.start_task(required=True)
        return "never"

    server = define_server(
        name="t", tools=[define_tool("maybe", handler=maybe), define_tool("must", handler=must)]
    )
    async with server:
        server.dispatcher.tasks.max_tasks = 0
        out = await server.handle_message(
            {
                "jsonrpc": "2.0",
                "id": 1,
                "method": "tools/call",
                "params": {"_meta": META, "name": "maybe"},
            }
        )
        assert out is not None
        assert out["result"]["content"][0]["text"] == "task=False"
        full = await server.handle_message(
            {
                "jsonrpc": "2.0",
                "id": 2,
                "method": "tools/call",
                "params": {"_meta": META, "name": "must"},
            }
        )
        assert full is not None
        assert full["result"]["isError"] is True
        assert "too many tasks" in full["result"]["content"][0]["text"]
        # legacy era: no tasks at all, the call just goes on
        legacy = await server.call_tool("maybe", {})
        assert legacy["content"][0]["text"] == "task=False"


def test_an_oauth_caller_holds_one_share_whatever_token_it_sends() -> None:
    from aircore.protocol.session import Connection
    from aircore.protocol.tasks import task_owner
    from airhttp.identity import Identity, use_identity

    def owner(token: str, identity: Identity | None) -> str:
        conn = Connection(transport="tcp")
        conn.authorization = f"Bearer {token}"
        handle = use_identity(identity)
        try:
            return task_owner(conn)
        finally:
            handle.var.reset(handle)

    alice = Identity(auth="oauth", client_id="app", subject="alice")
    bob = Identity(auth="oauth", client_id="app", subject="bob")
    # a client that fetches a new token per call must not get a new share per token
    assert owner("token-1", alice) == owner("token-2", alice)
    assert owner("token-1", alice) != owner("token-1", bob)
    assert owner("token-1", None) != owner("token-2", None)  # static tokens: one share each
