"""``air migrate`` reads servers people already have, not only air's own: the official SDK's
``MCPServer`` and FastMCP. Their decorator metadata (name, title, description, schemas,
annotations, tags) becomes V17 drafts with the standard's conservative defaults, which the gate
then reports; nothing is overwritten."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

pytestmark = pytest.mark.slow  # real air migrate and air check processes: make test, not test-fast
ROOT = Path(__file__).resolve().parents[2]

MCPSERVER = '''\
from mcp.server.mcpserver import MCPServer

mcp = MCPServer("notes", version="2.1.0")


@mcp.tool(title="Add a note", description="Saves a note and returns its id.")
def add_note(text: str) -> str:
    return "n1"


@mcp.tool(annotations={"readOnlyHint": True, "idempotentHint": True})
def search_notes(query: str, limit: int = 10) -> list[str]:
    """Finds notes whose text contains the query."""
    return []
'''

FASTMCP = '''\
from fastmcp import FastMCP

app = FastMCP("files", version="1.2.0")


@app.tool(tags={"files"})
def delete_file(path: str) -> str:
    """Removes a file for good."""
    return path
'''


def _air(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run(
        [sys.executable, "-m", "aircli", *args],
        cwd=cwd, capture_output=True, text=True, env=env, timeout=120, check=False,
    )  # fmt: skip


def _load(path: Path) -> dict[str, Any]:
    data: dict[str, Any] = yaml.safe_load(path.read_text(encoding="utf-8"))
    return data


Migrated = tuple[Path, subprocess.CompletedProcess[str]]
"""A project with the MCPServer as ``server.py`` after ``air migrate server.py``, and that run."""


@pytest.fixture(scope="module")
def migrated(tmp_path_factory: pytest.TempPathFactory) -> Migrated:
    """``air migrate server.py`` (default ``--out``: ./tool-definitions) run once for the module
    on the MCPServer; a test that changes the project works on its own copy."""
    project = tmp_path_factory.mktemp("migrated")
    (project / "server.py").write_text(MCPSERVER, encoding="utf-8")
    return project, _air(project, "migrate", "server.py")


def test_an_official_sdk_mcpserver_is_migrated_to_drafts(migrated: Migrated) -> None:
    project, run = migrated

    assert run.returncode == 0, run.stderr
    assert "air migrate: 2 draft(s) written, 0 kept" in run.stdout
    add = _load(project / "tool-definitions" / "general" / "add_note.yml")
    assert add["display_name"] == "Add a note"
    assert add["version"] == "2.1.0"
    assert add["description"]["function"] == "Saves a note and returns its id."
    assert add["description"]["when_not_to_use"] == "None"  # English, as the description
    assert add["owner_org"] == "MCP_TOOL"
    assert add["register"] is False
    assert add["parameters_schema"]["required"] == ["text"]
    assert add["parameters_schema"]["additionalProperties"] is False
    assert add["parameters_schema"]["properties"]["text"]["type"] == "string"
    assert add["output_schema"]["properties"]["result"]["type"] == "string"
    search = _load(project / "tool-definitions" / "general" / "search_notes.yml")
    assert search["description"]["function"] == "Finds notes whose text contains the query."
    assert (search["read_only"], search["destructive"], search["idempotent"]) == (True, False, True)
    # the gate lists what is left to fill (placeholders) and calls them drafts
    assert "placeholder text 'TODO'" in run.stdout


def test_a_fastmcp_server_is_migrated_with_its_tags_and_never_overwrites(tmp_path: Path) -> None:
    (tmp_path / "files_server.py").write_text(FASTMCP, encoding="utf-8")
    mine = tmp_path / "tool-definitions" / "files" / "delete_file.yml"

    first = _air(tmp_path, "migrate", "files_server.py:app")

    assert first.returncode == 0, first.stderr
    draft = _load(mine)  # default --out: ./tool-definitions; the first tag names the category
    assert draft["category_key"] == "files"
    assert draft["tags"] == ["files"]
    assert draft["version"] == "1.2.0"
    assert draft["description"]["function"] == "Removes a file for good."
    assert (draft["read_only"], draft["destructive"]) == (False, True)  # from the verb
    assert draft["register"] is False

    mine.write_text("# the team's own work\nname: delete_file\n", encoding="utf-8")
    again = _air(tmp_path, "migrate", "files_server.py:app")
    assert again.returncode == 0, again.stderr
    assert "0 draft(s) written, 1 kept" in again.stdout
    assert mine.read_text(encoding="utf-8").startswith("# the team's own work")


FASTMCP_PLAIN = '''\
from fastmcp import FastMCP

mcp = FastMCP("pages")  # no version: FastMCP reports its own


@mcp.tool
def fetch_page(url: str) -> str:
    """Downloads a web page and returns its text."""
    return ""


@mcp.tool
def count_words(text: str) -> int:
    """Counts the words of a text."""
    return 0


@mcp.tool
def get_memo(memo_id: str) -> str:
    """메모 ID로 저장된 메모 하나를 돌려준다."""
    return ""
'''


def test_a_fastmcp_draft_has_the_servers_version_its_language_and_no_wrong_value(
    tmp_path: Path,
) -> None:
    (tmp_path / "pages_server.py").write_text(FASTMCP_PLAIN, encoding="utf-8")

    run = _air(tmp_path, "migrate", "pages_server.py", "--out", "defs")

    assert run.returncode == 0, run.stderr
    fetch_path = tmp_path / "defs" / "general" / "fetch_page.yml"
    count_path = tmp_path / "defs" / "general" / "count_words.yml"
    fetch, count = _load(fetch_path), _load(count_path)
    memo = _load(tmp_path / "defs" / "general" / "get_memo.yml")
    assert fetch["version"] == count["version"] == "0.1.0"  # not FastMCP's 4.x
    assert fetch["description"]["when_not_to_use"] == "None"
    assert memo["description"]["when_not_to_use"] == "없음"  # described in Korean
    assert "x-fastmcp" not in fetch_path.read_text(encoding="utf-8")
    assert count["output_schema"]["properties"]["result"]["type"] == "integer"
    assert not [k for k in count["output_schema"] if k.startswith("x-")]
    assert fetch["open_world"] is True  # it reaches the network: a URL parameter
    assert "open_world" not in count  # unknown: left to the author, not a guessed false
    assert "# TODO open_world" in count_path.read_text(encoding="utf-8")


def test_a_module_without_any_server_names_the_kinds_migrate_reads(tmp_path: Path) -> None:
    (tmp_path / "empty_server.py").write_text("x = 1\n", encoding="utf-8")

    run = _air(tmp_path, "migrate", "empty_server.py", "--out", "defs")

    assert run.returncode == 1
    assert "AirServer" in run.stderr
    assert "MCPServer" in run.stderr
    assert "FastMCP" in run.stderr
    assert "Traceback" not in run.stderr
    assert not (tmp_path / "defs").exists()


def test_air_check_pairs_an_mcpserver_project_with_its_migrated_definitions(
    migrated: Migrated, tmp_path: Path
) -> None:
    shutil.copytree(migrated[0], tmp_path, dirs_exist_ok=True)  # its server.py, migrated
    assert migrated[1].returncode == 0

    drafts = _air(tmp_path, "check")  # finds ./server.py: server mode on an MCPServer

    assert drafts.returncode == 1
    assert "AirServer objects" not in drafts.stdout
    assert "placeholder text 'TODO'" in drafts.stdout
    assert drafts.stdout.rstrip().endswith(
        "2 definition(s) checked in server.py; 2 draft(s), register: false: add_note, search_notes"
    )

    (tmp_path / "tool-definitions" / "general" / "add_note.yml").unlink()
    extra = tmp_path / "tool-definitions" / "general" / "get_gone.yml"
    extra.write_text("name: get_gone\n", encoding="utf-8")
    paired = _air(tmp_path, "check")
    assert "server.py: add_note: " in paired.stdout  # a tool without a definition
    as_json = _air(tmp_path, "check", "--format", "json").stdout  # one run says both
    assert "missing-definition" in as_json
    assert "unused-definition" in as_json
