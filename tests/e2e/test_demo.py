"""``air demo`` end to end: a real demo server over stdio, the official client, a real store."""

from __future__ import annotations

import asyncio
import os
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

from aircli._demo_history import HISTORY_INSTANCE
from aircli._traffic import plan_calls
from aircli.demo import DEMO_SERVER
from airmeter.readers import recent_calls
from airstore import create_storage
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
            "demo",
            "--calls",
            "200",
            "--no-dashboard",
            "--store",
            f"file://{store}",
            "--seed",
            "5",
            "--history",
            "0",
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
        return view.snapshot.total_calls, view.snapshot.error_count

    calls, errors = asyncio.run(headline())
    assert calls == len(logged)
    assert errors == sum(not e["ok"] for e in logged)


def test_air_demo_serves_the_dashboard_and_stops_cleanly_on_ctrl_c(tmp_path: Path) -> None:
    store = tmp_path / "data"
    demo = ("demo", "--calls", "60", "--store", f"file://{store}", "--port", "0", "--history", "0")
    with serving(*demo, cwd=tmp_path, stop_timeout=60) as url, httpx.Client() as client:
        assert client.get(url).status_code == 200
    # no .air/slo.yml here: the dashboard's SLO panel got the demo's objectives, beside the log
    assert "fetch_url" in (tmp_path / "demo-slo.yml").read_text(encoding="utf-8")
    # Everything the server recorded, including live-trickle calls, is in the log and in the
    # meter's rollups: the server flushed both when the demo closed its client.
    lines = (store / "meter.calls.log.jsonl").read_bytes().splitlines()
    assert len(lines) >= 55
    assert all(orjson.loads(line)["tool"] for line in lines)

    async def total() -> int:
        data = await DashboardData.open(f"file://{store}")
        try:
            return (await data.view(data.resolve("1h"))).snapshot.total_calls
        finally:
            await data.close()

    assert asyncio.run(total()) == len(lines)


def test_air_demo_explains_a_server_that_cannot_start(tmp_path: Path) -> None:
    store = tmp_path / "data"

    async def run_while_locked() -> subprocess.CompletedProcess[str]:
        import fcntl

        store.mkdir()
        fd = os.open(store / ".lock", os.O_RDWR | os.O_CREAT, 0o644)
        try:  # held exclusively with its pid inside, as a writer of an older air release
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)  # does: the server cannot start
            os.write(fd, b"%d\n" % os.getpid())  # (named at once, not after a 10 s wait)
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
    assert f"older air release (pid {os.getpid()})" in result.stderr  # who holds it
    # No traceback of the demo's own (quoted server-log lines are indented).
    assert not any(line.startswith("Traceback") for line in result.stderr.splitlines())
    assert (store.parent / "demo-server.log").is_file()  # beside the data directory


def test_the_demo_historys_incident_breaches_the_availability_slo_and_spends_its_budget(
    tmp_path: Path,
) -> None:
    """4,000 calls over 6 hours: dense enough around the incident (3 h ago, 40 min) at any hour
    of the day, as the default week of 150 k calls is. The burn has stopped since, but an
    incident that long spends the objective's error budget for its period: ``exhausted`` (red),
    the state issue 32 added for an overspent budget, where it said ``ok`` before."""
    url = f"file://{tmp_path / 'data'}"
    run = air("demo", "--calls", "5", "--no-dashboard", "--store", url, "--seed", "3",
              "--history", "6h", "--history-calls", "4000")  # fmt: skip
    result = subprocess.run(run, capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert "availability SLO in breach; now exhausted" in result.stderr, result.stderr
    # what the README says the user then sees: `air meter slo` exits 3, on purpose
    slo = subprocess.run(air("meter", "slo", "--store", url), capture_output=True, text=True,
                         timeout=120, cwd=tmp_path)  # fmt: skip
    assert slo.returncode == 3, slo.stderr
    failing = [line for line in slo.stdout.splitlines() if line.endswith(("exhausted", "breach"))]
    assert ["air-demo/fetch_url", "availability"] in [line.split()[:2] for line in failing]
    never = subprocess.run(air("meter", "slo", "--store", url, "--fail-on", "never"),
                           capture_output=True, text=True, timeout=120, cwd=tmp_path)  # fmt: skip
    assert never.returncode == 0, never.stderr
    argv = air("meter", "report", "--store", url, "--since", "1d", "--format", "json")
    done = subprocess.run(argv, capture_output=True, timeout=120, cwd=tmp_path, check=True)
    classes = set(orjson.loads(done.stdout)["errors_by_class"])
    assert classes >= {"tool_error", "exception", "timeout", "refused"}


def test_air_demo_writes_a_back_dated_history_first_and_only_into_an_empty_store(
    tmp_path: Path,
) -> None:
    store = tmp_path / "data"
    url = f"file://{store}"
    run = air("demo", "--calls", "20", "--no-dashboard", "--store", url, "--seed", "3",
              "--history", "2d", "--history-calls", "4000")  # fmt: skip
    result = subprocess.run(run, capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    err = result.stderr
    assert "writing 4,000 calls of history over the last 2 days" in err
    assert "history 4,000/4,000 calls (100%)" in err
    assert "daily budget exceeded" in err
    # (the SLO incident is asserted on a denser history below: 4,000 calls over 2 days follow
    # the daily curve, so how many fall in the incident's last minutes depends on the hour)
    assert err.index("history 4,000/4,000") < err.index("starting demo_server.py")

    def report() -> dict[str, Any]:
        argv = air("meter", "report", "--store", url, "--since", "3d", "--format", "json")
        done = subprocess.run(argv, capture_output=True, timeout=120, cwd=tmp_path, check=True)
        parsed: dict[str, Any] = orjson.loads(done.stdout)
        return parsed

    first = report()
    calls = {row["instance_id"]: row["calls"] for row in first["servers"]}
    assert calls.pop(HISTORY_INSTANCE) == 4000
    assert sum(calls.values()) == 20  # the live calls, from the server's own instance
    assert first["total_calls"] == 4020
    assert set(first["errors_by_class"]) >= {"tool_error", "exception", "refused"}  # timeout: below
    spans = [b["start_ms"] for b in first["series"] if b["calls"]]
    assert max(spans) - min(spans) > 36 * 3600_000  # the charts have shape over days

    async def history() -> list[Any]:
        reader = await create_storage(url, read_only=True)
        try:
            return await recent_calls(reader, limit=5000, instance=HISTORY_INSTANCE)
        finally:
            await reader.close()

    newest_first = [r.ts_ms for r in asyncio.run(history())]
    assert len(newest_first) == 4000
    assert newest_first == sorted(newest_first, reverse=True)  # written oldest first
    assert newest_first[0] - newest_first[-1] > 40 * 3600_000

    again = subprocess.run(air("demo", "--calls", "5", "--no-dashboard", "--store", url),
                           capture_output=True, text=True, timeout=300, cwd=tmp_path)  # fmt: skip
    assert again.returncode == 0, again.stderr
    assert "no history written" in again.stderr
    second = report()
    assert {r["instance_id"]: r["calls"] for r in second["servers"]}[HISTORY_INSTANCE] == 4000
    assert second["total_calls"] == 4025


def test_air_demo_history_flags_are_checked(tmp_path: Path) -> None:
    for bad in (("--history", "7x"), ("--history", "45d"), ("--history-calls", "0")):
        done = subprocess.run(air("demo", "--no-dashboard", *bad), capture_output=True,
                              text=True, timeout=60, cwd=tmp_path)  # fmt: skip
        assert done.returncode == 2, bad
        assert "air demo: --history" in done.stderr
