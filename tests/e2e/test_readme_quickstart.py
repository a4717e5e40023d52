"""The README's quick start, as a user runs it: their MCPServer / FastMCP server with the meter
added, spawned by the official client over stdio; ``air meter report`` then shows the calls."""

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

from tests.air_process import air
from tests.e2e.docblocks import (
    RELEASED_MARKER,
    ROOT,
    doc_blocks,
    readme_install_commands,
    readme_install_section,
)

QUICK_STARTS = {
    "MCPServer": "instrument_mcp_server(mcp, meter)",
    "FastMCP": "FastMCPMeterMiddleware(meter)",
}


def _quick_start(marker: str) -> str:
    (block,) = [b for b in doc_blocks(ROOT / "README.md") if marker in b.source]
    return block.source


def _report(cwd: Path, env: dict[str, str]) -> dict[str, Any]:
    """``air meter report --format json`` run in ``cwd`` without --store."""
    done = subprocess.run(
        air("meter", "report", "--since", "all", "--format", "json"),
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    report: dict[str, Any] = orjson.loads(done.stdout)
    return report


@pytest.mark.parametrize("framework", sorted(QUICK_STARTS))
async def test_the_readme_quick_start_meters_an_existing_server(
    framework: str, tmp_path: Path
) -> None:
    work = tmp_path / "my-project"
    work.mkdir()
    script = work / "server.py"
    script.write_text(_quick_start(QUICK_STARTS[framework]), encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if k != "AIR_DATA_DIR"}
    env["HOME"] = str(tmp_path / "home")
    params = StdioServerParameters(command=sys.executable, args=[str(script)], env=env, cwd=work)
    with (tmp_path / "server.stderr").open("w") as errlog:
        async with Client(stdio_client(params, errlog)) as client:
            for text in ("milk", "eggs", "bread"):
                result = await client.call_tool("add_note", {"text": text})
                assert not result.is_error
    said = (tmp_path / "server.stderr").read_text(encoding="utf-8")
    data = work / ".air" / "data"
    # the same line an air server prints (the README says every metered server does)
    line = f"air: notes metering to file://{data} (.air/data under the working directory)"
    assert line in said
    snap = await asyncio.to_thread(_report, work, env)
    assert snap["total_calls"] == 3
    assert [(t["tool"], t["calls"]) for t in snap["tools"]] == [("add_note", 3)]
    assert (work / ".air" / "data" / "meter.calls.log.jsonl").is_file()


def test_the_readme_installs_from_a_checkout_or_a_wheel_until_a_release_exists() -> None:
    section = readme_install_section()
    assert RELEASED_MARKER in section
    commands = readme_install_commands()
    assert commands[0] == "pip install '.[demo]'"  # the first command: from the checkout
    assert "pip install --find-links dist 'air-mcp[demo]'" in commands  # a built wheel
    for command in commands:  # nothing a user runs today needs air-mcp on the index
        assert command.startswith("pip install --find-links ") or "'.[" in command, command
    # the index form is there, after the marker only
    released = section.split(RELEASED_MARKER, 1)[1]
    assert "pip install 'air-mcp[demo]'" in released
