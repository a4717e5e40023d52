"""A metered upstream and the gateway in front of it, metering into one store, count every
call once: the gateway's hop is a record of its own (linked to the upstream's by its call id),
and ``air meter report`` shows the calls once and the latency the gateway added."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import httpx
import orjson
import pytest

from airmeter import CALLS_NAMESPACE
from airmeter.record import HOPS_NAMESPACE
from airstore import create_storage
from tests.airgateway.procs import air, free_port, started
from tests.airgateway.rpc import envelope, legacy_request, modern_call
from tests.redis_server import RedisServer

pytestmark = pytest.mark.slow
CALLS = 17
METERED_UPSTREAM = """\
from aircore import define_server, define_tool

server = define_server(
    name="notes",
    meter=True,
    tools=[define_tool("echo", handler=lambda params: params["text"], params={"text": str})],
)
"""


def _metered_upstream(tmp_path: Path, port: int, store: str) -> list[str]:
    path = tmp_path / "metered_upstream.py"
    path.write_text(METERED_UPSTREAM, encoding="utf-8")
    return air("serve", str(path), "--transport", "http", "--port", str(port), "--store", store)


def _report(store: str) -> dict[str, Any]:
    done = subprocess.run(
        air("meter", "report", "--store", store, "--since", "all", "--format", "json"),
        capture_output=True, text=True, timeout=120, check=True,
    )  # fmt: skip
    report: dict[str, Any] = orjson.loads(done.stdout)
    return report


def _report_text(store: str) -> str:
    return subprocess.run(
        air("meter", "report", "--store", store, "--since", "all"),
        capture_output=True, text=True, timeout=120, check=True,
    ).stdout  # fmt: skip


async def test_a_call_through_the_gateway_to_a_metered_upstream_is_counted_once(
    tmp_path: Path,
) -> None:
    port = free_port()
    data = f"file://{tmp_path / 'data'}"
    config = tmp_path / "gw.yml"
    config.write_text(f"servers:\n  - name: notes\n    url: http://127.0.0.1:{port}/mcp\n")
    upstream = _metered_upstream(tmp_path, port, data)
    gateway_argv = air("gateway", "--config", str(config), "--port", "0", "--store", data)
    with (
        started(upstream) as replica,
        started(gateway_argv) as gateway,
    ):
        async with httpx.AsyncClient(timeout=30) as http:
            for i in range(CALLS):
                answer = await modern_call(http, gateway.url, "echo", {"text": f"x{i}"})
                assert answer["result"].get("isError") is not True
        assert gateway.stop() == 0  # SIGTERM: metering is flushed before exit
        assert replica.stop() == 0  # the upstream's records are flushed too

    async with await create_storage(data) as store:
        calls = await store.query(CALLS_NAMESPACE, limit=1000)
        hops = await store.query(HOPS_NAMESPACE, limit=1000)
    assert len(calls) == CALLS  # 34 before: the upstream's and the gateway's
    assert len(hops) == CALLS
    assert {h["kind"] for h in hops} == {"hop"}
    assert {h["upstream_call_id"] for h in hops} == {c["call_id"] for c in calls}  # linked
    assert all(h["latency_ms"] >= h["upstream_latency_ms"] >= 0 for h in hops)
    report = _report(data)
    assert report["total_calls"] == CALLS
    assert report["gateway"]["hops"] == CALLS
    (figures,) = report["gateway"]["servers"]
    assert figures["server"] == "notes"
    assert figures["added_p50_ms"] is not None
    text = _report_text(data)
    assert f"gateway hops {CALLS}" in text


async def test_an_upstream_metering_elsewhere_leaves_the_gateways_record_a_call(
    tmp_path: Path,
) -> None:
    port = free_port()
    mine, theirs = f"file://{tmp_path / 'gw'}", f"file://{tmp_path / 'up'}"
    config = tmp_path / "gw.yml"
    config.write_text(f"servers:\n  - name: notes\n    url: http://127.0.0.1:{port}/mcp\n")
    with (
        started(_metered_upstream(tmp_path, port, theirs)),
        started(air("gateway", "--config", str(config), "--port", "0", "--store", mine)) as gw,
    ):
        async with httpx.AsyncClient(timeout=30) as http:
            await modern_call(http, gw.url, "echo", {"text": "x"})
        assert gw.stop() == 0
    async with await create_storage(mine) as store:
        assert len(await store.query(CALLS_NAMESPACE, limit=10)) == 1
        assert await store.query(HOPS_NAMESPACE, limit=10) == []


async def test_no_byte_of_the_store_url_reaches_the_gateways_client(tmp_path: Path) -> None:
    """The upstream's hop answer names its store by a digest, and the gateway removes even
    that before answering: the store's URL (here a path with a marker; a Redis URL's
    password alike) is in no byte the client gets, and the call is still counted once."""
    secret = "s3cretpw-marker"
    port = free_port()
    data = f"file://{tmp_path / secret / 'data'}"
    config = tmp_path / "gw.yml"
    config.write_text(f"servers:\n  - name: notes\n    url: http://127.0.0.1:{port}/mcp\n")
    gateway_argv = air("gateway", "--config", str(config), "--port", "0", "--store", data)
    seen: list[bytes] = []
    with (
        started(_metered_upstream(tmp_path, port, data)) as replica,
        started(gateway_argv) as gateway,
    ):
        async with httpx.AsyncClient(timeout=30) as http:
            answer = await modern_call(http, gateway.url, "echo", {"text": "x"})  # fast path
            assert answer["result"].get("isError") is not True
            body, headers = envelope("tools/call", {"name": "echo", "arguments": {"text": "y"}})
            raw = await http.post(gateway.url, json=body, headers=headers)
            seen.append(raw.content)
            init = await legacy_request(http, gateway.url, "initialize", {  # the session path
                "protocolVersion": "2025-06-18", "capabilities": {},
                "clientInfo": {"name": "t", "version": "1"}}, None)  # fmt: skip
            sid = init.headers.get("mcp-session-id")
            echo = {"name": "echo", "arguments": {"text": "z"}}
            call = await legacy_request(http, gateway.url, "tools/call", echo, sid)
            seen.append(call.content)
            assert orjson.loads(call.content)["result"]["content"][0]["text"] == "z"
        assert gateway.stop() == 0
        assert replica.stop() == 0
    for content in seen:
        assert secret.encode() not in content
        assert b"io.airmcp/metered" not in content
    async with await create_storage(data) as store:
        calls = await store.query(CALLS_NAMESPACE, limit=100)
        hops = await store.query(HOPS_NAMESPACE, limit=100)
    assert len(calls) == 3  # counted once: by the upstream, the gateway's are hops
    assert len(hops) == 3


@pytest.mark.redis
async def test_a_redis_password_reaches_no_client_of_the_gateway(tmp_path: Path) -> None:
    """The reviewer's case: both on a redis-server with ``requirepass``, the password in the
    store URL; a plain call through the gateway carries no byte of it, counted once."""
    password = "s3cretpw"
    with RedisServer(extra_args=("--requirepass", password)) as redis:
        data = f"redis://:{password}@127.0.0.1:{redis.port}/0"
        port = free_port()
        config = tmp_path / "gw.yml"
        config.write_text(f"servers:\n  - name: notes\n    url: http://127.0.0.1:{port}/mcp\n")
        gateway_argv = air("gateway", "--config", str(config), "--port", "0", "--store", data)
        with (
            started(_metered_upstream(tmp_path, port, data)) as replica,
            started(gateway_argv) as gateway,
        ):
            async with httpx.AsyncClient(timeout=30) as http:
                body, headers = envelope("tools/call", {"name": "echo", "arguments": {"text": "y"}})
                raw = await http.post(gateway.url, json=body, headers=headers)
            assert gateway.stop() == 0
            assert replica.stop() == 0
        assert orjson.loads(raw.content)["result"]["content"][0]["text"] == "y"
        assert password.encode() not in raw.content
        assert password.encode() not in b"".join(v for _, v in raw.headers.raw)
        async with await create_storage(data) as store:
            assert len(await store.query(CALLS_NAMESPACE, limit=10)) == 1
            assert len(await store.query(HOPS_NAMESPACE, limit=10)) == 1
