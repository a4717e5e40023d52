"""The seed's context idioms: ``ctx.call_id`` (unique per call across processes) and
``ctx.elicit`` (falsy when the client cannot elicit, so ``if ctx.elicit: … else: fallback``)."""

from __future__ import annotations

import re
import subprocess
import sys
import textwrap
from typing import Any

import mcp.types as mt
from mcp import Client, StdioServerParameters

from aircore import ToolContext, define_server, define_tool
from tests.aircore.conftest import ROOT

CALL_ID = re.compile(r"^[0-9a-f]{16}-[0-9a-f]+$")
WAIT = 30.0

# A process that makes calls, forks, and makes more calls in the parent and in the child;
# every id is printed on stdout (the child's after the parent's, so the lines never interleave).
_CALLER = textwrap.dedent(
    """
    import asyncio, os, sys
    from aircore import define_server, define_tool

    async def ids(server, n):
        out = []
        for _ in range(n):
            result = await server.call_tool("id", {})
            out.append(result["content"][0]["text"])
        return out

    def main():
        server = define_server(name="ids", tools=[
            define_tool("id", handler=lambda p, ctx: ctx.call_id)])
        before = asyncio.run(ids(server, 200))
        pid = os.fork()
        after = asyncio.run(ids(server, 200))
        if pid == 0:
            sys.stdout.write("\\n".join(after) + "\\n")
            sys.stdout.flush()
            os._exit(0)
        os.waitpid(pid, 0)
        sys.stdout.write("\\n".join(before + after) + "\\n")

    main()
    """
)


async def test_call_ids_are_unique_per_call_and_differ_from_the_json_rpc_id() -> None:
    seen: list[tuple[str, str | None]] = []

    def remember(_p: dict[str, Any], ctx: ToolContext) -> str:
        seen.append((ctx.call_id, ctx.request_id))
        assert ctx.call_id == ctx.call_id  # stable within the call
        return "ok"

    server = define_server(name="ids", tools=[define_tool("t", handler=remember)])
    call = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "t"}}
    async with server:
        for _ in range(50):
            await server.handle_message(call)  # the client reuses JSON-RPC id 1 every time
    ids = [c for c, _ in seen]
    assert len(set(ids)) == 50
    assert {r for _, r in seen} == {"1"}
    assert all(CALL_ID.match(c) for c in ids)


def test_call_ids_are_unique_across_processes_and_forked_children() -> None:
    runs = [
        subprocess.run(
            [sys.executable, "-c", _CALLER],
            capture_output=True,
            text=True,
            timeout=WAIT,
            cwd=ROOT,
            check=True,
        )
        for _ in range(3)
    ]
    ids = [line for run in runs for line in run.stdout.split()]
    assert len(ids) == 3 * (200 + 200 + 200)  # per process: before fork, parent, child
    assert all(CALL_ID.match(i) for i in ids)
    assert len(set(ids)) == len(ids)
    prefixes = {i.split("-")[0] for i in ids}
    assert len(prefixes) == 6  # three processes and their three forked children


async def test_elicit_is_falsy_without_the_capability_so_the_seed_fallback_runs() -> None:
    async def deploy(params: dict[str, Any], ctx: ToolContext) -> str:
        if params["env"] == "production" and ctx.elicit:
            answer = await ctx.elicit("Deploy?", {"confirmed": {"type": "boolean"}})
            if answer.action != "accept":
                return "cancelled"
        return f"deployed {params['env']} (can_elicit={ctx.can_elicit})"

    server = define_server(name="e", tools=[define_tool("deploy", handler=deploy)])
    async with server:
        result = await server.call_tool("deploy", {"env": "production"})
    assert result["content"][0]["text"] == "deployed production (can_elicit=False)"


async def test_calling_an_unavailable_elicit_anyway_is_a_clear_error() -> None:
    async def ask(_p: dict[str, Any], ctx: ToolContext) -> str:
        assert not ctx.elicit
        assert "unavailable" in repr(ctx.elicit)
        await ctx.elicit("sure?", {"ok": {"type": "boolean"}})
        return "unreachable"

    server = define_server(name="e", tools=[define_tool("ask", handler=ask)])
    async with server:
        result = await server.call_tool("ask", {})
    assert result["isError"] is True
    assert "does not support elicitation" in result["content"][0]["text"]


async def test_elicit_is_callable_when_a_modern_client_declares_the_capability() -> None:
    async def probe(_p: dict[str, Any], ctx: ToolContext) -> str:
        return f"{bool(ctx.elicit)}/{ctx.can_elicit}"

    server = define_server(name="e", tools=[define_tool("probe", handler=probe)])
    meta = {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {"elicitation": {}},
    }
    call = {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
            "params": {"_meta": meta, "name": "probe"}}  # fmt: skip
    async with server:
        answer = await server.handle_message(call)
    assert answer is not None
    assert answer["result"]["content"][0]["text"] == "True/True"


_SEED_SERVER = textwrap.dedent(
    """
    from aircore import ToolContext, define_server

    server = define_server(name="seed")


    @server.tool
    async def deploy(env: str, ctx: ToolContext) -> str:
        if env == "production" and ctx.elicit:
            answer = await ctx.elicit("Deploy?", {"confirmed": {"type": "boolean"}})
            if answer.action != "accept":
                return "deploy cancelled"
            return f"{env} deployed after confirmation"
        return f"{env} deployed without asking"
    """
)


async def _deploy_over_stdio(server_file: str, mode: str, callback: Any) -> str:
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "aircli", "serve", server_file, "--store", "memory://"]
    )
    async with Client(params, mode=mode, elicitation_callback=callback) as client:
        result = await client.call_tool("deploy", {"env": "production"})
    text = result.content[0]
    assert isinstance(text, mt.TextContent)
    return text.text


async def test_the_seed_idiom_asks_a_real_client_that_elicits_and_falls_back_otherwise(
    tmp_path: Any,
) -> None:
    server_file = tmp_path / "seed_server.py"
    server_file.write_text(_SEED_SERVER)

    async def decline(_ctx: Any, _params: Any) -> mt.ElicitResult:
        return mt.ElicitResult(action="decline")

    for mode in ("auto", "legacy"):
        assert await _deploy_over_stdio(str(server_file), mode, decline) == "deploy cancelled"
        assert (
            await _deploy_over_stdio(str(server_file), mode, None)
            == "production deployed without asking"
        )


async def test_a_failing_call_is_logged_with_its_call_id(caplog: Any) -> None:
    seen: list[str] = []

    def fail(_p: dict[str, Any], ctx: ToolContext) -> str:
        seen.append(ctx.call_id)
        raise RuntimeError("boom")

    server = define_server(name="e", tools=[define_tool("fail", handler=fail)])
    with caplog.at_level("WARNING", logger="aircore"):
        async with server:
            await server.call_tool("fail", {})
    assert any(seen[0] in r.getMessage() and "boom" in r.getMessage() for r in caplog.records)


async def test_the_meter_record_and_its_span_carry_the_call_id() -> None:
    from airmeter import CallRecord, MemorySink, create_meter_hook
    from airmeter.semconv import span_attributes

    sink = MemorySink()
    seen: list[str] = []

    def remember(_p: dict[str, Any], ctx: ToolContext) -> str:
        seen.append(ctx.call_id)
        return "ok"

    server = define_server(
        name="ids",
        tools=[define_tool("t", handler=remember)],
        meter=create_meter_hook(sinks=[sink]),
    )
    call = {"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {"name": "t"}}
    async with server:
        await server.handle_message(call)
        await server.handle_message(call)
    records = await sink.wait_for(2, timeout=WAIT)
    assert [r.call_id for r in records] == seen
    assert [r.request_id for r in records] == ["7", "7"]
    assert span_attributes(records[0])["air.call.id"] == seen[0]
    assert CallRecord.from_log(records[1].to_log()).call_id == seen[1]
