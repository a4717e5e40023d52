"""A real aircore server with ``meter=True``: in process, and over stdio with the official
``mcp`` client, recording into a FileStore that another reader then summarizes."""

from __future__ import annotations

import asyncio
import itertools
import signal
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import orjson
from mcp import Client, StdioServerParameters

from aircore import AirError, define_server, define_tool
from airmeter import (
    CALLS_NAMESPACE,
    Budget,
    Layer,
    MemorySink,
    Meter,
    MeterMiddleware,
    Snapshot,
    snapshot,
)
from airmeter.budget import BUDGET_ERROR_TYPE
from airstore import MemoryStore
from airstore.file import FileStore

HERE = Path(__file__).parent
ROOT = HERE.parents[1]


async def test_in_process_calls_are_recorded_with_error_types() -> None:
    from tests.airmeter import aircore_metered_server as mod

    server = mod.server
    store = MemoryStore()
    server.use_storage(store)
    async with server:
        ok = await server.call_tool("echo", {"text": "hi"}, request_id="1")
        missing = await server.call_tool("get_user", {"user_id": "u9"}, request_id="2")
        down = await server.call_tool("fetch_url", {"url": "https://x.test"}, request_id="3")
        refused = await server.call_tool("refuse", {}, request_id="4")
        gen = await server.call_tool("generate_text", {"prompt": "p"}, request_id="5")
    assert not ok.get("isError")
    assert missing["isError"]
    assert "no user" in missing["content"][0]["text"]
    assert down["isError"]
    assert "cannot reach" in down["content"][0]["text"]
    assert refused["isError"]
    assert not gen.get("isError")
    logged = {e["request_id"]: e for e in await store.query(CALLS_NAMESPACE, limit=10)}
    got = {k: (e["tool"], e["layer"], e["ok"], e.get("error_type")) for k, e in logged.items()}
    assert got == {
        "1": ("echo", "L1", True, None),
        "2": ("get_user", "L2", False, "-32001"),
        "3": ("fetch_url", "L5", False, "ConnectionError"),
        "4": ("refuse", "L3", False, "tool_error"),
        "5": ("generate_text", "L6", True, None),
    }
    assert (logged["5"]["tokens_in"], logged["5"]["tokens_out"], logged["5"]["cost"]) == (7, 3, 0.5)
    assert {e["server"] for e in logged.values()} == {"metered"}
    assert all(e["transport"] == "inproc" for e in logged.values())
    snap = await snapshot(store)
    assert snap.total_calls == 5
    assert dict(snap.errors_by_type) == {"-32001": 1, "ConnectionError": 1, "tool_error": 1}
    await store.close()


async def test_refused_arguments_and_output_off_schema_are_recorded_as_failures() -> None:
    from tests.airmeter import aircore_metered_server as mod

    server = mod.server
    store = MemoryStore()
    server.use_storage(store)
    async with server:
        bad_args = await server.call_tool("get_user", {"user_id": 5}, request_id="a")
        missing = await server.call_tool("echo", {}, request_id="b")
        bad_out = await server.call_tool("format_date", {"date": "2026-01-05"}, request_id="c")
    for reply in (bad_args, missing, bad_out):
        assert reply["isError"] is True
    assert bad_args["content"][0]["text"].startswith("[-32602]")
    assert bad_out["content"][0]["text"].startswith("[-32603]")
    logged = {e["request_id"]: e for e in await store.query(CALLS_NAMESPACE, limit=10)}
    assert {k: (e["tool"], e["ok"], e["error_type"]) for k, e in logged.items()} == {
        "a": ("get_user", False, "-32602"),
        "b": ("echo", False, "-32602"),
        "c": ("format_date", False, "-32603"),
    }
    assert "user_id" in logged["a"]["error_message"]
    assert "text" in logged["b"]["error_message"]
    assert "outputSchema" in logged["c"]["error_message"]
    assert logged["a"]["cost"] == logged["b"]["cost"] == 0  # refused: nothing ran
    assert "cost" not in logged["c"]  # the handler ran: the layer weight counts
    snap = await snapshot(store)
    assert dict(snap.errors_by_type) == {"-32602": 2, "-32603": 1}
    by_tool = {t.tool: t for t in snap.tools}
    assert by_tool["echo"].cost == by_tool["get_user"].cost == 0
    assert by_tool["format_date"].cost == Layer.L3.weight
    await store.close()


async def test_a_server_started_again_meters_with_a_new_meter() -> None:
    store = MemoryStore()
    server = define_server(
        name="again",
        tools=[define_tool(name="echo", params={"text": "string"}, handler=lambda p: p["text"])],
        storage=store,
        meter=True,
    )
    for text in ("first run", "second run"):
        async with server:
            assert not (await server.call_tool("echo", {"text": text})).get("isError")
    logged = await store.query(CALLS_NAMESPACE, limit=10)
    assert len(logged) == 2
    assert (await snapshot(store)).total_calls == 2
    await store.close()


async def test_a_blocking_budget_answers_is_error_through_the_server() -> None:
    sink = MemorySink()
    meter = Meter(sinks=[sink], server="b")
    hook = MeterMiddleware(meter, budget=Budget(daily_limit=3, on_exceed="block"))
    ran: list[str] = []

    def plan(params: dict[str, Any]) -> str:
        ran.append("x")
        return "planned"

    server = define_server(
        name="b",
        tools=[define_tool(name="plan_trip", handler=plan)],
        meter=hook,
        storage=MemoryStore(),
    )
    async with server:
        first = await server.call_tool("plan_trip", {})
        second = await server.call_tool("plan_trip", {})
    await meter.stop()
    assert not first.get("isError")
    assert second["isError"] is True
    assert "daily budget exceeded" in second["content"][0]["text"]
    assert ran == ["x"]
    assert [(r.layer, r.error_type) for r in sink.records] == [
        (Layer.L7, None),
        (Layer.L7, BUDGET_ERROR_TYPE),
    ]


async def test_meter_reraises_so_the_error_boundary_still_answers() -> None:
    def boom(params: dict[str, Any]) -> str:
        raise AirError(-32002, "boom")

    sink = MemorySink()
    meter = Meter(sinks=[sink])
    server = define_server(
        name="e",
        tools=[define_tool(name="boom", handler=boom)],
        meter=MeterMiddleware(meter),
        storage=MemoryStore(),
    )
    async with server:
        out = await server.call_tool("boom", {})
    await meter.stop()
    assert out == {"content": [{"type": "text", "text": "[-32002] boom"}], "isError": True}
    assert sink.records[0].error_type == "-32002"


async def test_calls_over_stdio_with_the_official_client_reach_the_store(tmp_path: Path) -> None:
    data = tmp_path / "data"
    params = StdioServerParameters(
        command=sys.executable,
        args=[
            "-m",
            "aircli",
            "serve",
            str(HERE / "aircore_metered_server.py"),
            "--transport",
            "stdio",
            "--store",
            f"file://{data}",
        ],
        cwd=str(ROOT),
        env={"PYTHONPATH": str(ROOT)},
    )
    async with Client(params) as client:
        assert not (await client.call_tool("echo", {"text": "a"})).is_error
        assert (await client.call_tool("get_user", {"user_id": "nobody"})).is_error
        assert not (await client.call_tool("generate_text", {"prompt": "p"})).is_error
        assert (await client.call_tool("get_user", {"user_id": 5})).is_error
        assert (await client.call_tool("format_date", {"date": "d"})).is_error
        for i in range(20):
            await client.call_tool("echo", {"text": str(i)})
    # The server stops on stdin EOF and its meter delivers everything before exiting.
    async with FileStore(data, read_only=True) as store:
        snap = await _eventually(lambda: snapshot(store), lambda s: s.total_calls >= 25)
        logged = await store.query(CALLS_NAMESPACE, limit=100)
    assert len(logged) == 25
    assert {e["transport"] for e in logged} == {"pipe"}
    assert {e["client_name"] for e in logged} == {"mcp"}
    assert all(e["protocol_version"] for e in logged)
    by_tool = {t.tool: t for t in snap.tools}
    assert by_tool["echo"].calls == 21
    assert by_tool["get_user"].errors == 2
    assert by_tool["generate_text"].layer is Layer.L6
    assert dict(snap.errors_by_type) == {"-32001": 1, "-32602": 1, "-32603": 1}
    failed = {e["error_type"]: e for e in logged if not e["ok"]}
    assert all(failed[code]["error_message"] for code in ("-32001", "-32602", "-32603"))


async def test_sigterm_delivers_every_call_before_the_server_exits(tmp_path: Path) -> None:
    data = tmp_path / "data"
    n = 300
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "aircli", "serve", str(HERE / "aircore_metered_server.py"),
        "--transport", "stdio", "--store", f"file://{data}",
        cwd=str(ROOT), env={"PYTHONPATH": str(ROOT)},
        stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.DEVNULL,
    )  # fmt: skip
    try:
        assert proc.stdin is not None
        assert proc.stdout is not None
        frames = b"".join(
            orjson.dumps({"jsonrpc": "2.0", "id": i, "method": "tools/call",
                          "params": {"name": "echo", "arguments": {"text": str(i)}}}) + b"\n"
            for i in range(n)
        )  # fmt: skip
        proc.stdin.write(frames)
        await proc.stdin.drain()
        async with asyncio.timeout(30):
            answers = [orjson.loads(await proc.stdout.readline()) for _ in range(n)]
            assert sorted(a["id"] for a in answers) == list(range(n))
            proc.send_signal(signal.SIGTERM)  # stdin stays open: only the signal stops it
            assert await proc.wait() == 0
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()
    async with FileStore(data, read_only=True) as store:
        logged = await store.query(CALLS_NAMESPACE, limit=2 * n)
        assert (await snapshot(store)).total_calls == n
    assert sorted(int(e["request_id"]) for e in logged) == list(range(n))


async def _eventually(
    get: Callable[[], Awaitable[Snapshot]], done: Callable[[Snapshot], bool]
) -> Snapshot:
    """Poll another process's writes until ``done`` holds (30 s at most)."""
    async with asyncio.timeout(30):
        for _ in itertools.count():
            value = await get()
            if done(value):
                return value
            await asyncio.sleep(0.05)
    raise AssertionError("unreachable")
