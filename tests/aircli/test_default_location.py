"""Metering is kept by default, in a place every command finds (real processes, no --store).

A server defined with ``meter=True`` and no ``storage=`` is started by the official client as
an MCP client would; ``air meter report``, ``air store stats`` and ``air dashboard`` then find
its calls without being told where they are.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from pathlib import Path

import httpx
import orjson
from mcp.client import Client
from mcp.client.stdio import StdioServerParameters, stdio_client

from tests.air_process import air, serving

SERVER = """
from aircore import define_server, define_tool

server = define_server(
    name="kept",
    tools=[define_tool("ping", handler=lambda params: "pong")],
    meter=True,
)

if __name__ == "__main__":
    server.run()
"""


def _env(tmp_path: Path) -> dict[str, str]:
    """The environment of a user who never heard of AIR_DATA_DIR (with a private home)."""
    env = {k: v for k, v in os.environ.items() if k != "AIR_DATA_DIR"}
    env.update(HOME=str(tmp_path / "home"), XDG_DATA_HOME=str(tmp_path / "xdg"))
    return env


async def _call_ping(script: Path, cwd: Path | str, env: dict[str, str], calls: int) -> str:
    """Spawn the server as an MCP client does (stdio, in ``cwd``), call ping; its stderr."""
    params = StdioServerParameters(command=sys.executable, args=[str(script)], env=env, cwd=cwd)
    errlog = script.with_suffix(".stderr")
    with errlog.open("w", encoding="utf-8") as err:
        async with Client(stdio_client(params, err)) as client:
            for _ in range(calls):
                assert not (await client.call_tool("ping", {})).is_error
    return errlog.read_text(encoding="utf-8")


def _air(*args: str, cwd: Path | str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        air(*args), cwd=cwd, env=env, capture_output=True, text=True, timeout=120, check=False
    )


def _dashboard_layout(cwd: Path, env: dict[str, str]) -> str:
    """Serve ``air dashboard`` (no --store) in ``cwd``; its page layout as plain JSON text."""
    with serving("dashboard", "--port", "0", cwd=cwd, env=env) as url:
        assert httpx.get(url, timeout=30).status_code == 200
        layout = httpx.get(url + "_dash-layout", timeout=30).content
    return orjson.dumps(orjson.loads(layout)).decode()  # without Dash's \u002f escapes


def _reported_calls(cwd: Path | str, env: dict[str, str]) -> tuple[int, str]:
    done = _air("meter", "report", "--since", "all", "--format", "json", cwd=cwd, env=env)
    assert done.returncode == 0, done.stderr
    return orjson.loads(done.stdout)["total_calls"], done.stderr


async def test_a_metered_server_keeps_its_calls_under_the_working_directory(
    tmp_path: Path,
) -> None:
    work = tmp_path / "project"
    work.mkdir()
    script = tmp_path / "kept_server.py"
    script.write_text(SERVER, encoding="utf-8")
    env = _env(tmp_path)
    stderr = await _call_ping(script, work, env, calls=3)
    data = work / ".air" / "data"
    assert f"air: kept metering to file://{data} (.air/data under the working directory)" in (
        stderr
    )
    assert len((data / "meter.calls.log.jsonl").read_bytes().splitlines()) == 3

    calls, said = _reported_calls(work, env)
    assert calls == 3
    assert f"air meter report: reading file://{data}" in said
    stats = _air("store", "stats", cwd=work, env=env)
    assert stats.returncode == 0, stats.stderr
    assert "meter.calls" in stats.stdout
    layout = await asyncio.to_thread(_dashboard_layout, work, env)
    assert f"file://{data}" in layout  # the page names the store it shows


async def test_a_server_started_in_the_root_directory_meters_to_the_user_data_dir(
    tmp_path: Path,
) -> None:
    script = tmp_path / "kept_server.py"
    script.write_text(SERVER, encoding="utf-8")
    env = _env(tmp_path)
    stderr = await _call_ping(script, "/", env, calls=2)
    data = tmp_path / "xdg" / "air" / "data"
    assert f"metering to file://{data} (the per-user data directory)" in stderr
    assert len((data / "meter.calls.log.jsonl").read_bytes().splitlines()) == 2

    calls, _ = _reported_calls("/", env)
    assert calls == 2
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    missing = _air("meter", "report", cwd=elsewhere, env=env)
    assert missing.returncode == 1
    assert f"data found in file://{data}" in missing.stderr
    for action in ("check", "stats"):  # the read-only store commands name it too
        empty = _air("store", action, cwd=elsewhere, env=env)
        assert empty.returncode == 0, empty.stderr
        assert "no data directory or database yet" in empty.stdout
        assert f"data found in file://{data}" in empty.stdout
