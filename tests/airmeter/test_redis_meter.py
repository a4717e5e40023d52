"""Metering many server instances into one Redis, and what happens when Redis fails."""

from __future__ import annotations

import asyncio
import signal
import sys
from collections.abc import Iterator
from typing import Any

import orjson
import pytest

from aircore import define_server, define_tool
from airmeter import CALLS_NAMESPACE, Meter, MeterMiddleware, StoreSink, snapshot
from airstore import RedisStore
from tests.redis_server import RedisServer

pytestmark = pytest.mark.redis

BOUND = 60.0  # a guard against hangs, never a speed assertion

CHILD = """
import asyncio, sys, orjson
from aircore import define_server, define_tool

def echo(params):
    return params["text"]

def get_user(params):
    if params["user_id"] != "u1":
        raise LookupError("no such user")
    return {"name": "Alice"}

async def main(url, name, n):
    tools = [
        define_tool(name="echo", params={"text": "string"}, handler=echo),
        define_tool(name="get_user", params={"user_id": "string"}, handler=get_user),
    ]
    server = define_server(name=name, tools=tools, storage=url, meter=True)
    errors = 0
    async with server:
        for i in range(n):
            await server.call_tool("echo", {"text": str(i)})
            reply = await server.call_tool("get_user", {"user_id": "u1" if i % 4 else "nobody"})
            errors += bool(reply.get("isError"))
        instance = server.meter.meter.instance_id
    print(orjson.dumps({"calls": 2 * n, "errors": errors, "instance": instance}).decode())

asyncio.run(main(sys.argv[1], sys.argv[2], int(sys.argv[3])))
"""


def _echo(params: dict[str, Any]) -> str:
    return str(params["text"])


@pytest.fixture
def durable_server() -> Iterator[RedisServer]:
    """A private server that keeps its data across a SIGKILL (AOF, fsync always)."""
    with RedisServer(extra_args=("--appendonly", "yes", "--appendfsync", "always")) as server:
        yield server


async def _run_child(url: str, name: str, n: int) -> dict[str, Any]:
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-c",
        CHILD,
        url,
        name,
        str(n),
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await asyncio.wait_for(proc.communicate(), BOUND)
    assert proc.returncode == 0, err.decode()
    data: dict[str, Any] = orjson.loads(out)
    return data


async def test_two_server_processes_metering_into_one_redis_add_up(
    durable_server: RedisServer,
) -> None:
    url = durable_server.url()
    a, b = await asyncio.gather(
        _run_child(url, "alpha", 300),
        _run_child(url, "beta", 200),
    )
    assert a["instance"] != b["instance"]
    async with RedisStore(url, read_only=True) as store:
        snap = await snapshot(store)
        assert snap.total_calls == a["calls"] + b["calls"] == 1000
        assert snap.error_count == a["errors"] + b["errors"]
        rows = {(s.server, s.instance_id): (s.calls, s.errors) for s in snap.servers}
        assert rows == {
            ("alpha", a["instance"]): (a["calls"], a["errors"]),
            ("beta", b["instance"]): (b["calls"], b["errors"]),
        }
        only_beta = await snapshot(store, server="beta")
        assert only_beta.total_calls == b["calls"]
        by_instance = await snapshot(store, instance=a["instance"])
        assert by_instance.total_calls == a["calls"]
        log = await store.query(CALLS_NAMESPACE, limit=5000)
        assert len(log) == 1000


async def test_two_server_processes_metering_into_a_redis_cluster_add_up() -> None:
    """The meter's records and rollups (incr scripts, appends, rollup namespaces) on a real
    3-master Redis Cluster, from two processes."""
    from tests.redis_server import unique_prefix
    from tests.redis_topology import shared_cluster

    url = f"{shared_cluster().url()}?prefix={unique_prefix()}"
    a, b = await asyncio.gather(_run_child(url, "alpha", 150), _run_child(url, "beta", 100))
    async with RedisStore(url, read_only=True) as store:
        snap = await snapshot(store)
        assert snap.total_calls == a["calls"] + b["calls"] == 500
        assert snap.error_count == a["errors"] + b["errors"]
        assert len(await store.query(CALLS_NAMESPACE, limit=5000)) == 500


async def test_redis_restart_mid_run_loses_no_records_the_backlog_holds(
    durable_server: RedisServer,
) -> None:
    async with RedisStore(durable_server.url(), connect_timeout=1) as store:
        sink = StoreSink(store, writer="w1", max_backlog=1000)
        meter = Meter(sinks=[sink], server="svc", instance_id="w1")
        server = define_server(
            name="svc",
            tools=[define_tool(name="echo", params={"text": "string"}, handler=_echo)],
            storage=store,
            meter=MeterMiddleware(meter),
        )
        async with meter, server:  # the middleware does not own (or stop) a meter it was given
            for i in range(100):
                await server.call_tool("echo", {"text": str(i)})
            await meter.flush()
            assert sink.written == 100
            durable_server.kill()
            for i in range(300):  # the server keeps serving tools while Redis is gone
                reply = await server.call_tool("echo", {"text": str(i)})
                assert not reply.get("isError")
            await meter.flush()
            assert meter.stats.sink_errors >= 1
            assert sink.backlog == 300
            durable_server.start()
            for i in range(50):
                await server.call_tool("echo", {"text": str(i)})
            await meter.flush()
            assert sink.backlog == 0
            assert sink.dropped == 0
        assert len(await store.query(CALLS_NAMESPACE, limit=5000)) == 450
        assert (await snapshot(store)).total_calls == 450


async def test_records_past_the_backlog_bound_are_dropped_and_counted(
    durable_server: RedisServer,
) -> None:
    async with RedisStore(durable_server.url(), connect_timeout=1) as store:
        sink = StoreSink(store, writer="w1", max_backlog=40)
        async with Meter(sinks=[sink], server="svc", instance_id="w1") as meter:
            durable_server.kill()
            for i in range(100):
                meter.record(_record(i))
            await meter.flush()
            assert (sink.backlog, sink.dropped) == (40, 60)
            durable_server.start()
            meter.record(_record(100))
            await meter.flush()
            assert sink.backlog == 0
        assert len(await store.query(CALLS_NAMESPACE, limit=500)) == 41


async def test_a_frozen_redis_does_not_hold_up_tool_calls(durable_server: RedisServer) -> None:
    async with RedisStore(durable_server.url(), socket_timeout=30) as store:
        server = define_server(
            name="svc",
            tools=[define_tool(name="echo", params={"text": "string"}, handler=_echo)],
            storage=store,
            meter=True,
        )
        async with server:
            assert durable_server.proc is not None
            durable_server.proc.send_signal(signal.SIGSTOP)
            try:
                # Every call completes while Redis cannot answer anything at all.
                for i in range(200):
                    reply = await asyncio.wait_for(server.call_tool("echo", {"text": "x"}), BOUND)
                    assert reply["content"][0]["text"] == "x", i
                meter = server.meter.meter  # type: ignore[union-attr]
                assert meter.stats.recorded == 200
            finally:
                durable_server.proc.send_signal(signal.SIGCONT)
            await asyncio.wait_for(meter.flush(), BOUND)
        assert len(await store.query(CALLS_NAMESPACE, limit=500)) == 200


def _record(i: int) -> Any:
    from airmeter import CallRecord, Layer

    return CallRecord(
        ts_ms=1_800_000_000_000 + i,
        server="svc",
        instance_id="w1",
        tool="echo",
        layer=Layer.L1,
        latency_ms=1.0,
        ok=True,
    )
