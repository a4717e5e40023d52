"""What a gateway publishes in the shared registry: never an entry no other gateway can use
(one with headers, a URL with credentials, a query or anything its readers refuse); and a
replica reached with credentials keeps its health to itself, so a gateway without them can
never hold it down."""

from __future__ import annotations

import logging

import pytest

from airgateway.config import parse_config
from airgateway.gateway import Gateway
from airgateway.shared_health import HEALTH_NAMESPACE
from airgateway.shared_registry import GATEWAY_PREFIX, REGISTRY_NAMESPACE
from airstore.factory import create_storage
from tests.airgateway.procs import free_port, http_replica, started

_TOKEN = "s3cret-token-1234567890"


async def test_entries_with_headers_credentials_a_query_or_a_zone_id_are_never_published() -> None:
    store = await create_storage("memory://")
    port = free_port()
    config = parse_config(f"""
servers:
  - name: secret
    url: http://127.0.0.1:{port}/mcp
    headers: {{X-Api-Key: {{env: T_KEY}}}}
  - name: userinfo
    url: http://user:pw@127.0.0.1:{port}/mcp
  - name: keyed
    url: http://127.0.0.1:{port}/mcp?key=x
  - name: plain
    url: http://127.0.0.1:{port}/mcp
health:
  interval_s: 600
""", environ={"T_KEY": "k"})  # fmt: skip
    gateway = Gateway(config, store=store, meter=None)
    async with gateway:
        raw = await store.get(REGISTRY_NAMESPACE, GATEWAY_PREFIX + gateway.id)
    assert isinstance(raw, dict)
    assert raw["servers"] == {"plain": [{"url": f"http://127.0.0.1:{port}/mcp",
                                          "transport": "http", "prefix": None,
                                          "timeout_s": 30.0}]}  # fmt: skip
    for secret in ("X-Api-Key", "user:pw@", "key=x"):
        assert secret not in str(raw)


async def test_a_gateway_without_the_credentials_never_holds_down_a_replica_reached_with_them() -> (
    None
):
    port = free_port()
    with started([*http_replica("r1", port), "--token", _TOKEN], env={"REPLICA": "r1"}):
        store = await create_storage("memory://")
        url = f"http://127.0.0.1:{port}/mcp"
        owner = Gateway(parse_config(f"""
servers:
  - name: secret
    url: {url}
    headers: {{Authorization: {{env: TOK}}}}
health:
  interval_s: 600
""", environ={"TOK": f"Bearer {_TOKEN}"}), store=store, meter=None)  # fmt: skip
        other = Gateway(parse_config(f"""
servers:
  - name: secret
    url: {url}
  - name: secret
    url: http://127.0.0.1:{free_port()}/mcp
health:
  interval_s: 600
  unhealthy_after: 1
"""), store=store, meter=None)  # fmt: skip
        async with owner, other:
            theirs = other.status()["upstreams"]
            assert [u["state"] for u in theirs if u["url"] == url] == ["down"]  # 401 there
            assert not [u for u in theirs if u["registered_by"] is not None]
            replicas = owner.router.all()
            await owner.health.poll(replicas)  # read the other gateway's marks now
            assert [(u["url"], u["state"]) for u in owner.status()["upstreams"]] == [
                (url, "healthy")
            ]
            assert await store.entries(HEALTH_NAMESPACE)  # the other's own mark is still shared


async def test_an_entry_kept_out_of_the_registry_is_told_once_not_at_every_renewal(
    caplog: pytest.LogCaptureFixture,
) -> None:
    store = await create_storage("memory://")
    config = parse_config(f"""
servers:
  - name: secret
    url: http://127.0.0.1:{free_port()}/mcp
    headers: {{X-Api-Key: {{env: T_KEY}}}}
health:
  interval_s: 600
""", environ={"T_KEY": "k"})  # fmt: skip
    gateway = Gateway(config, store=store, meter=None)
    with caplog.at_level(logging.INFO, logger="airgateway"):
        async with gateway:
            assert gateway.registry is not None
            for _ in range(3):  # renewals, as every health interval does
                await gateway.registry.shared.publish(config.servers)
    told = [r for r in caplog.records if "is not published" in r.getMessage()]
    assert len(told) == 1
