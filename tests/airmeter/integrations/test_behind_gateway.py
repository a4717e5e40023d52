"""An ``MCPServer`` and a FastMCP server metered by airmeter's adapters, behind a real
``air gateway`` metering into the same store, count each call once: the gateway's hop is its
own record kind, linked to the adapter's record by its call id, and ``air meter report`` shows
N calls for N calls and the latency the gateway added (the official client calls through the
gateway; the upstreams are real stdio processes the gateway spawns)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import orjson
import pytest
from mcp import Client

from airmeter import CALLS_NAMESPACE
from airmeter.record import HOPS_NAMESPACE
from airstore import create_storage
from dashboard.data import DashboardData
from dashboard.machine_panels import machine_values
from dashboard.ranges import resolve_range
from tests.airgateway.procs import air, started

pytestmark = pytest.mark.slow
CALLS = 7

_HEAD = """\
import asyncio
import sys

from airmeter import Meter
from airstore import create_storage
from dashboard.data import DashboardData
from dashboard.machine_panels import machine_values
from dashboard.ranges import resolve_range
"""
SDK_SERVER = (
    _HEAD
    + """\
from mcp.server.mcpserver import MCPServer
from airmeter.integrations import instrument_mcp_server

mcp = MCPServer("sdk-notes")


@mcp.tool()
def get_note(key: str) -> str:
    return f"note {key}"


async def main() -> None:
    store = await create_storage(sys.argv[1])
    async with Meter(store=store, server=mcp.name) as meter:
        instrument_mcp_server(mcp, meter)
        await mcp.run_stdio_async()
    await store.close()


asyncio.run(main())
"""
)
FASTMCP_SERVER = (
    _HEAD
    + """\
from fastmcp import FastMCP
from airmeter.integrations import FastMCPMeterMiddleware

mcp = FastMCP("fast-notes")


@mcp.tool
def read_page(key: str) -> str:
    return f"page {key}"


async def main() -> None:
    store = await create_storage(sys.argv[1])
    async with Meter(store=store, server=mcp.name) as meter:
        mcp.add_middleware(FastMCPMeterMiddleware(meter))
        await mcp.run_stdio_async(show_banner=False)
    await store.close()


asyncio.run(main())
"""
)


async def _listed(client: Client, names: set[str]) -> None:
    """Wait (bounded) until the gateway lists ``names``: its stdio children start on their own
    time."""
    with anyio.fail_after(60):
        listed = {t.name for t in (await client.list_tools()).tools}
        while not names <= listed:
            await anyio.sleep(0.1)
            listed = {t.name for t in (await client.list_tools()).tools}


def _report(store: str, *extra: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(air("meter", "report", "--store", store, "--since", "all", *extra),
                          capture_output=True, text=True, timeout=120, check=True)  # fmt: skip


async def test_adapters_behind_the_gateway_count_each_call_once(tmp_path: Path) -> None:
    data = f"file://{tmp_path / 'data'}"
    for name, text in (("sdk_server.py", SDK_SERVER), ("fast_server.py", FASTMCP_SERVER)):
        (tmp_path / name).write_text(text, encoding="utf-8")
    config = tmp_path / "gw.yml"
    servers = [
        {"name": name, "command": [sys.executable, str(tmp_path / f"{stem}.py"), data]}
        for name, stem in (("sdk-notes", "sdk_server"), ("fast-notes", "fast_server"))
    ]
    config.write_text(json.dumps({"servers": servers}), encoding="utf-8")  # YAML holds JSON
    gateway = air("gateway", "--config", str(config), "--port", "0", "--store", data)
    with started(gateway) as gw:
        async with Client(gw.url) as client:
            await _listed(client, {"get_note", "read_page"})
            for i in range(CALLS):
                sdk = await client.call_tool("get_note", {"key": f"k{i}"})
                fast = await client.call_tool("read_page", {"key": f"k{i}"})
                assert not sdk.is_error
                assert not fast.is_error
        assert gw.stop() == 0  # SIGTERM: the gateway flushes, and its stdio children stop

    async with await create_storage(data) as store:
        calls = await store.query(CALLS_NAMESPACE, limit=1000)
        hops = await store.query(HOPS_NAMESPACE, limit=1000)
    by_server: dict[str, list[dict[str, Any]]] = {}
    for call in calls:
        by_server.setdefault(call["server"], []).append(call)
    # 2 x CALLS each before: the adapter's record and the gateway's
    assert {s: len(c) for s, c in by_server.items()} == {"sdk-notes": CALLS, "fast-notes": CALLS}
    assert len(hops) == 2 * CALLS
    assert {h["upstream_call_id"] for h in hops} == {c["call_id"] for c in calls}  # linked
    assert all(h["latency_ms"] >= h["upstream_latency_ms"] >= 0 for h in hops)

    report = orjson.loads(_report(data, "--format", "json").stdout)
    assert report["total_calls"] == 2 * CALLS
    assert report["gateway"]["hops"] == 2 * CALLS
    figures = {s["server"]: s for s in report["gateway"]["servers"]}
    assert set(figures) == {"sdk-notes", "fast-notes"}
    assert all(f["hops"] == CALLS and f["added_p50_ms"] is not None for f in figures.values())
    assert f"gateway hops {2 * CALLS}" in _report(data).stdout

    dash = await DashboardData.open(data)  # the dashboard: the added latency, a figure of its own
    try:
        rng = resolve_range("24h", now_ms=dash.now_ms())
        await dash.machine.evaluate_now(rng)
        view = await dash.view(rng)
    finally:
        await dash.close()
    assert view.snapshot.total_calls == 2 * CALLS
    assert view.gateway is not None
    assert {(r.server, r.hops) for r in view.gateway.rows} == {("sdk-notes", CALLS),
                                                               ("fast-notes", CALLS)}  # fmt: skip
    shown = machine_values(view)
    assert shown["gateway_style"] == {}  # the card is shown
    assert f"{2 * CALLS} calls went through air gateway" in shown["gateway_note"]
    assert all(row["p50"] is not None for row in shown["gateway"])
