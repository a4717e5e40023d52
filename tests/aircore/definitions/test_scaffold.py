from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from aircli import main
from aircli.scaffold import ScaffoldError, scaffold_tool


def test_scaffold_output_passes_the_gate_immediately(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["scaffold", "tool", "search_notes", "--category", "notes", "--read-only",
                 "--dir", str(tmp_path)]) == 0  # fmt: skip
    assert main(["scaffold", "tool", "delete_note", "--category", "notes", "--destructive",
                 "--dir", str(tmp_path)]) == 0  # fmt: skip
    assert main(["scaffold", "tool", "tag_note", "--dir", str(tmp_path)]) == 0
    capsys.readouterr()

    assert main(["check", str(tmp_path / "tool-definitions")]) == 0
    assert "ok, 3 definition(s) checked" in capsys.readouterr().out


def test_scaffold_sets_hints_and_wires_the_server_module(tmp_path: Path) -> None:
    scaffold_tool("search_notes", project=tmp_path, category="notes", read_only=True)
    result = scaffold_tool("delete_note", project=tmp_path, category="notes", destructive=True)

    search = yaml.safe_load((tmp_path / "tool-definitions/notes/search_notes.yml").read_text())
    delete = yaml.safe_load((tmp_path / "tool-definitions/notes/delete_note.yml").read_text())
    assert (search["read_only"], search["destructive"], search["idempotent"]) == (True, False, True)
    assert (delete["read_only"], delete["destructive"], delete["idempotent"]) == (
        False,
        True,
        False,
    )
    assert search["category_key"] == "notes"
    assert result.updated == (tmp_path / "server.py",)
    assert set(result.created) == {
        tmp_path / "tool-definitions/notes/delete_note.yml",
        tmp_path / "tools/delete_note.py",
        tmp_path / "tests/test_delete_note.py",
    }
    server = (tmp_path / "server.py").read_text()
    assert "from tools.search_notes import search_notes\n" in server
    assert "        delete_note,\n" in server
    compile(server, "server.py", "exec")
    compile((tmp_path / "tools/delete_note.py").read_text(), "delete_note.py", "exec")
    compile((tmp_path / "tests/test_delete_note.py").read_text(), "test.py", "exec")


@pytest.mark.parametrize(
    ("name", "kwargs", "message"),
    [
        ("Bad-Name", {}, "must match"),
        ("ok_name", {"category": "Not OK"}, "category"),
        ("ok_name", {"read_only": True, "destructive": True}, "both"),
    ],
)
def test_scaffold_rejects_bad_input_and_writes_nothing(
    tmp_path: Path, name: str, kwargs: dict[str, object], message: str
) -> None:
    with pytest.raises(ScaffoldError, match=message):
        scaffold_tool(name, project=tmp_path, **kwargs)  # type: ignore[arg-type]
    assert list(tmp_path.iterdir()) == []


def test_scaffold_refuses_to_overwrite_an_existing_tool(tmp_path: Path) -> None:
    scaffold_tool("search_notes", project=tmp_path)
    before = (tmp_path / "server.py").read_text()
    with pytest.raises(ScaffoldError, match="already exists"):
        scaffold_tool("search_notes", project=tmp_path, category="other")
    assert (tmp_path / "server.py").read_text() == before


def test_scaffold_needs_markers_in_an_existing_server_module(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "server.py").write_text("server = None\n")
    assert main(["scaffold", "tool", "search_notes", "--dir", str(tmp_path)]) == 2
    assert "# air scaffold: imports" in capsys.readouterr().err
    assert not (tmp_path / "tool-definitions").exists()


def test_scaffold_output_is_lint_clean_and_formatted(tmp_path: Path) -> None:
    import subprocess
    import sys

    scaffold_tool("search_notes", project=tmp_path, read_only=True)
    scaffold_tool("delete_note", project=tmp_path, destructive=True, category="notes")
    ruff = [sys.executable, "-m", "ruff"]
    lint = [*ruff, "check", "--isolated", "--select", "E,F,W,I,B,UP,SIM,RUF", "."]
    fmt = [*ruff, "format", "--isolated", "--check", "."]
    for cmd in (lint, fmt):  # run in the project, as its owner would
        run = subprocess.run(cmd, capture_output=True, text=True, check=False, cwd=tmp_path)
        assert run.returncode == 0, run.stdout + run.stderr
