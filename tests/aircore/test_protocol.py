"""The protocol layer in-process: framing errors, both eras, pagination, envelope checks."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import pytest

from aircore import AirServer, define_server, define_tool
from aircore.protocol.session import Connection

V = "2026-07-28"
META = {
    "io.modelcontextprotocol/protocolVersion": V,
    "io.modelcontextprotocol/clientCapabilities": {},
}


def _req(method: str, params: dict[str, Any] | None = None, msg_id: Any = 1) -> dict[str, Any]:
    msg: dict[str, Any] = {"jsonrpc": "2.0", "id": msg_id, "method": method}
    if params is not None:
        msg["params"] = params
    return msg


@pytest.fixture
async def server() -> AsyncIterator[AirServer]:
    tools = [define_tool(f"tool_{i:03d}", handler=lambda p: "x") for i in range(7)]
    s = define_server(name="p", version="9", tools=tools, page_size=3)
    async with s:
        yield s


async def _ask(server: AirServer, msg: Any, conn: Connection | None = None) -> dict[str, Any]:
    out = await server.handle_message(msg, conn)
    assert out is not None
    return out


@pytest.mark.parametrize(
    ("frame", "code", "echo_id"),
    [
        ([{"jsonrpc": "2.0", "id": 1, "method": "ping"}], -32600, None),
        ("just a string", -32600, None),
        ({"jsonrpc": "1.0", "id": 4, "method": "ping"}, -32600, 4),
        ({"id": 5, "method": "ping"}, -32600, 5),
        ({"jsonrpc": "2.0", "id": 6, "method": 7}, -32600, 6),
        ({"jsonrpc": "2.0", "id": 7, "method": "ping", "params": [1, 2]}, -32602, 7),
        ({"jsonrpc": "2.0", "id": 8, "method": "ping", "params": "x"}, -32602, 8),
        ({"jsonrpc": "2.0", "id": {"a": 1}, "method": "ping"}, -32600, None),
        ({"jsonrpc": "2.0", "id": True, "method": "ping"}, -32600, None),
        ({"jsonrpc": "2.0", "id": 9}, -32600, 9),
        ({"jsonrpc": "2.0", "id": 10, "method": "no/such"}, -32601, 10),
        ({"jsonrpc": "2.0", "id": 11, "method": "tools/call", "params": {"name": 5}}, -32602, 11),
        (
            {
                "jsonrpc": "2.0",
                "id": 12,
                "method": "tools/call",
                "params": {"name": "tool_000", "arguments": [1]},
            },
            -32602,
            12,
        ),
        (
            {"jsonrpc": "2.0", "id": 13, "method": "tools/call", "params": {"name": "ghost"}},
            -32602,
            13,
        ),
        ({"jsonrpc": "2.0", "id": 14, "method": "initialize", "params": {}}, -32602, 14),
    ],
)
async def test_every_malformed_frame_gets_its_error(
    server: AirServer, frame: Any, code: int, echo_id: Any
) -> None:
    out = await _ask(server, frame)
    assert out["jsonrpc"] == "2.0"
    assert out["error"]["code"] == code
    assert out["id"] == echo_id
    # and the server keeps serving
    assert (await _ask(server, _req("ping")))["result"] == {}


async def test_notifications_and_client_responses_get_no_answer(server: AirServer) -> None:
    assert await server.handle_message({"jsonrpc": "2.0", "method": "notifications/x"}) is None
    assert await server.handle_message({"jsonrpc": "2.0", "id": "zz", "result": {}}) is None


@pytest.mark.parametrize(
    "params", [{"requestId": [1]}, {"requestId": {}}, {"requestId": None}, None]
)
async def test_a_cancellation_naming_no_request_id_is_ignored(
    server: AirServer, params: Any
) -> None:
    """A client controls ``requestId``: an unhashable one (or none at all)
    matches nothing; it was a TypeError out of the notification."""
    note = {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": params}
    assert await server.handle_message(note) is None
    assert (await server.handle_message({"jsonrpc": "2.0", "id": 7, "method": "ping"})) == {
        "jsonrpc": "2.0",
        "id": 7,
        "result": {},
    }


async def test_legacy_initialize_negotiates_versions(server: AirServer) -> None:
    for asked, answered in [
        ("2025-06-18", "2025-06-18"),
        ("2024-11-05", "2024-11-05"),
        ("2025-11-25", "2025-11-25"),
        ("1999-01-01", "2025-11-25"),
    ]:
        conn = Connection(transport="inproc")
        out = await _ask(
            server,
            _req(
                "initialize",
                {
                    "protocolVersion": asked,
                    "capabilities": {},
                    "clientInfo": {"name": "c", "version": "1"},
                },
            ),
            conn,
        )
        assert out["result"]["protocolVersion"] == answered
        assert out["result"]["serverInfo"] == {"name": "p", "version": "9"}
        assert conn.era == "legacy"
        assert conn.client_name == "c"


async def test_modern_discover_and_results_carry_the_2026_fields(server: AirServer) -> None:
    out = await _ask(server, _req("server/discover", {"_meta": META}))
    result = out["result"]
    assert result["supportedVersions"] == [V]
    assert result["resultType"] == "complete"
    assert result["ttlMs"] == 0
    assert result["cacheScope"] == "private"
    assert result["_meta"]["io.modelcontextprotocol/serverInfo"]["name"] == "p"
    call = await _ask(server, _req("tools/call", {"_meta": META, "name": "tool_000"}))
    assert call["result"]["resultType"] == "complete"
    assert "ttlMs" not in call["result"]


async def test_modern_envelope_errors(server: AirServer) -> None:
    missing = await _ask(
        server, _req("tools/list", {"_meta": {"io.modelcontextprotocol/protocolVersion": V}})
    )
    assert missing["error"]["code"] == -32602
    discover_bare = await _ask(server, _req("server/discover", {}))
    assert discover_bare["error"]["code"] == -32602
    old = {**META, "io.modelcontextprotocol/protocolVersion": "2099-01-01"}
    unsupported = await _ask(server, _req("tools/list", {"_meta": old}))
    assert unsupported["error"]["code"] == -32022
    assert unsupported["error"]["data"] == {"supported": [V], "requested": "2099-01-01"}
    ping = await _ask(server, _req("ping", {"_meta": META}))
    assert ping["error"]["code"] == -32601


async def test_modern_header_checks(server: AirServer) -> None:
    conn = Connection(transport="tcp")
    params = {"_meta": META, "name": "tool_001"}
    good = {"mcp-protocol-version": V, "mcp-method": "tools/call", "mcp-name": "tool_001"}
    ok = await server.dispatcher.handle(_req("tools/call", params), conn, headers=good)
    assert ok is not None
    assert "result" in ok
    for bad in (
        {**good, "mcp-protocol-version": "2025-11-25"},
        {**good, "mcp-method": "tools/list"},
        {**good, "mcp-name": "tool_002"},
        {"mcp-method": "tools/call", "mcp-name": "tool_001"},
    ):
        out = await server.dispatcher.handle(_req("tools/call", params), conn, headers=bad)
        assert out is not None
        assert out["error"]["code"] == -32020


async def test_tools_list_is_deterministic_and_paginates_with_an_opaque_cursor(
    server: AirServer,
) -> None:
    names: list[str] = []
    cursor = None
    pages = 0
    while True:
        params = {} if cursor is None else {"cursor": cursor}
        result = (await _ask(server, _req("tools/list", params)))["result"]
        names += [t["name"] for t in result["tools"]]
        pages += 1
        cursor = result.get("nextCursor")
        if cursor is None:
            break
        assert "tool_" not in cursor
        assert not cursor.isdigit()
    assert pages == 3
    assert names == [f"tool_{i:03d}" for i in range(7)]
    again = (await _ask(server, _req("tools/list")))["result"]["tools"]
    assert [t["name"] for t in again] == names[:3]
    bad = await _ask(server, _req("tools/list", {"cursor": "garbage!"}))
    assert bad["error"]["code"] == -32602


async def test_modern_elicitation_answers_input_required_then_completes_on_retry() -> None:
    from aircore import ToolContext

    async def ask(params: dict[str, Any], ctx: ToolContext) -> str:
        answer = await ctx.elicit("sure?", {"ok": {"type": "boolean", "required": True}})
        return f"{answer.action}:{(answer.content or {}).get('ok')}"

    server = define_server(name="e", tools=[define_tool("ask", handler=ask)])
    meta = {**META, "io.modelcontextprotocol/clientCapabilities": {"elicitation": {}}}
    async with server:
        first = await _ask(server, _req("tools/call", {"_meta": meta, "name": "ask"}))
        result = first["result"]
        assert result["resultType"] == "input_required"
        ((key, request),) = result["inputRequests"].items()
        assert request["method"] == "elicitation/create"
        assert request["params"]["requestedSchema"]["required"] == ["ok"]
        retry = await _ask(
            server,
            _req(
                "tools/call",
                {
                    "_meta": meta,
                    "name": "ask",
                    "requestState": result["requestState"],
                    "inputResponses": {key: {"action": "accept", "content": {"ok": True}}},
                },
            ),
        )
        assert retry["result"]["content"][0]["text"] == "accept:True"
        no_cap = await _ask(server, _req("tools/call", {"_meta": META, "name": "ask"}))
        assert no_cap["error"]["code"] == -32021


class _Recorder:
    """A Connection sender that keeps what the server sends to the client."""

    def __init__(self) -> None:
        self.sent: list[dict[str, Any]] = []
        self.arrived = asyncio.Event()

    async def __call__(self, message: dict[str, Any]) -> None:
        self.sent.append(message)
        self.arrived.set()


async def test_logging_respects_set_level_and_subscriptions_notify() -> None:
    from aircore import ToolContext, define_resource

    async def chatty(params: dict[str, Any], ctx: ToolContext) -> str:
        await ctx.log("debug", "noise")
        await ctx.log("warning", {"disk": "low"}, logger="fs")
        return "done"

    server = define_server(
        name="l",
        tools=[define_tool("chatty", handler=chatty)],
        resources=[define_resource("res://a", handler=lambda uri: "a")],
    )
    rec = _Recorder()
    conn = Connection(transport="inproc", sender=rec)
    async with server:
        assert (await _ask(server, _req("logging/setLevel", {"level": "info"}), conn))[
            "result"
        ] == {}
        bad = await _ask(server, _req("logging/setLevel", {"level": "loud"}), conn)
        assert bad["error"]["code"] == -32602
        await _ask(server, _req("tools/call", {"name": "chatty"}), conn)
        assert rec.sent == [
            {
                "jsonrpc": "2.0",
                "method": "notifications/message",
                "params": {"level": "warning", "data": {"disk": "low"}, "logger": "fs"},
            }
        ]
        rec.sent.clear()
        await _ask(server, _req("resources/subscribe", {"uri": "res://a"}), conn)
        assert await server.resource_updated("res://a") == 1
        await _ask(server, _req("resources/unsubscribe", {"uri": "res://a"}), conn)
        assert await server.resource_updated("res://a") == 0
    assert rec.sent == [
        {
            "jsonrpc": "2.0",
            "method": "notifications/resources/updated",
            "params": {"uri": "res://a"},
        }
    ]


async def test_modern_logging_needs_the_per_request_opt_in() -> None:
    from aircore import ToolContext

    async def chatty(params: dict[str, Any], ctx: ToolContext) -> str:
        await ctx.log("info", "hello")
        return "done"

    server = define_server(name="l", tools=[define_tool("chatty", handler=chatty)])
    rec = _Recorder()
    conn = Connection(transport="inproc", sender=rec)
    async with server:
        await _ask(server, _req("tools/call", {"_meta": META, "name": "chatty"}), conn)
        assert rec.sent == []
        opted = {**META, "io.modelcontextprotocol/logLevel": "info"}
        await _ask(server, _req("tools/call", {"_meta": opted, "name": "chatty"}), conn)
    assert [m["params"]["data"] for m in rec.sent] == ["hello"]


async def test_sampling_in_both_eras() -> None:
    from aircore import ToolContext

    async def ask_model(params: dict[str, Any], ctx: ToolContext) -> str:
        answer = await ctx.sample("say hi", max_tokens=5)
        return str(answer["content"]["text"])

    server = define_server(name="s", tools=[define_tool("ask", handler=ask_model)])
    reply = {"role": "assistant", "content": {"type": "text", "text": "hi"}, "model": "m"}
    async with server:
        caps = {**META, "io.modelcontextprotocol/clientCapabilities": {"sampling": {}}}
        first = (await _ask(server, _req("tools/call", {"_meta": caps, "name": "ask"})))["result"]
        assert first["resultType"] == "input_required"
        ((key, request),) = first["inputRequests"].items()
        assert request["method"] == "sampling/createMessage"
        assert request["params"]["maxTokens"] == 5
        done = await _ask(
            server,
            _req("tools/call", {"_meta": caps, "name": "ask", "inputResponses": {key: reply}}),
        )
        assert done["result"]["content"][0]["text"] == "hi"

        # legacy: a real server→client request over the connection
        rec = _Recorder()
        conn = Connection(transport="inproc", sender=rec)
        conn.client_capabilities = {"sampling": {}}
        call = asyncio.ensure_future(_ask(server, _req("tools/call", {"name": "ask"}), conn))
        await asyncio.wait_for(rec.arrived.wait(), 10)
        outbound = rec.sent[0]
        assert outbound["method"] == "sampling/createMessage"
        conn.resolve({"jsonrpc": "2.0", "id": outbound["id"], "result": reply})
        assert (await asyncio.wait_for(call, 10))["result"]["content"][0]["text"] == "hi"


async def test_completion_uses_the_prompt_completer() -> None:
    from aircore import define_prompt

    server = define_server(
        name="c",
        prompts=[
            define_prompt(
                "p",
                arguments={"city": "a city"},
                handler=lambda a: "x",
                complete=lambda arg, value: [
                    c for c in ("paris", "park", "rome") if c.startswith(value)
                ],
            )
        ],
    )
    async with server:
        out = await _ask(
            server,
            _req(
                "completion/complete",
                {
                    "ref": {"type": "ref/prompt", "name": "p"},
                    "argument": {"name": "city", "value": "par"},
                },
            ),
        )
        missing = await _ask(
            server,
            _req(
                "completion/complete",
                {
                    "ref": {"type": "ref/prompt", "name": "nope"},
                    "argument": {"name": "city", "value": ""},
                },
            ),
        )
    assert out["result"]["completion"] == {
        "values": ["paris", "park"],
        "total": 2,
        "hasMore": False,
    }
    assert missing["error"]["code"] == -32602


@pytest.mark.parametrize(
    "method", ["tools/list", "resources/list", "resources/templates/list", "prompts/list"]
)
async def test_modern_lists_carry_ttl_and_cache_scope(server: AirServer, method: str) -> None:
    result = (await _ask(server, _req(method, {"_meta": META})))["result"]
    assert result["resultType"] == "complete"
    assert result["ttlMs"] == 0
    assert result["cacheScope"] == "private"
    legacy = (await _ask(server, _req(method)))["result"]
    assert "ttlMs" not in legacy
    assert "resultType" not in legacy


async def test_a_dispatched_call_gets_a_full_tool_context() -> None:
    from aircore import ToolContext

    seen: dict[str, Any] = {}

    def look(params: dict[str, Any], ctx: ToolContext) -> str:
        ctx.state["calls"] = ctx.state.get("calls", 0) + 1
        seen.update(
            request_id=ctx.request_id,
            server_name=ctx.server_name,
            started_at=ctx.started_at,
            store=ctx.store,
        )
        return "seen"

    s = define_server(name="ctx-server", tools=[define_tool("look", handler=look)])
    async with s:
        out = await _ask(s, _req("tools/call", {"_meta": META, "name": "look"}, msg_id="r-42"))
        assert out["result"]["content"][0]["text"] == "seen"
        assert seen["request_id"] == "r-42"
        assert seen["server_name"] == "ctx-server"
        assert isinstance(seen["started_at"], float)
        assert seen["started_at"] > 0
        assert seen["store"] is s.store
        assert s.store is not None
        await _ask(s, _req("tools/call", {"name": "look"}, msg_id=7))
        assert s.state["calls"] == 2  # one server-wide dict, shared by calls of both eras
        assert seen["request_id"] == "7"  # ids are carried as text
