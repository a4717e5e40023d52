"""A replica adopted from another gateway that leaves the pool: the calls in flight on it
finish (its connection closes once they are over), a closed connection stays closed whatever
a health round racing the drop does, and neither the shared-health marks this gateway keeps
nor the replicas' indices grow while a store writer keeps rotating URLs."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from airgateway.config import parse_config
from airgateway.errors import UpstreamUnavailableError
from airgateway.gateway import Gateway
from airgateway.shared_health import HEALTH_NAMESPACE
from airgateway.shared_registry import GATEWAY_PREFIX, MAX_ADOPTED, REGISTRY_NAMESPACE
from airgateway.upstream_http import HttpUpstream
from airgateway.upstream_sse import SseUpstream
from airstore.factory import create_storage
from airstore.types import Store
from tests.airgateway.procs import free_port, http_replica, sse_upstream, started

WAIT_S = 30.0


async def _adopting(url: str) -> tuple[Gateway, Store]:
    store = await create_storage("memory://")
    await store.set(REGISTRY_NAMESPACE, GATEWAY_PREFIX + "other", {"servers": {"legacy": [
        {"url": url, "transport": "sse", "prefix": None, "timeout_s": 30}]}})  # fmt: skip
    config = parse_config(f"servers:\n  - name: legacy\n    url: http://127.0.0.1:{free_port()}"
                          "/sse\n    transport: sse\nhealth:\n  interval_s: 600\n")  # fmt: skip
    gateway = Gateway(config, store=store, meter=None)
    await gateway.start()
    return gateway, store


async def test_a_call_in_flight_on_a_replica_that_leaves_the_pool_still_gets_its_answer(
    tmp_path: Path,
) -> None:
    release = tmp_path / "release"
    with sse_upstream() as upstream:
        gateway, store = await _adopting(upstream.url)
        try:
            assert gateway.registry is not None
            (replica,) = gateway.registry.adopted()
            call = asyncio.ensure_future(
                gateway.call_tool({"name": "held", "arguments": {"path": str(release)}})
            )
            async with asyncio.timeout(WAIT_S):
                while replica.in_flight == 0:  # noqa: ASYNC110 - the router's bare counter
                    await asyncio.sleep(0.01)
            await store.delete(REGISTRY_NAMESPACE, GATEWAY_PREFIX + "other")
            await gateway.registry.refresh()
            assert replica not in gateway.router.all()
            release.touch()
            async with asyncio.timeout(WAIT_S):
                answer = await call
            assert answer["content"][0]["text"] == "released:release"
            assert answer.get("isError") is not True
        finally:
            await gateway.stop()


async def test_a_replica_dropped_while_a_health_round_runs_stays_closed() -> None:
    with sse_upstream() as upstream:
        gateway, store = await _adopting(upstream.url)
        assert gateway.registry is not None
        (replica,) = gateway.registry.adopted()
        snapshot = gateway.router.all()  # a round took its list before the drop
        await store.delete(REGISTRY_NAMESPACE, GATEWAY_PREFIX + "other")
        await gateway.registry.refresh()
        await gateway.health.check_all(snapshot)
        await gateway.stop()
        assert replica.client.era is None
        with pytest.raises(UpstreamUnavailableError) as refused:
            await replica.client.connect()
        assert refused.value.sent is False


async def test_a_closed_upstream_connection_refuses_to_connect_again() -> None:
    port = free_port()
    with started(http_replica("r1", port), env={"REPLICA": "r1"}), sse_upstream() as sse:
        for client in (HttpUpstream("notes#0", f"http://127.0.0.1:{port}/mcp"),
                       SseUpstream("legacy#0", sse.url)):  # fmt: skip
            await client.connect()
            assert client.era is not None
            await client.close()
            await client.close()  # idempotent
            with pytest.raises(UpstreamUnavailableError) as refused:
                await client.connect()
            assert refused.value.sent is False


async def test_rotating_urls_in_the_store_grows_neither_marks_nor_replica_indices() -> None:
    store = await create_storage("memory://")
    dead = free_port()  # nothing listens: every adopted replica is found down and marked
    config = parse_config(f"servers:\n  - name: notes\n    url: http://127.0.0.1:{dead}/mcp\n"
                          "health:\n  interval_s: 600\n")  # fmt: skip
    async with Gateway(config, store=store, meter=None) as gateway:
        assert gateway.registry is not None
        for cycle in range(3):
            entries = [{"url": f"http://127.0.0.1:{dead}/x{cycle}-{i}", "transport": "http"}
                       for i in range(MAX_ADOPTED)]  # fmt: skip
            await store.set(REGISTRY_NAMESPACE, GATEWAY_PREFIX + "churn",
                            {"servers": {"notes": entries}})  # fmt: skip
            await gateway.registry.refresh()
            await gateway.health.check_all(gateway.router.all())
            indices = {u["replica"] for u in gateway.status()["upstreams"]}
            assert indices == set(range(1 + MAX_ADOPTED))
            marks = [k for k, _ in await store.entries(HEALTH_NAMESPACE)]
            assert len(marks) == 1 + MAX_ADOPTED
            await store.delete(REGISTRY_NAMESPACE, GATEWAY_PREFIX + "churn")
            await gateway.registry.refresh()
            marks = [k for k, _ in await store.entries(HEALTH_NAMESPACE)]
            assert len(marks) == 1  # only this gateway's own replica's
