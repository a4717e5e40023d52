"""Two gateway processes over one real redis-server: a legacy session opened on one is served
by the other; a replica one of them finds down leaves the other's pool too, and comes back."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.airgateway.procs import air, free_port, http_replica, started
from tests.airgateway.rpc import legacy_request
from tests.redis_server import RedisServer, shared_redis_server

pytestmark = [pytest.mark.redis, pytest.mark.slow]


@pytest.fixture
def redis_server() -> RedisServer:
    """The session's shared redis-server (database 3 is this module's)."""
    return shared_redis_server()


async def test_a_legacy_session_opened_on_one_gateway_is_served_by_another(
    redis_server: RedisServer, tmp_path: Path
) -> None:
    port = free_port()
    config = tmp_path / "gw.yml"
    config.write_text(f"servers:\n  - name: notes\n    url: http://127.0.0.1:{port}/mcp\n")
    store = redis_server.url(3)
    with (
        started(http_replica("a", port), env={"REPLICA": "a"}),
        started(air("gateway", "--config", str(config), "--port", "0", "--store", store)) as g1,
        started(air("gateway", "--config", str(config), "--port", "0", "--store", store)) as g2,
    ):
        async with httpx.AsyncClient(timeout=10) as http:
            init = await legacy_request(
                http,
                g1.url,
                "initialize",
                {
                    "protocolVersion": "2025-06-18",
                    "capabilities": {},
                    "clientInfo": {"name": "t", "version": "1"},
                },
                None,
            )
            sid = init.headers["mcp-session-id"]
            assert init.json()["result"]["protocolVersion"] == "2025-06-18"
            call = await legacy_request(
                http, g2.url, "tools/call", {"name": "echo", "arguments": {"text": "x"}}, sid
            )
            assert call.status_code == 200, call.text
            assert call.json()["result"]["content"][0]["text"] == "a:x"
            unknown = await legacy_request(http, g2.url, "tools/list", {}, "f" * 32)
            assert unknown.status_code == 404
            ended = await http.delete(g2.url, headers={"mcp-session-id": sid})
            assert ended.status_code == 200
            gone = await legacy_request(http, g2.url, "tools/list", {}, sid)
            assert gone.status_code == 404


def _notes(gateway_url: str) -> dict[str, Any]:
    status = httpx.get(gateway_url.replace("/mcp", "/status"), timeout=10).json()
    found: dict[str, Any] = status["upstreams"][0]
    return found


def _wait_notes(gateway_url: str, state: str, error_part: str | None = None) -> dict[str, Any]:
    """Wait (bounded) until the gateway's notes#0 reaches ``state``."""
    deadline = time.monotonic() + 30
    while True:
        notes = _notes(gateway_url)
        if notes["state"] == state and (error_part is None or error_part in notes["last_error"]):
            return notes
        if time.monotonic() > deadline:
            raise AssertionError(f"notes#0 never became {state}: {notes}")
        time.sleep(0.1)  # polling the gateway's own status: nothing to wait on


def test_a_replica_one_gateway_finds_down_leaves_the_others_pool_and_comes_back(
    redis_server: RedisServer, tmp_path: Path
) -> None:
    port = free_port()
    server = f"servers:\n  - name: notes\n    url: http://127.0.0.1:{port}/mcp\n"
    quick = tmp_path / "quick.yml"  # checks often
    quick.write_text(server + "health:\n  interval_s: 0.3\n  unhealthy_after: 1\n")
    slow = tmp_path / "slow.yml"  # would not check again within this test
    slow.write_text(server + "health:\n  interval_s: 600\n")
    store = redis_server.url(5)
    first = started(http_replica("a", port), env={"REPLICA": "a"})
    replica = first.__enter__()  # the context manager kept: it kills the process when collected
    again = None
    try:
        with (
            started(air("gateway", "--config", str(quick), "--port", "0", "--store", store)) as g1,
            started(air("gateway", "--config", str(slow), "--port", "0", "--store", store)) as g2,
        ):
            assert _notes(g2.url)["state"] == "healthy"
            replica.kill()
            _wait_notes(g1.url, "down")
            held = _wait_notes(g2.url, "down", "down at another gateway")
            # the error the other gateway's check found travels with the mark
            assert held["last_error"].startswith("down at another gateway: notes#0: ")
            again = started(http_replica("a", port), env={"REPLICA": "a2"})
            replica = again.__enter__()
            _wait_notes(g1.url, "healthy")
            _wait_notes(g2.url, "healthy")  # the mark is gone: its own check brings it back
            answer = httpx.post(
                g2.url,
                json={"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                      "params": {"name": "whoami", "_meta": {
                          "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                          "io.modelcontextprotocol/clientCapabilities": {}}}},
                headers={"mcp-protocol-version": "2026-07-28", "mcp-method": "tools/call",
                         "mcp-name": "whoami", "accept": "application/json"},
                timeout=10,
            ).json()  # fmt: skip
            assert answer["result"]["content"][0]["text"] == "a2"
    finally:
        for proc in (first, again):
            if proc is not None:
                proc.__exit__(None, None, None)
