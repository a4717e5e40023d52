"""What a gateway reads back from the shared registry is checked: a corrupt or hostile entry is
skipped and logged, never crashes it, never makes it adopt a non-http(s), credentialed or (unless
allowed remote) non-loopback URL, a stdio entry, or more replicas than the bounds; shared ranks
agree whatever the order names are registered in."""

from __future__ import annotations

import logging
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from airgateway.config import parse_config
from airgateway.gateway import Gateway
from airgateway.index import Listing, ToolIndex
from airgateway.shared_registry import (
    GATEWAY_PREFIX,
    MAX_ADOPTED,
    MAX_GATEWAYS,
    MAX_REPLICAS,
    MAX_SERVERS,
    REGISTRY_NAMESPACE,
    SharedRegistry,
    parse_registration,
    url_problem,
)
from airgateway.upstream_http import HttpUpstream
from airgateway.upstream_sse import SseUpstream
from airhttp.guards import is_loopback
from airstore.factory import create_storage
from airstore.types import Store
from tests.airgateway.procs import free_port

HOSTILE_URLS = [
    "file:///etc/passwd",
    "javascript:alert(1)",
    "http://evil.example/mcp",
    "http://10.1.2.3:8080/mcp",
    "http://user:pw@127.0.0.1:1/mcp",
    "http://127.0.0.1:99999/mcp",
    "http://127.0.0.1:1/mcp?key=x",
    "http://127.0.0.1:1/mcp#x",
    "http://127.0.0.1:1/m cp",
    "http://127.0.0.1:1/\r\nX-Injected: 1",
    "http://" + "a" * 3000,
    "http:///mcp",
    "",
    "http://[::1%\u2603]:8000/mcp",
    "http://[::1%25lo]:8000/mcp",
    "http://127.0.0.1%2F:1/mcp",
    "http://l\u00f6calhost:1/mcp",
]

hosts = (
    st.sampled_from(["127.0.0.1", "localhost", "[::1]", "127.1.2.3", "mcp.internal"])
    | (st.builds(lambda zone: f"[::1%{zone}]", st.text(max_size=6)))
    | st.text(min_size=1, max_size=12).map(lambda h: h.replace("/", "").replace("@", "") or "x")
)
ports = st.sampled_from(["", ":", ":0", ":1", ":8000", ":65535", ":65536", ":-1", ":+80", ":1_0",
                         ":\u0661"]) | st.integers(-5, 70000).map(lambda p: f":{p}")  # fmt: skip
near_urls = st.builds(
    lambda scheme, host, port, path: f"{scheme}://{host}{port}{path}",
    st.sampled_from(["http", "https", "HTTP"]),
    hosts,
    ports,
    st.sampled_from(["/mcp", "", "/sse", "/m\u00e9", "/%zz"]),
)


@settings(max_examples=300, deadline=None)
@given(url=near_urls, allow_remote=st.booleans())
def test_every_url_the_checks_accept_makes_a_client_without_raising(
    url: str, allow_remote: bool
) -> None:
    if url_problem(url, allow_remote=allow_remote) is not None:
        return
    assert HttpUpstream("fuzz#0", url, headers={}).url == url
    assert SseUpstream("fuzz#1", url, headers={}).url == url


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner,
                                                                 max_size=4),
    max_leaves=20,
)  # fmt: skip
replicas = st.fixed_dictionaries(
    {},
    optional={
        "url": st.sampled_from([*HOSTILE_URLS, "http://127.0.0.1:1/mcp", "https://localhost/x"])
        | json_values,
        "transport": st.sampled_from(["http", "sse", "stdio", "ws"]) | json_values,
        "prefix": st.sampled_from([None, "p", "../x", ""]) | json_values,
        "timeout_s": st.sampled_from([30, 0, -1, 1e9, float("nan"), True]) | json_values,
    },
)
registrations = st.fixed_dictionaries(
    {
        "servers": st.dictionaries(
            st.text(max_size=8) | st.just("notes"),
            st.lists(replicas | json_values, max_size=5) | json_values,
            max_size=5,
        )
    },
    optional={"pid": json_values, "host": json_values},
)


@settings(max_examples=300, deadline=None)
@given(
    key=st.text(max_size=20).map(lambda k: GATEWAY_PREFIX + k) | st.text(max_size=20),
    value=registrations | json_values,
    allow_remote=st.booleans(),
)
def test_whatever_the_store_holds_parsing_never_raises_and_keeps_only_safe_urls(
    key: str, value: Any, allow_remote: bool
) -> None:
    registration, problems = parse_registration(key, value, allow_remote=allow_remote)
    assert all(isinstance(p, str) for p in problems)
    if registration is None:
        assert problems
        return
    assert len(registration.servers) <= MAX_SERVERS
    for items in registration.servers.values():
        assert 0 < len(items) <= MAX_REPLICAS
        for item in items:
            assert url_problem(item.url, allow_remote=allow_remote) is None
            assert item.url.startswith(("http://", "https://"))
            assert item.transport in ("http", "sse")
            assert 0 < item.timeout_s <= 3600
            host = item.url.split("//", 1)[1].split("/", 1)[0].rsplit(":", 1)[0].strip("[]")
            assert allow_remote or is_loopback(host)


@pytest.mark.parametrize("url", HOSTILE_URLS)
def test_a_hostile_url_is_refused_and_named(url: str) -> None:
    problem = url_problem(url, allow_remote=False)
    assert problem is not None
    assert "url" in problem


def test_a_remote_url_is_taken_only_by_a_gateway_allowed_remote() -> None:
    assert url_problem("https://mcp.internal:8443/mcp", allow_remote=True) is None
    assert url_problem("https://mcp.internal:8443/mcp", allow_remote=False) is not None
    assert url_problem("http://[::1]:3000/mcp", allow_remote=False) is None


async def _store() -> Store:
    return await create_storage("memory://")


def _entry(url: str, **extra: Any) -> dict[str, Any]:
    return {"url": url, "transport": "http", "prefix": None, "timeout_s": 30, **extra}


async def test_hostile_entries_are_skipped_and_logged_once_and_good_ones_kept(
    caplog: pytest.LogCaptureFixture,
) -> None:
    store = await _store()
    good = "http://127.0.0.1:3001/mcp"
    await store.set(REGISTRY_NAMESPACE, GATEWAY_PREFIX + "good", {"servers": {"notes": [
        _entry(good), _entry("file:///etc/passwd"), _entry(good, transport="stdio"),
        "not an object"]}})  # fmt: skip
    await store.set(REGISTRY_NAMESPACE, GATEWAY_PREFIX + "junk", [1, 2, 3])
    await store.set(REGISTRY_NAMESPACE, GATEWAY_PREFIX + "../../x", {"servers": {}})
    await store.set(REGISTRY_NAMESPACE, GATEWAY_PREFIX + "many", {"servers": {
        f"s{i}": [_entry(good)] for i in range(MAX_SERVERS + 1)}})  # fmt: skip
    await store.set(REGISTRY_NAMESPACE, GATEWAY_PREFIX + "wide", {"servers": {
        "notes": [_entry(f"http://127.0.0.1:{4000 + i}/mcp")
                  for i in range(MAX_REPLICAS + 3)]}})  # fmt: skip
    shared = SharedRegistry(store, me="me", interval_s=1, allow_remote=False)
    with caplog.at_level(logging.WARNING, logger="airgateway.shared_registry"):
        read = await shared.read()
        assert read is not None
        by_id = {r.gateway: r for r in read}
        assert set(by_id) == {"good", "wide"}
        assert [p.url for p in by_id["good"].servers["notes"]] == [good]
        assert len(by_id["wide"].servers["notes"]) == MAX_REPLICAS
        said = caplog.text
        for part in ("file:///", "not http or sse", "not an object with servers",
                     "does not name a gateway", f"more than {MAX_SERVERS} servers",
                     f"more than {MAX_REPLICAS} replicas"):  # fmt: skip
            assert part in said or part.replace("file:///", "not http://") in said, part
        caplog.clear()
        assert await shared.read() == read
        assert "skipped" not in caplog.text  # told once, not at every reading


async def test_only_the_first_registrations_are_read() -> None:
    store = await _store()
    for i in range(MAX_GATEWAYS + 5):
        await store.set(REGISTRY_NAMESPACE, f"{GATEWAY_PREFIX}g{i:03d}",
                        {"servers": {"notes": [_entry("http://127.0.0.1:1/mcp")]}})  # fmt: skip
    read = await SharedRegistry(store, me="me", interval_s=1, allow_remote=False).read()
    assert read is not None
    assert len(read) == MAX_GATEWAYS


async def test_ranks_agree_whatever_order_two_gateways_register_names_in() -> None:
    store = await _store()
    first = SharedRegistry(store, me="a", interval_s=1, allow_remote=False)
    second = SharedRegistry(store, me="b", interval_s=1, allow_remote=False)
    ranks_a = await first.ranks(["alpha", "beta"])
    ranks_b = await second.ranks(["gamma", "beta", "alpha"])
    assert ranks_a is not None
    assert ranks_b is not None
    assert ranks_b["alpha"] == ranks_a["alpha"] < ranks_b["beta"] == ranks_a["beta"]
    assert ranks_b["gamma"] > ranks_a["beta"]  # a name added later comes after


async def test_a_corrupt_rank_or_claim_is_replaced_or_skipped_without_a_crash(
    caplog: pytest.LogCaptureFixture,
) -> None:
    store = await _store()
    for name, value in (("a", "x"), ("b", -3), ("c", True), ("d", 2**60)):
        await store.set(REGISTRY_NAMESPACE, "rank\x1f" + name, value)
    await store.set(REGISTRY_NAMESPACE, "claim\x1fe", "not a counter")
    shared = SharedRegistry(store, me="a", interval_s=1, allow_remote=False)
    with caplog.at_level(logging.WARNING, logger="airgateway.shared_registry"):
        ranks = await shared.ranks(["a", "b", "c", "d", "e", "f"])
    assert ranks is not None
    assert set(ranks) == {"a", "b", "c", "d", "f"}  # e's claim is corrupt: no rank, said
    assert all(isinstance(r, int) and r > 0 for r in ranks.values())
    assert len(set(ranks.values())) == len(ranks)
    assert "the rank of e cannot be claimed" in caplog.text


def _owner(index: ToolIndex, name: str) -> str | None:
    entry = index.tool(name)
    return None if entry is None else entry.server


def test_ranks_order_the_index_and_decide_who_keeps_a_shared_name() -> None:
    config = parse_config("servers:\n  - name: a\n    url: http://127.0.0.1:1/mcp\n"
                          "  - name: b\n    url: http://127.0.0.1:2/mcp\n")  # fmt: skip
    index = ToolIndex(config.servers)
    index.update("a", Listing(tools=({"name": "echo", "description": "a"},)))
    index.update("b", Listing(tools=({"name": "echo", "description": "b"},)))
    assert _owner(index, "echo") == "a"
    assert index.rank({"b": 1, "a": 2}) is True
    assert _owner(index, "echo") == "b"
    assert [(c.kept, c.dropped) for c in index.conflicts] == [("b", "a")]
    assert index.rank({"b": 1, "a": 2}) is False
    assert index.rank({"a": 5}) is True  # a ranked server comes before an unranked one
    assert _owner(index, "echo") == "a"


async def test_a_gateway_adopts_only_safe_bounded_replicas_and_serves_undeclared_as_fleet() -> None:
    store = await _store()
    port = free_port()  # nothing listens: every replica stays down, the pool is what counts
    config = parse_config(f"""
servers:
  - name: notes
    url: http://127.0.0.1:{port}/mcp
  - name: secret
    url: http://127.0.0.1:{port}/mcp
    headers: {{X-Api-Key: {{env: T_KEY}}}}
  - name: local
    command: ["true"]
health:
  interval_s: 600
""", environ={"T_KEY": "k"})  # fmt: skip
    loopback = [_entry(f"http://127.0.0.1:{free_port()}/mcp") for _ in range(MAX_ADOPTED + 4)]
    await store.set(REGISTRY_NAMESPACE, GATEWAY_PREFIX + "other1", {"servers": {
        "notes": [*loopback[:10], _entry(f"http://127.0.0.1:{port}/mcp"),  # its own: once
                  _entry("http://10.1.2.3/mcp"), _entry(loopback[0]["url"], prefix="p")],
        "secret": [loopback[0]], "local": [_entry(loopback[1]["url"], transport="stdio")],
        "unknown": [loopback[2]]}})  # fmt: skip
    await store.set(REGISTRY_NAMESPACE, GATEWAY_PREFIX + "other2",
                    {"servers": {"notes": loopback[10:]}})  # fmt: skip
    gateway = Gateway(config, store=store, meter=None)
    async with gateway:
        status = gateway.status()
    upstreams = [(u["name"], u["registered_by"]) for u in status["upstreams"]]
    adopted = [u for u in status["upstreams"] if u["registered_by"] is not None]
    notes = [u for u in adopted if u["name"] == "notes"]
    assert len(notes) == MAX_ADOPTED
    assert {u["name"] for u in adopted} == {"notes", "unknown"}  # unknown: a fleet server
    assert [u["url"] for u in adopted if u["name"] == "unknown"] == [loopback[2]["url"]]
    assert status["registry"]["fleet"] == ["unknown"]
    assert {u["url"] for u in adopted} <= {e["url"] for e in loopback}
    assert upstreams.count(("notes", None)) == 1
    assert ("secret", None) in upstreams
    assert {g["id"] for g in status["registry"]["gateways"]} == {gateway.id, "other1", "other2"}
    assert await store.get(REGISTRY_NAMESPACE, GATEWAY_PREFIX + gateway.id) is None  # withdrawn


async def _adopted_read_twice(
    store: Any, caplog: pytest.LogCaptureFixture
) -> tuple[Gateway, list[str]]:
    """A gateway declaring "notes" reads the registry at start and once more (neither may
    raise or log again); the URLs it adopted."""
    config = parse_config(f"servers:\n  - name: notes\n    url: http://127.0.0.1:{free_port()}/mcp\n"
                          "health:\n  interval_s: 600\n")  # fmt: skip
    gateway = Gateway(config, store=store, meter=None)
    with caplog.at_level(logging.WARNING):
        async with gateway:
            adopted = [u["url"] for u in gateway.status()["upstreams"] if u["registered_by"]]
            assert gateway.registry is not None
            await gateway.registry.refresh()
    return gateway, adopted


async def test_an_entry_no_client_can_be_made_for_neither_stops_a_gateway_nor_the_next_ones(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    store = await _store()
    good = f"http://127.0.0.1:{free_port()}/mcp"
    broken = f"http://127.0.0.1:{free_port()}/mcp"  # passes every check; its client fails
    await store.set(REGISTRY_NAMESPACE, GATEWAY_PREFIX + "other",
                    {"servers": {"notes": [_entry(broken), _entry(good)]}})  # fmt: skip
    make = Gateway._client

    def client(self: Gateway, server: Any, index: int) -> Any:
        if server.url == broken:
            raise ValueError("no client for this URL")
        return make(self, server, index)

    monkeypatch.setattr(Gateway, "_client", client)
    _gateway, adopted = await _adopted_read_twice(store, caplog)
    assert adopted == [good]
    told = [r.getMessage() for r in caplog.records if "cannot be used" in r.getMessage()]
    assert len(told) == 1
    assert broken in told[0]


async def test_entries_whose_urls_the_readers_refuse_are_skipped_and_told_once(
    caplog: pytest.LogCaptureFixture,
) -> None:
    store = await _store()
    good = f"http://127.0.0.1:{free_port()}/mcp"
    bad = [_entry("http://[::1%\u2603]:8000/mcp"), _entry("http://[::1%25lo]:1/mcp")]
    await store.set(REGISTRY_NAMESPACE, GATEWAY_PREFIX + "evil",
                    {"servers": {"notes": [*bad, _entry(good)]}})  # fmt: skip
    gateway, adopted = await _adopted_read_twice(store, caplog)
    assert adopted == [good]
    assert not [r for r in caplog.records if r.exc_info]
    assert sum("zone id" in r.getMessage() or "non-ASCII" in r.getMessage()
               for r in caplog.records) == 2  # fmt: skip
    assert await store.get(REGISTRY_NAMESPACE, GATEWAY_PREFIX + gateway.id) is None
