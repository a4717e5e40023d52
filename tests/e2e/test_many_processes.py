"""Several processes of one server on one store, as MCP clients spawn them: ``air meter report``
and the dashboard show every one of them, told apart by the ``instance`` field.

Three real ``air serve`` processes (stdio, each driven by the official client at the same time)
meter into one store; the report's JSON and table and the dashboard's data module must count
each process's calls under its own instance id, and their sum.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import orjson
import pytest
from mcp.client import Client
from mcp.client.stdio import StdioServerParameters, stdio_client

from dashboard.data import DashboardData
from dashboard.types import Filters
from tests.air_process import air

pytestmark = pytest.mark.slow

SERVER = """
from aircore import AirError, define_server, define_tool


def get_user(params):
    if params["user_id"] == "nobody":
        raise AirError(-32001, "no such user")
    return {"id": params["user_id"]}


server = define_server(
    name="shared",
    tools=[define_tool("get_user", params={"user_id": "string"}, handler=get_user)],
    meter=True,
)
"""

PLAN = (12, 20, 31)  # calls per process; each also makes one failing call


def _stores(tmp_path: Path) -> list[tuple[str, dict[str, str]]]:
    """The stores several writer processes share, as (URL, how the servers are pointed at it):
    the default data dir (``AIR_DATA_DIR``, no ``--store``: what an MCP client's config does)
    and a SQLite file."""
    data = tmp_path / "data"
    return [
        (f"file://{data}", {"AIR_DATA_DIR": str(data)}),
        (f"sqlite:///{tmp_path / 'air.db'}", {"--store": f"sqlite:///{tmp_path / 'air.db'}"}),
    ]


async def _one_process(script: Path, how: dict[str, str], calls: int, errlog: Path) -> str:
    """Serve ``script`` as an MCP client spawns it, make ``calls`` calls; the server's stderr."""
    env = {k: v for k, v in os.environ.items() if k != "AIR_DATA_DIR"}
    args = ["-m", "aircli", "serve", str(script), "--transport", "stdio"]
    for key, value in how.items():
        if key.startswith("--"):
            args += [key, value]
        else:
            env[key] = value
    params = StdioServerParameters(
        command=sys.executable, args=args, env=env, cwd=str(script.parent)
    )
    with errlog.open("w") as err:
        async with Client(stdio_client(params, err)) as client:
            for i in range(calls):
                assert not (await client.call_tool("get_user", {"user_id": f"u{i}"})).is_error
            assert (await client.call_tool("get_user", {"user_id": "nobody"})).is_error
    return await asyncio.to_thread(errlog.read_text)


def _report(store: str, *fmt: str) -> str:
    done = subprocess.run(
        air("meter", "report", "--store", store, "--since", "all", *fmt),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


async def test_report_and_dashboard_show_every_process_of_a_shared_store(tmp_path: Path) -> None:
    script = tmp_path / "shared_server.py"
    script.write_text(SERVER, encoding="utf-8")
    for store, how in _stores(tmp_path):
        said = await asyncio.gather(
            *(
                _one_process(script, how, n, tmp_path / f"server-{i}.stderr")
                for i, n in enumerate(PLAN)
            )
        )
        if "AIR_DATA_DIR" in how:  # each process chose the default location, and said so
            assert all(f"air: shared metering to {store} (from AIR_DATA_DIR)" in s for s in said)
        text = await asyncio.to_thread(_report, store, "--format", "json")
        snap: dict[str, Any] = orjson.loads(text)
        rows = snap["servers"]
        assert sorted(r["calls"] for r in rows) == sorted(n + 1 for n in PLAN)
        assert all(r["server"] == "shared" and r["errors"] == 1 for r in rows)
        instances = {r["instance_id"] for r in rows}
        assert len(instances) == len(PLAN)
        assert snap["total_calls"] == sum(PLAN) + len(PLAN)

        table = await asyncio.to_thread(_report, store)
        for row in rows:
            assert any(
                line.split()[:3] == ["shared", row["instance_id"], str(row["calls"])]
                for line in table.splitlines()
            ), table

        data = await DashboardData.open(store)
        try:
            view = await data.view(data.resolve("1h"))
            assert view.snapshot.total_calls == sum(PLAN) + len(PLAN)
            labels = [c.label for c in view.server_choices]
            assert f"shared (all {len(PLAN)} instances)" in labels
            for row in rows:
                one = await data.view(
                    data.resolve("1h"), Filters(server="shared", instance=row["instance_id"])
                )
                assert one.snapshot.total_calls == row["calls"]
                assert one.snapshot.error_count == 1
        finally:
            await data.close()
