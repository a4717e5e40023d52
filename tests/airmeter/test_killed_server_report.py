"""A metered server killed with SIGKILL: `air meter report` counts every call its log kept."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import orjson

from airstore import FileStore
from tests.air_process import run_air

SCRIPT = """
import asyncio, sys
from aircore import define_server

server = define_server(name="killed", meter=True, storage=sys.argv[1])


@server.tool
def double(x: int) -> int:
    return x * 2


async def main():
    async with server:
        for x in range(int(sys.argv[2])):
            await server.call_tool("double", {"x": x})
        await asyncio.sleep(0.6)  # two deliveries of the meter (every 0.25 s), under 1 s
        print("delivered", flush=True)
        await asyncio.sleep(3600)


asyncio.run(main())
"""


def _run_and_kill(url: str, calls: int) -> None:
    """Run SCRIPT until its meter delivered ``calls`` calls, then SIGKILL it."""
    with subprocess.Popen(
        [sys.executable, "-c", SCRIPT, url, str(calls)], stdout=subprocess.PIPE, text=True
    ) as proc:
        try:
            assert proc.stdout is not None
            assert proc.stdout.readline().strip() == "delivered"
        finally:
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait(timeout=30)


async def test_a_killed_server_s_logged_calls_all_count_in_the_report(tmp_path: Path) -> None:
    url = f"file://{tmp_path / 'data'}"
    _run_and_kill(url, 40)
    async with FileStore(tmp_path / "data", read_only=True) as store:
        assert len(await store.query("meter.calls", limit=1000)) == 40
    report = run_air("meter", "report", "--store", url, "--since", "all", "--format", "json")
    assert report.returncode == 0, report.stderr
    assert orjson.loads(report.stdout)["total_calls"] == 40
