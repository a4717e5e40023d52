"""``air demo`` end to end: a real demo server over stdio, the official client, a real store."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import httpx
import orjson
import pytest
from mcp.client import Client
from mcp.client.stdio import StdioServerParameters

from aircli._traffic import plan_calls
from aircli.demo import DEMO_SERVER
from dashboard.data import DashboardData
from tests.air_process import air, serving

pytestmark = pytest.mark.slow


SERVE_FLAGS = ("--transport", "stdio", "--store", "memory://")


async def _listed_tools() -> list[Any]:
    params = StdioServerParameters(
        command=sys.executable,
        args=[*("-m", "aircli", "serve", str(DEMO_SERVER)), *SERVE_FLAGS],
    )
    async with Client(params) as client:
        return list((await client.list_tools()).tools)


def _refused_by_validation(tool: Any, arguments: dict[str, Any]) -> bool:
    """Calls missing required arguments are refused by validation (and metered as -32602)."""
    return not arguments and bool(tool.input_schema.get("required"))


def test_air_demo_records_every_call_it_makes(tmp_path: Path) -> None:
    store = tmp_path / "data"
    result = subprocess.run(
        air(
            "demo", "--calls", "200", "--no-dashboard", "--store", f"file://{store}", "--seed", "5"
        ),
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
    )
    assert result.returncode == 0, result.stderr
    assert "200/200 calls" in result.stderr
    assert "Traceback" not in result.stderr

    tools = {t.name: t for t in asyncio.run(_listed_tools())}
    plan = plan_calls(list(tools.values()), 200, seed=5)
    refused = [p for p in plan if _refused_by_validation(tools[p.tool], p.arguments)]
    lines = (store / "meter.calls.log.jsonl").read_bytes().splitlines()
    logged = [orjson.loads(line) for line in lines]
    assert Counter(e["tool"] for e in logged) == Counter(p.tool for p in plan)
    # handlers raise -32602 too (unknown user …), so refusals are a lower bound
    assert sum(e["error_type"] == "-32602" for e in logged) >= len(refused) > 0
    assert {e["layer"] for e in logged} == {f"L{i}" for i in range(1, 8)}
    assert any(not e["ok"] for e in logged)
    assert any(e["latency_ms"] > 100 for e in logged)  # slow calls

    async def headline() -> tuple[int, int]:
        data = await DashboardData.open(f"file://{store}")
        try:
            view = await data.view(data.resolve("1h"))
        finally:
            await data.close()
        return view.headline.calls, view.headline.errors

    calls, errors = asyncio.run(headline())
    assert calls == len(logged)
    assert errors == sum(not e["ok"] for e in logged)


def test_air_demo_serves_the_dashboard_and_stops_cleanly_on_ctrl_c(tmp_path: Path) -> None:
    store = tmp_path / "data"
    demo = ("demo", "--calls", "60", "--store", f"file://{store}", "--port", "0")
    with serving(*demo, cwd=tmp_path, stop_timeout=60) as url, httpx.Client() as client:
        assert client.get(url).status_code == 200
    # Everything the server recorded, including live-trickle calls, is in the log and in the
    # meter's rollups: the server flushed both when the demo closed its client.
    lines = (store / "meter.calls.log.jsonl").read_bytes().splitlines()
    assert len(lines) >= 55
    assert all(orjson.loads(line)["tool"] for line in lines)

    async def total() -> int:
        data = await DashboardData.open(f"file://{store}")
        try:
            return (await data.view(data.resolve("1h"))).headline.calls
        finally:
            await data.close()

    assert asyncio.run(total()) == len(lines)


def test_air_demo_explains_a_server_that_cannot_start(tmp_path: Path) -> None:
    store = tmp_path / "data"

    async def run_while_locked() -> subprocess.CompletedProcess[str]:
        import fcntl
        import os

        store.mkdir()
        fd = os.open(store / ".lock", os.O_RDWR | os.O_CREAT, 0o644)
        try:  # held exclusively, as a writer of an older air release does: the server cannot
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return await asyncio.to_thread(
                subprocess.run,
                air("demo", "--calls", "10", "--no-dashboard", "--store", f"file://{store}"),
                capture_output=True,
                text=True,
                timeout=120,
                cwd=tmp_path,
            )
        finally:
            os.close(fd)

    result = asyncio.run(run_while_locked())
    assert result.returncode == 1
    assert "the demo server stopped unexpectedly" in result.stderr
    assert "StoreLockedError" in result.stderr  # the cause, from the server's log
    # No traceback of the demo's own (quoted server-log lines are indented).
    assert not any(line.startswith("Traceback") for line in result.stderr.splitlines())
    assert (store.parent / "demo-server.log").is_file()  # beside the data directory
