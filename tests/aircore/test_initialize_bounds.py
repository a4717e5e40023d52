"""A legacy session keeps what its ``initialize`` declared for its whole life: an oversized
declaration is refused (a real ``air serve`` process over stdio), so 1,024 sessions can never
each hold a whole request body."""

from __future__ import annotations

import json
from pathlib import Path

import httpx

from aircore import define_server
from aircore.protocol.legacy import MAX_DECLARATION_BYTES
from aircore.transports.http import McpEndpoint
from tests.aircore.conftest import LIFECYCLE, HttpServer, lifecycle_over_stdio


def _initialize(msg_id: int, capabilities: object, client_info: object) -> bytes:
    params = {"protocolVersion": "2025-06-18", "capabilities": capabilities,
              "clientInfo": client_info}  # fmt: skip
    return json.dumps(
        {"jsonrpc": "2.0", "id": msg_id, "method": "initialize", "params": params}
    ).encode()


def _nested(depth: int) -> object:
    value: object = 1
    for _ in range(depth):
        value = [value]
    return value


def test_an_initialize_declaring_too_much_is_refused_and_a_normal_one_then_served(
    tmp_path: Path,
) -> None:
    pad = "x" * MAX_DECLARATION_BYTES
    frames = [
        _initialize(1, {"experimental": {"pad": pad}}, {"name": "c", "version": "1"}),
        _initialize(2, {}, {"name": "c", "version": "1", "title": pad}),
        _initialize(3, {"roots": {}}, {"name": "c", "version": "1"}),
        _initialize(4, {"experimental": {"n": 12345678901234567890123}}, {"name": "c"}),
        _initialize(5, {"experimental": {"deep": _nested(300)}}, {"name": "c"}),
    ]
    done = lifecycle_over_stdio(frames, tmp_path / "events.txt")
    answers = sorted((json.loads(line) for line in done.stdout.splitlines()), key=lambda a: a["id"])
    # an integer beyond 64 bits or nesting orjson cannot write is no internal error (-32603)
    assert [a.get("error", {}).get("code") for a in answers] == [-32602, -32602, None, None, None]
    assert f"at most {MAX_DECLARATION_BYTES}" in answers[0]["error"]["message"]
    assert answers[2]["result"]["protocolVersion"] == "2025-06-18"


def test_a_refused_initialize_over_http_opens_no_session(tmp_path: Path) -> None:
    server = HttpServer(LIFECYCLE, env={"AIR_TEST_EVENTS": str(tmp_path / "events.txt")})
    try:
        pad = {"experimental": {"pad": "x" * MAX_DECLARATION_BYTES}}
        headers = {"accept": "application/json, text/event-stream"}
        for accept in ("application/json, text/event-stream", "text/event-stream"):
            params = {"protocolVersion": "2025-06-18", "capabilities": pad,
                      "clientInfo": {"name": "c", "version": "1"}}  # fmt: skip
            body = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": params}
            answer = httpx.post(server.url, json=body, headers={**headers, "accept": accept})
            assert "mcp-session-id" not in answer.headers
            assert "-32602" in answer.text
    finally:
        assert server.close() == 0


async def test_a_refused_initialize_never_makes_room_by_ending_another_session() -> None:
    """The session table is full (one session in use, one just opened): a refused
    ``initialize`` must not end the newest client's session to make room for a session it
    never gets."""
    server = define_server(name="bounds", storage="memory://")
    endpoint = McpEndpoint(server, max_sessions=2)
    transport = httpx.ASGITransport(app=endpoint)
    headers = {"content-type": "application/json", "accept": "application/json"}
    info = {"name": "c", "version": "1"}

    async def initialize(capabilities: object) -> httpx.Response:
        params = {"protocolVersion": "2025-06-18", "capabilities": capabilities, "clientInfo": info}
        body = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": params}
        return await http.post("/mcp", json=body, headers=headers)

    async def ping(sid: str) -> int:
        body = {"jsonrpc": "2.0", "id": 2, "method": "ping"}
        return (
            await http.post("/mcp", json=body, headers={**headers, "mcp-session-id": sid})
        ).status_code

    async with server, httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1") as http:
        in_use = (await initialize({})).headers["mcp-session-id"]
        assert await ping(in_use) == 200
        newest = (await initialize({})).headers["mcp-session-id"]
        refused = await initialize({"experimental": {"pad": "x" * MAX_DECLARATION_BYTES}})
        assert refused.json()["error"]["code"] == -32602
        assert await ping(newest) == 200
        assert await ping(in_use) == 200
