"""Two gateway processes over one real redis-server: a legacy session opened on one is served
by the other."""

from __future__ import annotations

from pathlib import Path

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
