"""Access at the gateway (client tokens, allow globs, rate limits) and metering of every
proxied call (upstream name, replica, isError as tool_error), against real processes."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest

from airmeter import CALLS_NAMESPACE
from airstore import create_storage
from dashboard import DashboardData
from tests.airgateway.procs import air, free_port, http_replica, started
from tests.airgateway.rpc import envelope, modern_call

pytestmark = pytest.mark.slow
CI_TOKEN = "ci-token-123"
OPS_TOKEN = "ops-token-456"


def _config(path: Path, a: int, b: int) -> Path:
    path.write_text(
        f"""
servers:
  - name: notes
    url: http://127.0.0.1:{a}/mcp
  - name: notes
    url: http://127.0.0.1:{b}/mcp
balancer:
  strategy: round_robin
clients:
  - name: ci
    token_env: GW_CI_TOKEN
    allow: ["echo", "who*", "fail"]
    rate_per_s: 4
  - name: ops
    token_env: GW_OPS_TOKEN
limits:
  per_tool_rate_per_s: {{"slow_*": 2}}
"""
    )
    return path


async def test_tokens_allow_lists_rate_limits_and_metering(tmp_path: Path) -> None:
    ports = [free_port(), free_port()]
    config = _config(tmp_path / "gw.yml", *ports)
    data = tmp_path / "data"
    env = {"GW_CI_TOKEN": CI_TOKEN, "GW_OPS_TOKEN": OPS_TOKEN}
    argv = air("gateway", "--config", str(config), "--port", "0", "--store", f"file://{data}")
    with (
        started(http_replica("a", ports[0]), env={"REPLICA": "a"}),
        started(http_replica("b", ports[1]), env={"REPLICA": "b"}),
        started(argv, env=env) as gateway,
    ):
        url = gateway.url
        async with httpx.AsyncClient(timeout=10) as http:
            body, headers = envelope("tools/call", {"name": "echo", "arguments": {"text": "x"}})
            assert (await http.post(url, json=body, headers=headers)).status_code == 401
            headers["authorization"] = "Bearer wrong"
            assert (await http.post(url, json=body, headers=headers)).status_code == 401
            status = await http.get(url.replace("/mcp", "/status"))
            assert status.status_code == 401  # /status is guarded like /mcp

            ok = await modern_call(http, url, "echo", {"text": "x"}, token=CI_TOKEN)
            assert ok["result"]["content"][0]["text"] in ("a:x", "b:x")
            denied = await modern_call(http, url, "slow_write", {"seconds": 0}, token=CI_TOKEN)
            assert denied["error"]["code"] == -32004
            assert denied["error"]["data"] == {"client": "ci", "name": "slow_write"}
            failed = await modern_call(http, url, "fail", token=CI_TOKEN)
            assert failed["result"]["isError"] is True

            codes = [
                "result" if "result" in r else r["error"]["code"]
                for r in [await modern_call(http, url, "whoami", token=CI_TOKEN) for _ in range(12)]
            ]
            assert -32005 in codes  # ci may make 4 calls a second
            assert "result" in codes
            per_tool = [
                await modern_call(http, url, "slow_read", {"seconds": 0}, token=OPS_TOKEN)
                for _ in range(6)
            ]
            assert any(r.get("error", {}).get("code") == -32005 for r in per_tool)
            unlimited = [await modern_call(http, url, "whoami", token=OPS_TOKEN) for _ in range(8)]
            assert all("result" in r for r in unlimited)  # ops: no client limit, any tool
        assert gateway.stop() == 0  # SIGTERM: metering is flushed before exit

    async with await create_storage(f"file://{data}") as store:
        records = await store.query(CALLS_NAMESPACE, limit=1000)
    assert records, "the gateway metered nothing"
    assert {r["server"] for r in records} == {"notes"}
    urls = {f"http://127.0.0.1:{port}/mcp" for port in ports}
    assert {r["instance_id"] for r in records} == urls  # the same in every gateway
    assert {r["client_name"] for r in records} >= {"ci", "ops"}
    fails = [r for r in records if r["tool"] == "fail"]
    assert len(fails) == 1
    assert fails[0]["ok"] is False
    assert fails[0]["error_type"] == "tool_error"
    echo = next(r for r in records if r["tool"] == "echo")
    assert echo["ok"] is True
    assert echo["layer"] == "L1"
    # the dashboard's server filter offers the upstream and each replica
    dashboard = await DashboardData.open(f"file://{data}")
    try:
        view = await dashboard.view(dashboard.resolve("24h"))
    finally:
        await dashboard.close()
    offered = {(c.server, c.instance) for c in view.server_choices}
    assert {("notes", None)} | {("notes", url) for url in urls} <= offered


async def test_upstream_headers_from_the_environment_reach_the_upstream(tmp_path: Path) -> None:
    """The upstream wants a bearer token; the gateway sends the one its config names by env."""
    port = free_port()
    config = tmp_path / "gw.yml"
    config.write_text(
        "servers:\n"
        f"  - name: guarded\n    url: http://127.0.0.1:{port}/mcp\n"
        "    headers: {Authorization: {env: UPSTREAM_AUTH}}\n"
    )
    argv = air("gateway", "--config", str(config), "--port", "0", "--store", "memory://")
    with (
        started([*http_replica("a", port), "--token", "up-secret"], env={"REPLICA": "g"}),
        started(argv, env={"UPSTREAM_AUTH": "Bearer up-secret"}) as gateway,
    ):
        async with httpx.AsyncClient(timeout=10) as http:
            answer = await modern_call(http, gateway.url, "whoami")
            direct = await http.post(f"http://127.0.0.1:{port}/mcp", json={})
    assert answer["result"]["content"][0]["text"] == "g", answer
    assert direct.status_code == 401  # the upstream does check the token
