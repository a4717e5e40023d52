"""Rate limits hold across gateway processes: two gateways over one real redis-server, and
over one file data dir, count a client's and a tool's calls together (the store's atomic
``incr``)."""

from __future__ import annotations

import asyncio
import math
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.airgateway.procs import Proc, air, free_port, http_replica, started
from tests.airgateway.rpc import modern_call
from tests.redis_server import shared_redis_server

pytestmark = pytest.mark.slow
RATE = 0.02
"""One call per 50-second window: every call below lands in one window unless one boundary
falls between them, which the test sees and retries in a window no call has touched."""
WINDOW = max(1.0, 1.0 / RATE)
ALLOWED = max(1, math.floor(RATE * WINDOW))
TOKENS = {"GW_CI_TOKEN": "ci-token-1", "GW_FREE_TOKEN": "free-token-2"}


@pytest.fixture(scope="module")
def upstream() -> Iterator[int]:
    port = free_port()
    with started(http_replica("a", port), env={"REPLICA": "a"}):
        yield port


@pytest.fixture(
    params=[
        pytest.param("redis", marks=pytest.mark.redis),
        pytest.param("redis-cluster", marks=pytest.mark.redis),
        "file",
    ]
)
def gateways(
    request: pytest.FixtureRequest, upstream: int, tmp_path: Path
) -> Iterator[tuple[Proc, Proc]]:
    if request.param == "redis":
        import redis

        store = shared_redis_server().url(4)  # database 4 is this module's
        with redis.Redis.from_url(store) as client:
            client.flushdb()  # counters of an earlier run within the window
    elif request.param == "redis-cluster":
        from tests.redis_server import unique_prefix
        from tests.redis_topology import shared_cluster

        store = f"{shared_cluster().url()}?prefix={unique_prefix()}"
    else:
        store = f"file://{tmp_path / 'data'}"
    config = tmp_path / "gw.yml"
    config.write_text(f"""
servers:
  - name: notes
    url: http://127.0.0.1:{upstream}/mcp
clients:
  - name: ci
    token_env: GW_CI_TOKEN
    allow: ["*"]
    rate_per_s: {RATE}
  - name: free
    token_env: GW_FREE_TOKEN
    allow: ["*"]
limits:
  per_tool_rate_per_s: {{"whoami": {RATE}}}
""")  # fmt: skip
    argv = air("gateway", "--config", str(config), "--port", "0", "--store", store, "--no-meter")
    with started(argv, env=TOKENS) as g1, started(argv, env=TOKENS) as g2:
        yield g1, g2


async def _round(gateways: tuple[Proc, Proc], tool: str, token: str) -> list[dict[str, Any]] | None:
    """Four calls alternating between the gateways, or None when a window boundary fell
    between the first and the last (then every window holds its own allowance)."""
    slot = int(time.time() // WINDOW)
    async with httpx.AsyncClient(timeout=30) as http:
        answers = [
            await modern_call(http, gateways[i % 2].url, tool, {"text": "x"}, token=token)
            for i in range(4)
        ]
    return answers if int(time.time() // WINDOW) == slot else None


async def _next_window() -> None:
    """Wait for the next window to begin (the rate windows are the clock's)."""
    await asyncio.sleep(WINDOW - time.time() % WINDOW + 0.05)


async def _counted(gateways: tuple[Proc, Proc], tool: str, token: str) -> list[dict[str, Any]]:
    if WINDOW - time.time() % WINDOW < 10:  # too close to a boundary: start in a fresh window
        await _next_window()
    for _ in range(3):
        answers = await _round(gateways, tool, token)
        if answers is not None:
            return answers
        # the calls after the boundary used the new window's allowance: start in the next
        await _next_window()
    raise AssertionError("three rounds crossed a window boundary")


async def test_a_clients_rate_holds_across_two_gateways(gateways: tuple[Proc, Proc]) -> None:
    answers = await _counted(gateways, "echo", TOKENS["GW_CI_TOKEN"])
    passed = [a for a in answers if "result" in a]
    refused = [a for a in answers if "error" in a]
    assert len(passed) == ALLOWED, answers
    assert len(refused) == 4 - ALLOWED
    for answer in refused:
        assert answer["error"]["code"] == -32005
        assert answer["error"]["data"]["scope"] == "client:ci"
    # the other client is not limited by ci's count
    free = await _counted(gateways, "echo", TOKENS["GW_FREE_TOKEN"])
    assert all("result" in a for a in free), free


async def test_a_tools_rate_holds_across_two_gateways(gateways: tuple[Proc, Proc]) -> None:
    answers = await _counted(gateways, "whoami", TOKENS["GW_FREE_TOKEN"])
    passed = [a for a in answers if "result" in a]
    assert len(passed) == ALLOWED, answers
    for answer in answers:
        if "error" in answer:
            assert answer["error"]["code"] == -32005
            assert answer["error"]["data"]["scope"] == "tool:whoami"
