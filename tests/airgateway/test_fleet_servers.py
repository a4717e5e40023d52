"""Gateways sharing a store serve the fleet's servers: one that only another gateway's
configuration names is listed and routed to while that gateway registers it, and leaves when
it no longer does. Gateways that disagree about a server's prefix do not flap: a gateway's own
configuration decides for the servers it names, the oldest gateway for the others; the
disagreement is logged once and listed in the status."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from typing import Any

import pytest

from aircli.status import format_table
from airgateway.config import parse_config
from airgateway.errors import GatewayError
from airgateway.gateway import Gateway
from airstore.memory import MemoryStore
from tests.airgateway.procs import free_port, http_replica, started

QUIET = "health:\n  interval_s: 600\n"
"""No background round: each test reads and renews the registry itself."""


@pytest.fixture
def upstream() -> Iterator[str]:
    """One real HTTP upstream (answers ``whoami`` with ``up``)."""
    port = free_port()
    with started(http_replica("up", port), env={"REPLICA": "up"}):
        yield f"http://127.0.0.1:{port}/mcp"


def _config(servers: list[tuple[str, str, str | None]], extra: str = "") -> Any:
    lines = ["servers:"]
    for name, url, prefix in servers:
        lines += [f"  - name: {name}", f"    url: {url}"]
        if prefix is not None:
            lines.append(f"    prefix: {prefix}")
    return parse_config("\n".join(lines) + "\n" + QUIET + extra)


async def _sync(*gateways: Gateway) -> None:
    """One renewal and one reading by each gateway, in order."""
    for gateway in gateways:
        assert gateway.registry is not None
        await gateway.registry.publish()
    for gateway in gateways:
        assert gateway.registry is not None
        await gateway.registry.refresh()
        for replica in gateway.registry.adopted():
            await gateway.health.check(replica)


def _tools(gateway: Gateway) -> set[str]:
    return {t["name"] for t in gateway.index.tools()}


async def test_a_server_only_another_gateway_names_is_served_until_it_stops_naming_it(
    upstream: str,
) -> None:
    store = MemoryStore()
    other_port = free_port()
    a = Gateway(_config([("extra", upstream, "x")]), store=store)
    b = Gateway(_config([("own", f"http://127.0.0.1:{other_port}/mcp", None)]), store=store)
    async with a, b:
        await _sync(a, b)
        assert b.registry is not None
        assert b.registry.fleet.keys() == {"extra"}
        assert "x__whoami" in _tools(b)
        result = await b.call_tool({"name": "x__whoami", "arguments": {}})
        assert result["content"][0]["text"] == "up"
        status = b.status()
        assert status["registry"]["fleet"] == ["extra"]
        assert [u["registered_by"] for u in status["upstreams"] if u["name"] == "extra"] == [a.id]

        await a.reload(_config([("own", f"http://127.0.0.1:{other_port}/mcp", None)]))
        await _sync(b)
        assert b.registry.fleet == {}
        assert not any(t.startswith("x__") for t in _tools(b))
        assert all(u["name"] != "extra" for u in b.status()["upstreams"])
        with pytest.raises(GatewayError) as refused:
            await b.call_tool({"name": "x__whoami", "arguments": {}})
        assert refused.value.code == -32602  # unknown tool: it did not run


async def test_a_gateway_whose_file_says_no_fleet_servers_serves_only_the_servers_it_names(
    upstream: str,
) -> None:
    store = MemoryStore()
    own = f"http://127.0.0.1:{free_port()}/mcp"
    a = Gateway(_config([("extra", upstream, "x")]), store=store)
    b = Gateway(_config([("own", own, None)], "registry:\n  fleet_servers: false\n"), store=store)
    async with a, b:
        await _sync(a, b)
        assert b.registry is not None
        assert b.registry.fleet == {}
        assert not any(t.startswith("x__") for t in _tools(b))
        assert [u["name"] for u in b.status()["upstreams"]] == ["own"]


async def test_gateways_disagreeing_on_a_prefix_report_it_once_and_never_flap(
    upstream: str, caplog: pytest.LogCaptureFixture
) -> None:
    store = MemoryStore()
    port = free_port()
    second = f"http://127.0.0.1:{port}/mcp"  # nothing listens: the pool, not calls, counts
    old = Gateway(_config([("extra", upstream, "x")]), store=store)
    new = Gateway(_config([("extra", second, "y")]), store=store)
    third = Gateway(_config([("own", f"http://127.0.0.1:{free_port()}/mcp", None)]), store=store)
    assert old.registry is not None
    assert new.registry is not None
    assert third.registry is not None
    old.registry.shared.since, new.registry.shared.since = 1000.0, 2000.0  # old is older
    with caplog.at_level(logging.WARNING):
        async with old, new, third:
            seen = []
            for _ in range(4):
                await _sync(new, third, old)
                seen.append((sorted(_tools(third)), sorted(third.registry.fleet)))
                assert [u["url"] for u in third.status()["upstreams"] if u["name"] == "extra"] == [
                    upstream
                ]
                assert [u["url"] for u in new.status()["upstreams"] if u["name"] == "extra"] == [
                    second  # its own configuration decides: old's replica is not adopted
                ]
            assert all(s == seen[0] for s in seen), seen  # the same at every reading
            assert "x__whoami" in seen[0][0]
            assert not any(t.startswith("y__") for t in seen[0][0])
            reported = third.status()["registry"]["disagreements"]
            assert reported == [{"server": "extra", "gateway": new.id, "theirs": {"prefix": "y"},
                                 "kept": {"prefix": "x"}, "kept_by": old.id}]  # fmt: skip
            table = format_table(third.status())  # what `air status` prints
            assert "fleet servers (registered by other gateways): extra" in table
            assert (
                f"disagreement: gateway {new.id} gives extra the prefix 'y'; 'x' (by {old.id})"
                in table
            )
            mine = new.status()["registry"]["disagreements"]
            assert [(d["gateway"], d["kept_by"]) for d in mine] == [(old.id, new.id)]
    told = [r.getMessage() for r in caplog.records if "the gateways disagree" in r.getMessage()]
    assert any(m.startswith(f"skipped in the shared registry: gateway {new.id}") for m in told)
    assert len(told) == len(set(told))  # each disagreement once, not at every reading
