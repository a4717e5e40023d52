"""The gateway's registry, ``air check`` and ``air manifest`` agree on the tool definitions: the
official ``mcp`` client (both eras) lists through ``air gateway`` exactly the manifest's tools
(same names, same ``_meta`` under the standard's camelCase keys), minus the drafts ``air check``
reports (``register: false``), which come back only where the gateway's config says
``include_drafts: true``."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from mcp import Client

from tests.aircore.conftest import DEMO, ROOT
from tests.airgateway.procs import Proc, air, started
from tests.e2e.scaffolded import SCAFFOLDED_TOOL, fill_scaffolded

DRAFTS_PREFIX = "drafts"


def _air(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run(
        [sys.executable, "-m", "aircli", *args],
        cwd=cwd, capture_output=True, text=True, env=env, timeout=120, check=False,
    )  # fmt: skip


def _json(run: subprocess.CompletedProcess[str]) -> dict[str, Any]:
    assert run.returncode == 0, run.stdout + run.stderr
    answer: dict[str, Any] = json.loads(run.stdout)
    return answer


def _serve(target: str) -> str:
    argv = [sys.executable, "-m", "aircli", "serve", target, "--store", "memory://"]
    return json.dumps(argv)


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A scaffolded, filled project: one tool, a draft (``register: false``) passing the gate."""
    root = tmp_path_factory.mktemp("drafts")
    scaffold = _air(root, "scaffold", "tool", SCAFFOLDED_TOOL, "--no-input")
    assert scaffold.returncode == 0, scaffold.stderr
    fill_scaffolded(root)
    return root


@pytest.fixture(scope="module")
def gateway(project: Path) -> Iterator[Proc]:
    """``air gateway`` over the demo server and the draft project (once without, once with its
    drafts), each a stdio upstream the gateway starts."""
    config = project / "gateway.yml"
    config.write_text(
        f"""
servers:
  - name: demo
    command: {_serve(DEMO)}
  - name: project
    command: {_serve(str(project / "server.py"))}
  - name: project_drafts
    command: {_serve(str(project / "server.py"))}
    prefix: {DRAFTS_PREFIX}
    include_drafts: true
""",
        encoding="utf-8",
    )
    argv = air("gateway", "--config", str(config), "--port", "0", "--store", "memory://")
    with started(argv) as proc:
        yield proc


@pytest.fixture(scope="module")
def cli_views(project: Path) -> dict[str, dict[str, Any]]:
    """What ``air check`` and ``air manifest`` say of the demo server and the project (run once:
    both eras' tests compare the gateway's listing with them)."""
    return {
        "demo_check": _json(_air(ROOT, "check", DEMO, "--format", "json")),
        "project_check": _json(_air(project, "check", "--format", "json")),
        "demo_manifest": _json(_air(ROOT, "manifest", DEMO)),
        "project_manifest": _json(_air(project, "manifest", "server.py")),
    }


async def _listed(url: str, mode: str) -> dict[str, dict[str, Any]]:
    tools: dict[str, dict[str, Any]] = {}
    async with Client(url, mode=mode) as client:
        cursor = None
        while True:
            page = await client.list_tools(cursor=cursor)
            for tool in page.tools:
                tools[tool.name] = tool.model_dump(by_alias=True, exclude_none=True, mode="json")
            cursor = page.next_cursor
            if cursor is None:
                return tools


@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_the_gateway_lists_what_the_manifest_says_and_leaves_out_what_check_calls_drafts(
    gateway: Proc, cli_views: dict[str, dict[str, Any]], mode: str
) -> None:
    demo_check, project_check = cli_views["demo_check"], cli_views["project_check"]
    assert demo_check["ok"]
    assert project_check["ok"]
    assert demo_check["drafts"] == []
    assert project_check["drafts"] == [SCAFFOLDED_TOOL]
    demo_manifest, project_manifest = cli_views["demo_manifest"], cli_views["project_manifest"]
    published = {t["name"]: t for t in demo_manifest["tools"] if t["_meta"]["enabled"]}
    (draft,) = project_manifest["tools"]

    listed = await _listed(gateway.url, mode)

    expected = {**published, f"{DRAFTS_PREFIX}__{SCAFFOLDED_TOOL}": draft}
    assert sorted(listed) == sorted(expected)
    assert SCAFFOLDED_TOOL not in listed  # the draft is left out where drafts are not included
    for name, tool in listed.items():
        assert {**tool, "name": expected[name]["name"]} == expected[name], name
        meta = tool["_meta"]
        assert {
            "version",
            "categoryKey",
            "exampleQueries",
            "ownerOrg",
            "enabled",
            "register",
        } <= set(meta), name
        assert meta["register"] is (name in published)
    assert listed[f"{DRAFTS_PREFIX}__{SCAFFOLDED_TOOL}"]["_meta"]["categoryKey"] == "smp"
