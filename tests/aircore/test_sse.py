"""The legacy HTTP+SSE transport (2024-11-05) of a real ``air serve --transport sse`` process,
driven by the official SDK's ``mcp.client.sse.sse_client`` and by raw HTTP."""

from __future__ import annotations

import json
import os
import re
import subprocess
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from mcp.client.session import ClientSession
from mcp.client.sse import sse_client

from tests.aircore.conftest import DEMO, LIFECYCLE, ROOT, STARTUP_TIMEOUT, HttpServer, serve_args

# real air serve --transport sse processes: make test, not test-fast
pytestmark = pytest.mark.slow

TOKEN = "sse-t0ken"
WAIT = 20.0


@pytest.fixture(scope="module")
def sse() -> Iterator[HttpServer]:
    srv = HttpServer(DEMO, "--transport", "sse")
    try:
        yield srv
    finally:
        assert srv.close() == 0


@pytest.fixture(scope="module")
def guarded() -> Iterator[HttpServer]:
    srv = HttpServer(DEMO, "--transport", "sse", "--token", TOKEN)
    try:
        yield srv
    finally:
        assert srv.close() == 0


async def test_the_official_sse_client_initializes_lists_and_calls(sse: HttpServer) -> None:
    assert sse.url.endswith("/sse")
    async with (
        sse_client(sse.url, timeout=WAIT) as (read, write),
        ClientSession(read, write) as session,
    ):
        init = await session.initialize()
        assert init.server_info.name == "air-demo"
        tools = await session.list_tools()
        assert "greet" in {tool.name for tool in tools.tools}
        result = await session.call_tool("greet", {"name": "sse"})
        assert result.is_error is not True
        assert "sse" in result.content[0].text
        failed = await session.call_tool("always_fails", {})
        assert failed.is_error is True


async def test_progress_reaches_the_sse_client_on_its_stream(sse: HttpServer) -> None:
    seen: list[float] = []

    async def progress(value: float, total: float | None, message: str | None) -> None:
        seen.append(value)

    async with (
        sse_client(sse.url, timeout=WAIT) as (read, write),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        result = await session.call_tool("slow_task", {"seconds": 0.3}, progress_callback=progress)
        assert result.is_error is not True
    assert seen  # notifications/progress travelled on the event stream


def _first_events(stream: httpx.Response, count: int) -> list[tuple[str, str]]:
    events: list[tuple[str, str]] = []
    name = data = ""
    for line in stream.iter_lines():
        if line.startswith("event:"):
            name = line[6:].strip()
        elif line.startswith("data:"):
            data = line[5:].strip()
        elif not line and name:
            events.append((name, data))
            if len(events) == count:
                return events
            name = data = ""
    return events


def test_raw_sse_announces_the_endpoint_and_answers_on_the_stream(sse: HttpServer) -> None:
    with (
        httpx.Client(base_url=sse.base, timeout=WAIT) as client,
        client.stream("GET", "/sse") as stream,
    ):
        assert stream.headers["content-type"].startswith("text/event-stream")
        lines = stream.iter_lines()
        assert next(lines) == "event: endpoint"
        endpoint = next(lines)[5:].strip()
        assert re.fullmatch(r"/messages\?session_id=[0-9a-f]{32}", endpoint)
        ping = {"jsonrpc": "2.0", "id": 7, "method": "ping"}
        posted = client.post(endpoint, json=ping)
        assert posted.status_code == 202
        bad = client.post(endpoint, content=b"{nope", headers={"content-type": "application/json"})
        assert bad.status_code == 400
        wrong = client.post(endpoint, content=b"{}", headers={"content-type": "text/plain"})
        assert wrong.status_code == 415
        answers: list[dict[str, Any]] = []
        for line in lines:
            if line.startswith("data:"):
                answers.append(json.loads(line[5:]))
            if len(answers) == 2:
                break
        assert answers[0] == {"jsonrpc": "2.0", "id": 7, "result": {}}
        assert answers[1]["error"]["code"] == -32700  # the unparsable POST, on the stream


def test_messages_for_a_missing_or_unknown_session_are_refused(sse: HttpServer) -> None:
    with httpx.Client(base_url=sse.base, timeout=WAIT) as client:
        ping = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
        assert client.post("/messages", json=ping).status_code == 400
        assert client.post("/messages?session_id=" + "0" * 32, json=ping).status_code == 404
        assert client.get("/messages").status_code == 405


def test_the_sse_endpoints_are_guarded_like_mcp(guarded: HttpServer) -> None:
    auth = {"authorization": f"Bearer {TOKEN}"}
    with httpx.Client(base_url=guarded.base, timeout=WAIT) as client:
        assert client.get("/sse").status_code == 401
        assert (
            client.get("/sse", headers={**auth, "origin": "https://evil.example"}).status_code
            == 403
        )
        assert client.get("/sse", headers={**auth, "host": "evil.example"}).status_code == 421
        ping = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
        assert client.post("/messages?session_id=x", json=ping).status_code == 401
        with client.stream("GET", "/sse", headers=auth) as stream:
            assert stream.status_code == 200
            assert _first_events(stream, 1)[0][0] == "endpoint"


def test_mcp_transport_sse_serves_the_legacy_transport() -> None:
    proc = subprocess.Popen(
        serve_args(DEMO, "--port", "0", "--store", "memory://"),
        stdin=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        cwd=ROOT,
        env={**os.environ, "MCP_TRANSPORT": "sse"},
    )
    try:
        assert proc.stderr is not None
        line = proc.stderr.readline()
        found = re.search(r"http://\S+/sse", line)
        assert found, line
        with (
            httpx.Client(timeout=WAIT) as client,
            client.stream("GET", found.group(0)) as stream,
        ):
            assert _first_events(stream, 1)[0][0] == "endpoint"
    finally:
        proc.terminate()
        assert proc.wait(STARTUP_TIMEOUT) == 0
        if proc.stderr is not None:
            proc.stderr.close()


@pytest.fixture(scope="module")
def echo_sse(tmp_path_factory: pytest.TempPathFactory) -> Iterator[HttpServer]:
    events = tmp_path_factory.mktemp("sse") / "events.txt"
    srv = HttpServer(LIFECYCLE, "--transport", "sse", env={"AIR_TEST_EVENTS": str(events)})
    try:
        yield srv
    finally:
        assert srv.close() == 0


def test_a_session_whose_stream_is_never_read_is_closed_not_grown(echo_sse: HttpServer) -> None:
    import socket
    from urllib.parse import urlsplit

    sse = echo_sse
    where = urlsplit(sse.base)
    assert where.hostname is not None
    assert where.port is not None
    with socket.create_connection((where.hostname, where.port), timeout=WAIT) as stream:
        stream.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        stream.sendall(b"GET /sse HTTP/1.1\r\nHost: localhost\r\nAccept: text/event-stream\r\n\r\n")
        head = b""
        while b"session_id=" not in head or not head.endswith(b"\n\n"):
            head += stream.recv(1)
        sid = head.split(b"session_id=")[1].split(b"\n")[0].decode()
        text = "x" * (1024 * 1024)  # every answer carries 1 MiB back; nobody reads it
        statuses: list[int] = []
        with httpx.Client(base_url=sse.base, timeout=WAIT) as client:
            for i in range(64):
                call = {
                    "jsonrpc": "2.0",
                    "id": i,
                    "method": "tools/call",
                    "params": {"name": "echo", "arguments": {"text": text}},
                }
                statuses.append(client.post(f"/messages?session_id={sid}", json=call).status_code)
                if statuses[-1] == 404:
                    break  # the server closed the session it could not deliver to
    assert statuses[-1] == 404, statuses
    assert len(statuses) < 64
