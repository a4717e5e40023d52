"""The manifest and a live ``tools/list`` (official ``mcp`` client, real stdio and HTTP, both
protocol eras) expose identical information for every tool of the demo server."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from mcp import Client, StdioServerParameters

from aircli._server_check import server_manifest
from tests.aircore.conftest import DEMO, ROOT, HttpServer
from tests.e2e.scaffolded import fill_scaffolded


@pytest.fixture(scope="module")
def demo_http_server() -> Any:
    server = HttpServer(DEMO)
    try:
        yield server
    finally:
        assert server.close() == 0


async def _live_tools(target: Any, mode: str) -> list[dict[str, Any]]:
    tools: list[dict[str, Any]] = []
    async with Client(target, mode=mode) as client:
        cursor = None
        while True:
            page = await client.list_tools(cursor=cursor)
            tools += [
                t.model_dump(by_alias=True, exclude_none=True, mode="json") for t in page.tools
            ]
            cursor = page.next_cursor
            if cursor is None:
                return tools


@pytest.mark.parametrize("mode", ["auto", "legacy"])
@pytest.mark.parametrize("transport", ["stdio", "http"])
async def test_manifest_equals_live_tools_list(
    transport: str, mode: str, demo_http_server: HttpServer
) -> None:
    manifest = server_manifest(DEMO)
    expected = {e["name"]: e for e in manifest["tools"] if e["_meta"]["enabled"]}
    target: Any = demo_http_server.url
    if transport == "stdio":
        target = StdioServerParameters(
            command=sys.executable,
            args=["-m", "aircli", "serve", DEMO, "--store", "memory://"],
            cwd=str(Path(DEMO).parent.parent),
        )

    live = {t["name"]: t for t in await _live_tools(target, mode)}

    assert sorted(live) == sorted(expected)
    for name, tool in live.items():
        assert tool == expected[name], name
        # the definition's metadata made it through the wire, under the standard's names
        assert tool["_meta"]["categoryKey"]
        assert tool["_meta"]["version"] == "1.0.0"
        assert len(tool["_meta"]["exampleQueries"]) >= 3
        assert tool["_meta"]["displayDescription"]
        assert tool["_meta"]["register"] is True
        assert tool["annotations"]["title"] == tool["title"]
        assert tool["inputSchema"]["additionalProperties"] is False


def _air(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run(
        [sys.executable, "-m", "aircli", *args],
        cwd=cwd, capture_output=True, text=True, env=env, timeout=120, check=False,
    )  # fmt: skip


@dataclass(frozen=True)
class Scaffolded:
    """A project taken from ``air scaffold`` to a passing ``air check``, and what each step said."""

    path: Path
    scaffold: subprocess.CompletedProcess[str]
    failing: subprocess.CompletedProcess[str]
    passing: subprocess.CompletedProcess[str]
    manifest: subprocess.CompletedProcess[str]


@pytest.fixture(scope="module")
def scaffolded(tmp_path_factory: pytest.TempPathFactory) -> Scaffolded:
    """The steps up to the manifest, run once: both protocol eras list the same project."""
    path = tmp_path_factory.mktemp("scaffolded")
    scaffold = _air(path, "scaffold", "tool", "smp_exchange_inquiry", "--no-input")
    failing = _air(path, "check")  # finds ./server.py by itself: server mode
    if scaffold.returncode == 0:
        fill_scaffolded(path)
    passing = _air(path, "check")
    return Scaffolded(path, scaffold, failing, passing, _air(path, "manifest", "server.py"))


@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_scaffolded_tool_from_placeholders_to_a_live_tools_list(
    scaffolded: Scaffolded, mode: str
) -> None:
    tmp_path, scaffold = scaffolded.path, scaffolded.scaffold
    assert scaffold.returncode == 0, scaffold.stderr
    assert "left to fill" in scaffold.stdout

    failing = scaffolded.failing
    assert failing.returncode == 1
    assert "placeholder text 'TODO'" in failing.stdout
    # the schema resource the handler passes is checked too, which only server mode can see
    assert "outputSchema (explicit on the tool).properties.result.description" in failing.stdout

    passing = scaffolded.passing  # after fill_scaffolded
    assert passing.returncode == 0, passing.stdout
    assert passing.stdout.rstrip().endswith(
        "1 definition(s) checked in server.py; 1 draft(s), register: false: smp_exchange_inquiry"
    )
    manifest_run = scaffolded.manifest
    assert manifest_run.returncode == 0, manifest_run.stderr
    manifest = json.loads(manifest_run.stdout)

    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "aircli", "serve", "server.py", "--store", "memory://"],
        cwd=str(tmp_path),
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    live = await _live_tools(params, mode)

    assert live == manifest["tools"]
    (tool,) = live
    assert tool["_meta"]["register"] is False  # a scaffolded tool is a draft until approved
    assert tool["_meta"]["categoryKey"] == "smp"
    assert tool["_meta"]["ownerOrg"] == "MCP_TOOL"
    assert tool["outputSchema"]["properties"]["result"]["description"] == "환율을 설명하는 한 줄"
    assert tool["annotations"]["readOnlyHint"] is True
