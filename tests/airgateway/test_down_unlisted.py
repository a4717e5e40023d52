"""A server whose every replica has been down for ``health.unhealthy_for_s`` leaves the
gateway's ``tools/list`` (with ``list_changed``), and comes back when a replica does."""

from __future__ import annotations

import asyncio
from typing import Any

from airgateway.config import parse_config
from airgateway.gateway import Gateway
from airstore.factory import create_storage
from tests.airgateway.procs import free_port, http_replica, started

WAIT_S = 30.0


def _config(port: int, unhealthy_for_s: float) -> str:
    return (
        f"servers:\n  - name: notes\n    url: http://127.0.0.1:{port}/mcp\n"
        "    transport: http\n"
        "health:\n  interval_s: 0.2\n  timeout_s: 2\n  unhealthy_after: 1\n"
        f"  unhealthy_for_s: {unhealthy_for_s}\n"
    )


async def _until(changed: asyncio.Event, gateway: Gateway, listed: bool) -> None:
    async with asyncio.timeout(WAIT_S):
        while bool(gateway.index.tools()) != listed:
            await changed.wait()
            changed.clear()


async def test_a_server_down_for_unhealthy_for_s_leaves_tools_list_and_comes_back() -> None:
    port = free_port()
    config = parse_config(_config(port, 0.5))
    assert config.health.unhealthy_for_s == 0.5
    store = await create_storage("memory://")
    changed = asyncio.Event()
    said: list[dict[str, Any]] = []

    def notify(message: dict[str, Any]) -> None:
        said.append(message)
        changed.set()

    with started(http_replica("r1", port), env={"REPLICA": "r1"}) as replica:
        async with Gateway(config, store=store, meter=None) as gateway:
            gateway.listen(notify)
            assert gateway.index.tools()  # listed while up
            replica.kill()
            await _until(changed, gateway, listed=False)
            assert {"jsonrpc": "2.0", "method": "notifications/tools/list_changed",
                    "params": {}} in said  # fmt: skip
            said.clear()
            with started(http_replica("r1", port), env={"REPLICA": "r1"}):
                await _until(changed, gateway, listed=True)
            assert any(m["method"] == "notifications/tools/list_changed" for m in said)


async def test_a_server_down_for_less_than_unhealthy_for_s_stays_listed() -> None:
    port = free_port()
    config = parse_config(_config(port, 3600))
    store = await create_storage("memory://")
    with started(http_replica("r1", port), env={"REPLICA": "r1"}) as replica:
        async with Gateway(config, store=store, meter=None) as gateway:
            tools = list(gateway.index.tools())
            (group,) = gateway.router.replicas.values()
            replica.kill()
            async with asyncio.timeout(WAIT_S):
                while group[0].healthy:  # noqa: ASYNC110 - the replica's bare state
                    await asyncio.sleep(0.05)
            assert gateway.index.tools() == tools  # down, but it may come back: still listed


def test_unhealthy_for_s_defaults_to_300_s() -> None:
    config = parse_config("servers:\n  - name: a\n    url: http://127.0.0.1:1/mcp\n")
    assert config.health.unhealthy_for_s == 300.0
