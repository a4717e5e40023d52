"""A gateway never calls itself: it does not adopt a URL another gateway registered when that
URL is a live gateway's own endpoint, and a request carrying its own hop id (a configuration
that names the gateway's own URL) is refused, so no call recurses until the in-flight limit."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.airgateway.procs import Proc, air, free_port, http_replica, started
from tests.airgateway.rpc import envelope, modern_call

pytestmark = pytest.mark.slow
QUICK = "health:\n  interval_s: 0.3\n  unhealthy_after: 1\nbalancer:\n  strategy: round_robin\n"
WAIT_S = 30.0


def _gateway(config: Path, store: str, port: int = 0) -> list[str]:
    return air("gateway", "--config", str(config), "--port", str(port), "--store", store,
               "--no-meter")  # fmt: skip


def _wait(gateway: Proc, what: str, ok: Callable[[dict[str, Any]], bool]) -> dict[str, Any]:
    """Wait (bounded) until the gateway's status satisfies ``ok``."""
    deadline = time.monotonic() + WAIT_S
    while True:
        status: dict[str, Any] = httpx.get(gateway.url.replace("/mcp", "/status"),
                                           timeout=10).json()  # fmt: skip
        if ok(status):
            return status
        if time.monotonic() > deadline:
            raise AssertionError(f"never {what}: {status}")
        time.sleep(0.1)  # polling the gateway's own status: nothing to wait on


async def _whoami(url: str, times: int) -> list[str]:
    async with httpx.AsyncClient(timeout=30) as http:
        return [str((await modern_call(http, url, "whoami", {}))["result"]["content"][0]["text"])
                for _ in range(times)]  # fmt: skip


async def test_a_gateway_never_adopts_its_own_endpoint_registered_by_a_gateway_in_front_of_it(
    tmp_path: Path,
) -> None:
    store = f"file://{tmp_path / 'data'}"
    replica, port = free_port(), free_port()
    (tmp_path / "a.yml").write_text(
        f"servers:\n  - name: notes\n    url: http://127.0.0.1:{replica}/mcp\n" + QUICK
    )
    (tmp_path / "b.yml").write_text(
        f"servers:\n  - name: notes\n    url: http://127.0.0.1:{port}/mcp\n" + QUICK
    )
    with (
        started(http_replica("r1", replica), env={"REPLICA": "r1"}),
        started(_gateway(tmp_path / "a.yml", store, port)) as a,
        started(_gateway(tmp_path / "b.yml", store)) as b,
    ):
        b_id = _wait(b, "registered", lambda s: bool(s["registry"]["gateway"]))["registry"]
        status = _wait(
            a,
            "read b's registration",
            lambda s: b_id["gateway"] in {g["id"] for g in s["registry"]["gateways"]},
        )
        assert [u["url"] for u in status["upstreams"]] == [f"http://127.0.0.1:{replica}/mcp"]
        assert await _whoami(a.url, 4) == ["r1"] * 4
        assert await _whoami(b.url, 2) == ["r1"] * 2  # a gateway in front of another works
        # a tools/call that carries b's own hop id (it went round to b again) is refused
        body, headers = envelope("tools/call", {"name": "whoami", "arguments": {}})
        async with httpx.AsyncClient(timeout=30) as http:
            looped = await http.post(
                b.url, json=body, headers={**headers, "air-gateway-hop": b_id["gateway"]}
            )
            other = await http.post(b.url, json=body, headers={**headers, "air-gateway-hop": "x"})
        assert looped.status_code == 508
        assert other.status_code == 200


async def test_a_configuration_naming_the_gateways_own_url_is_refused_as_a_loop(
    tmp_path: Path,
) -> None:
    replica, port = free_port(), free_port()
    own = f"http://127.0.0.1:{port}/mcp"
    (tmp_path / "a.yml").write_text(
        f"servers:\n  - name: notes\n    url: http://127.0.0.1:{replica}/mcp\n"
        f"  - name: notes\n    url: {own}\n" + QUICK)  # fmt: skip
    with (
        started(http_replica("r1", replica), env={"REPLICA": "r1"}),
        started(_gateway(tmp_path / "a.yml", "memory://", port)) as a,
    ):
        status = _wait(a, "checked its own url once listening", lambda s: any(
            u["url"] == own and (u["state"] == "healthy" or "loop" in (u["last_error"] or ""))
            for u in s["upstreams"]))  # fmt: skip
        assert [u["state"] for u in status["upstreams"] if u["url"] == own] == ["down"]
        assert await _whoami(a.url, 4) == ["r1"] * 4
