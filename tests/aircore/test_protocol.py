"""The protocol layer in-process: framing errors, both eras, pagination, envelope checks."""

from __future__ import annotations

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
