"""A 2025-era request cancelled by ``notifications/cancelled`` over Streamable HTTP, against a
real ``air serve`` process: its POST, still open, gets the official SDK's answer."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx
import pytest

from tests.aircore.conftest import ROOT, HttpServer

LINGER = str(ROOT / "tests" / "aircore" / "fixtures" / "linger_server.py")
HEADERS = {"content-type": "application/json", "accept": "application/json, text/event-stream"}


@pytest.fixture(scope="module")
def marks(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("marks")


@pytest.fixture(scope="module")
def server(marks: Path) -> Iterator[HttpServer]:
    srv = HttpServer(LINGER, env={"AIR_TEST_MARKS": str(marks)})
    try:
        yield srv
    finally:
        assert srv.close() == 0


async def _until(done: Callable[[], bool], what: str) -> None:
    for _ in range(600):
        if done():
            return
        await asyncio.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


async def _session(http: httpx.AsyncClient, url: str) -> str:
    init = {"jsonrpc": "2.0", "id": 0, "method": "initialize",
            "params": {"protocolVersion": "2025-11-25", "capabilities": {},
                       "clientInfo": {"name": "raw", "version": "1"}}}  # fmt: skip
    r = await http.post(url, json=init, headers=HEADERS)
    assert r.status_code == 200, r.text
    sid = r.headers["mcp-session-id"]
    note = {"jsonrpc": "2.0", "method": "notifications/initialized"}
    assert (
        await http.post(url, json=note, headers={**HEADERS, "mcp-session-id": sid})
    ).status_code == 202
    return sid


def _answer(r: httpx.Response) -> dict[str, object]:
    if r.headers["content-type"].startswith("text/event-stream"):
        data = [line[5:] for line in r.text.splitlines() if line.startswith("data:")]
        return dict(json.loads(data[-1]))
    return dict(r.json())


@pytest.mark.parametrize("accept", ["application/json", "text/event-stream"])
async def test_a_legacy_call_cancelled_by_its_client_is_answered_request_cancelled(
    server: HttpServer, marks: Path, accept: str
) -> None:
    """Before, the POST got HTTP 500 and the server logged that the app returned without
    answering (JSON), or the stream ended with no answer for its id (SSE)."""
    tag = accept.split("/")[1]
    async with httpx.AsyncClient(timeout=30) as http:
        sid = await _session(http, server.url)
        headers = {**HEADERS, "accept": f"{accept}, text/event-stream", "mcp-session-id": sid}
        if accept == "application/json":
            headers["accept"] = "application/json"
        body = {"jsonrpc": "2.0", "id": 77, "method": "tools/call",
                "params": {"name": "linger", "arguments": {"tag": tag}}}  # fmt: skip
        call = asyncio.ensure_future(http.post(server.url, json=body, headers=headers))
        await _until((marks / f"{tag}.started").exists, "the call to start")
        cancel = {"jsonrpc": "2.0", "method": "notifications/cancelled",
                  "params": {"requestId": 77, "reason": "user gave up"}}  # fmt: skip
        sent = await http.post(server.url, json=cancel, headers={**HEADERS, "mcp-session-id": sid})
        assert sent.status_code == 202
        answer = await call
    assert answer.status_code == 200, answer.text
    assert _answer(answer) == {
        "jsonrpc": "2.0", "id": 77, "error": {"code": -32800, "message": "Request cancelled"}
    }  # fmt: skip
    await _until((marks / f"{tag}.cancelled").exists, "the tool to see its cancellation")
