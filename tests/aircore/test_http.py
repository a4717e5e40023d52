"""Raw HTTP against a real ``air serve --transport http`` process: security checks, sessions,
the 2026-07-28 header rules, and an error for every malformed frame."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.aircore.conftest import LIFECYCLE, HttpServer

TOKEN = "s3cret"
MAX = 64 * 1024
V = "2026-07-28"
META = {
    "io.modelcontextprotocol/protocolVersion": V,
    "io.modelcontextprotocol/clientCapabilities": {},
}
BASE_HEADERS = {
    "authorization": f"Bearer {TOKEN}",
    "content-type": "application/json",
    "accept": "application/json, text/event-stream",
}


@pytest.fixture(scope="module")
def events(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("http") / "events.txt"


@pytest.fixture(scope="module")
def server(events: Path) -> Iterator[HttpServer]:
    srv = HttpServer(
        LIFECYCLE, "--token", TOKEN, "--max-message", str(MAX), env={"AIR_TEST_EVENTS": str(events)}
    )
    try:
        yield srv
    finally:
        assert srv.close() == 0  # SIGTERM → clean exit
        assert events.read_text().split()[-1] == "stop"


@pytest.fixture
async def http(server: HttpServer) -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(base_url=server.base, timeout=20.0) as client:
        yield client


async def _post(http: httpx.AsyncClient, body: Any, **headers: str) -> httpx.Response:
    data = body if isinstance(body, bytes) else json.dumps(body).encode()
    hdrs = {**BASE_HEADERS, **{k.replace("_", "-"): v for k, v in headers.items()}}
    return await http.post("/mcp", content=data, headers=hdrs)


def _body(r: httpx.Response) -> Any:
    """The JSON-RPC answer, from a JSON body or the last event of an SSE body."""
    if r.headers["content-type"].startswith("text/event-stream"):
        data = [line[5:] for line in r.text.splitlines() if line.startswith("data:")]
        return json.loads(data[-1])
    return r.json()


async def _session(http: httpx.AsyncClient) -> str:
    r = await _post(
        http,
        {
            "jsonrpc": "2.0",
            "id": 0,
            "method": "initialize",
            "params": {
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": "raw", "version": "1"},
            },
        },
    )
    assert r.status_code == 200
    assert r.json()["result"]["protocolVersion"] == "2025-06-18"
    sid = r.headers["mcp-session-id"]
    note = await _post(
        http, {"jsonrpc": "2.0", "method": "notifications/initialized"}, mcp_session_id=sid
    )
    assert note.status_code == 202
    return sid


async def test_missing_or_wrong_bearer_token_is_401(http: httpx.AsyncClient) -> None:
    ping = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
    assert (await _post(http, ping, authorization="")).status_code == 401
    assert (await _post(http, ping, authorization="Bearer nope")).status_code == 401
    assert (await _post(http, ping, authorization=f"Basic {TOKEN}")).status_code == 401
    assert (await _post(http, ping, authorization=f"Bearer {TOKEN}x")).status_code == 401
    assert (await _post(http, ping, authorization=f"bearer {TOKEN}")).status_code != 401


async def test_foreign_origin_is_403_and_localhost_origin_is_served(
    http: httpx.AsyncClient,
) -> None:
    body = {"jsonrpc": "2.0", "id": 1, "method": "server/discover", "params": {"_meta": META}}
    hdrs = {"mcp_protocol_version": V, "mcp_method": "server/discover"}
    assert (await _post(http, body, origin="https://evil.example", **hdrs)).status_code == 403
    ok = await _post(http, body, origin="http://localhost:5173", **hdrs)
    assert ok.status_code == 200
    assert ok.json()["result"]["supportedVersions"] == [V]


async def test_body_limit_content_type_and_get(http: httpx.AsyncClient) -> None:
    big = {"jsonrpc": "2.0", "id": 1, "method": "ping", "params": {"pad": "x" * (2 * MAX)}}
    assert (await _post(http, big)).status_code == 413
    wrong = await _post(
        http, {"jsonrpc": "2.0", "id": 1, "method": "ping"}, content_type="text/plain"
    )
    assert wrong.status_code == 415
    got = await http.get("/mcp", headers={"authorization": f"Bearer {TOKEN}"})
    assert got.status_code == 405


@pytest.mark.parametrize(
    ("content_type", "status"),
    [
        ("application/json", 200),
        ("Application/JSON; charset=utf-8", 200),
        ("application/jsonx", 415),
        ("text/plain; note=application/json", 415),
        ("application/json-seq", 415),
        ("multipart/form-data; boundary=application/json", 415),
    ],
)
async def test_content_type_is_judged_as_a_media_type(
    http: httpx.AsyncClient, content_type: str, status: int
) -> None:
    body = {"jsonrpc": "2.0", "id": 1, "method": "server/discover", "params": {"_meta": META}}
    hdrs = {"mcp_protocol_version": V, "mcp_method": "server/discover"}
    r = await _post(http, body, content_type=content_type, **hdrs)
    assert r.status_code == status


@pytest.mark.parametrize(
    ("authorization", "status"),
    [
        (f"BEARER {TOKEN}", 200),
        (f"bearer   {TOKEN}", 200),
        (f"Bearer {TOKEN} extra", 401),
        (f"Bearer\t{TOKEN}", 401),
        (f"Bearer,{TOKEN}", 401),
        (f"Basic {TOKEN}", 401),
        (f"Bearer {TOKEN}=x", 401),
    ],
)
async def test_bearer_credentials_are_parsed_per_rfc_6750(
    http: httpx.AsyncClient, authorization: str, status: int
) -> None:
    body = {"jsonrpc": "2.0", "id": 1, "method": "server/discover", "params": {"_meta": META}}
    hdrs = {"mcp_protocol_version": V, "mcp_method": "server/discover"}
    r = await _post(http, body, authorization=authorization, **hdrs)
    assert r.status_code == status


async def test_the_status_page_is_guarded_like_the_mcp_endpoint(http: httpx.AsyncClient) -> None:
    auth = {"authorization": f"Bearer {TOKEN}"}
    ok = await http.get("/", headers=auth)
    assert ok.status_code == 200
    assert ok.json()["endpoint"] == "/mcp"
    assert (await http.get("/")).status_code == 401
    assert (
        await http.get("/", headers={**auth, "origin": "https://evil.example"})
    ).status_code == 403
    assert (await http.get("/", headers={**auth, "host": "evil.example"})).status_code == 421
    assert (await http.get("/nowhere", headers=auth)).status_code == 404


MALFORMED: list[tuple[bytes, int, Any]] = [
    (b"{not json", -32700, None),
    (b"[]", -32600, None),
    (json.dumps([{"jsonrpc": "2.0", "id": 2, "method": "ping"}]).encode(), -32600, None),
    (b'"text"', -32600, None),
    (json.dumps({"jsonrpc": "2.0", "id": 3, "method": 17}).encode(), -32600, 3),
    (json.dumps({"jsonrpc": "2.0", "id": 4}).encode(), -32600, 4),
    (json.dumps({"jsonrpc": "2.0", "id": {}, "method": "ping"}).encode(), -32600, None),
    (json.dumps({"jsonrpc": "2.0", "id": 5, "method": "ping", "params": [1]}).encode(), -32602, 5),
]


@pytest.mark.parametrize(("frame", "code", "echo"), MALFORMED)
async def test_every_malformed_frame_gets_its_error(
    http: httpx.AsyncClient, frame: bytes, code: int, echo: Any
) -> None:
    r = await _post(http, frame)
    assert r.status_code == 400
    body = r.json()
    assert body["error"]["code"] == code
    assert body["id"] == echo


async def test_legacy_session_rules(http: httpx.AsyncClient) -> None:
    sid = await _session(http)
    call = {
        "jsonrpc": "2.0",
        "id": 9,
        "method": "tools/call",
        "params": {"name": "echo", "arguments": {"text": "hi"}},
    }
    ok = await _post(http, call, mcp_session_id=sid)
    assert ok.headers["content-type"].startswith("text/event-stream")  # legacy calls may talk
    assert _body(ok)["result"]["content"][0]["text"] == "hi"
    as_json = await _post(http, call, mcp_session_id=sid, accept="application/json")
    assert as_json.json()["result"]["content"][0]["text"] == "hi"
    missing = await _post(http, call)
    assert missing.status_code == 400
    assert missing.json()["error"]["code"] == -32600
    unknown = await _post(http, call, mcp_session_id="nope")
    assert unknown.status_code == 404
    bad_args = await _post(
        http, {**call, "params": {"name": "echo", "arguments": "x"}}, mcp_session_id=sid
    )
    assert _body(bad_args)["error"]["code"] == -32602
    unknown_method = await _post(
        http, {"jsonrpc": "2.0", "id": 10, "method": "nope/x"}, mcp_session_id=sid
    )
    assert unknown_method.status_code == 404
    assert unknown_method.json()["error"]["code"] == -32601
    deleted = await http.delete("/mcp", headers={**BASE_HEADERS, "mcp-session-id": sid})
    assert deleted.status_code == 200
    assert (await _post(http, call, mcp_session_id=sid)).status_code == 404


async def test_modern_requests_check_headers_against_the_body(http: httpx.AsyncClient) -> None:
    call = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {"_meta": META, "name": "echo", "arguments": {"text": "m"}},
    }
    good = {"mcp_protocol_version": V, "mcp_method": "tools/call", "mcp_name": "echo"}
    ok = await _post(http, call, **good)
    assert ok.status_code == 200
    assert ok.json()["result"]["resultType"] == "complete"
    for bad in (
        {**good, "mcp_name": "other"},
        {**good, "mcp_method": "tools/list"},
        {"mcp_method": "tools/call", "mcp_name": "echo"},
    ):
        r = await _post(http, call, **bad)
        assert r.status_code == 400
        assert r.json()["error"]["code"] == -32020
    old = {
        **call,
        "params": {
            **call["params"],
            "_meta": {**META, "io.modelcontextprotocol/protocolVersion": "2030-01-01"},
        },
    }
    r = await _post(http, old, **{**good, "mcp_protocol_version": "2030-01-01"})
    assert r.status_code == 400
    assert r.json()["error"]["code"] == -32022


async def test_sse_answer_when_the_client_accepts_only_event_streams(
    http: httpx.AsyncClient,
) -> None:
    call = {
        "jsonrpc": "2.0",
        "id": 7,
        "method": "tools/call",
        "params": {
            "_meta": {**META, "progressToken": "p"},
            "name": "echo",
            "arguments": {"text": "sse"},
        },
    }
    r = await _post(
        http,
        call,
        accept="text/event-stream",
        mcp_protocol_version=V,
        mcp_method="tools/call",
        mcp_name="echo",
    )
    assert r.status_code == 200
    assert r.headers["content-type"].startswith("text/event-stream")
    data = [json.loads(line[5:]) for line in r.text.splitlines() if line.startswith("data:")]
    assert data[-1]["id"] == 7
    assert data[-1]["result"]["content"][0]["text"] == "sse"


async def test_a_non_localhost_host_header_is_rejected(http: httpx.AsyncClient) -> None:
    body = {"jsonrpc": "2.0", "id": 1, "method": "server/discover", "params": {"_meta": META}}
    hdrs = {"mcp_protocol_version": V, "mcp_method": "server/discover"}
    rebound = await _post(http, body, host="evil.example:8080", **hdrs)
    assert rebound.status_code == 421
    local = await _post(http, body, host="localhost:1234", **hdrs)
    assert local.status_code == 200


async def test_overlapping_calls_of_one_session_each_get_their_own_progress(
    demo_http: HttpServer,
) -> None:
    headers = {k: v for k, v in BASE_HEADERS.items() if k != "authorization"}
    async with httpx.AsyncClient(base_url=demo_http.base, timeout=20.0) as client:
        init = await client.post(
            "/mcp",
            headers=headers,
            json={
                "jsonrpc": "2.0",
                "id": 0,
                "method": "initialize",
                "params": {
                    "protocolVersion": "2025-06-18",
                    "capabilities": {},
                    "clientInfo": {"name": "raw", "version": "1"},
                },
            },
        )
        sid = init.headers["mcp-session-id"]

        def call(token: str, msg_id: int) -> Any:
            return client.post(
                "/mcp",
                headers={**headers, "mcp-session-id": sid},
                json={
                    "jsonrpc": "2.0",
                    "id": msg_id,
                    "method": "tools/call",
                    "params": {
                        "_meta": {"progressToken": token},
                        "name": "slow_task",
                        "arguments": {"seconds": 0.3},
                    },
                },
            )

        first, second = await asyncio.gather(call("A", 1), call("B", 2))
    for response, token, msg_id in ((first, "A", 1), (second, "B", 2)):
        events = [
            json.loads(line[5:]) for line in response.text.splitlines() if line.startswith("data:")
        ]
        progress = [e for e in events if e.get("method") == "notifications/progress"]
        assert progress, response.text
        assert {e["params"]["progressToken"] for e in progress} == {token}
        assert events[-1]["id"] == msg_id
        assert events[-1]["result"]["content"][0]["text"] == "slept 0.3s"
