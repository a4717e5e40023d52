from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import orjson
import pytest

from aircli import main
from tests.aircore.definitions.fixtures import clean_definition, write_definition


def test_check_clean_directory_exits_zero(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    write_definition(tmp_path, clean_definition())
    assert main(["check", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "ok, 1 definition(s) checked" in out


def test_check_prints_file_field_problem_lines_and_a_count(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = clean_definition()
    bad["destructive"] = True
    del bad["description"]["io_limits"]
    path = write_definition(tmp_path, bad)
    write_definition(tmp_path, clean_definition("list_folders"))

    assert main(["check", str(tmp_path)]) == 1

    lines = capsys.readouterr().out.splitlines()
    assert f"{path}: description.io_limits: description part is missing" in lines
    assert f"{path}: destructive: a read_only tool cannot be destructive" in lines
    assert (
        lines[-1] == f"air check: 2 problem(s) in 1 file(s); 2 definition(s) checked in {tmp_path}"
    )


def test_check_json_format_for_machines(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = clean_definition()
    bad["example_queries"] = ["only one example query"]
    write_definition(tmp_path, bad)
    assert main(["check", str(tmp_path), "--format", "json"]) == 1
    body = orjson.loads(capsys.readouterr().out)
    assert body["ok"] is False
    assert body["mode"] == "directory"
    assert body["checked"] == 1
    assert body["problems"] == [
        {
            "file": str(tmp_path / "docs" / "search_documents.yml"),
            "field": "example_queries",
            "message": "needs 3-10 example queries, found 1",
            "rule": "examples",
        }
    ]


def test_check_without_path_uses_tool_definitions_in_the_working_directory(
    tmp_path: Path,
) -> None:
    env = {**os.environ, "PYTHONPATH": os.getcwd()}
    run = [sys.executable, "-m", "aircli", "check"]
    missing = subprocess.run(run, cwd=tmp_path, capture_output=True, text=True, env=env)
    assert missing.returncode == 1
    assert "tool-definitions: -: definitions directory not found" in missing.stdout

    write_definition(tmp_path / "tool-definitions", clean_definition())
    ok = subprocess.run(run, cwd=tmp_path, capture_output=True, text=True, env=env)
    assert ok.returncode == 0, ok.stdout + ok.stderr
    assert "1 definition(s) checked in tool-definitions" in ok.stdout


def test_manifest_command_writes_the_definitions_manifest(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    defs = tmp_path / "defs"
    write_definition(defs, clean_definition())
    out = tmp_path / "build" / "manifest.json"
    assert main(["manifest", str(defs), "--out", str(out)]) == 0
    manifest = orjson.loads(out.read_bytes())
    assert [t["name"] for t in manifest["tools"]] == ["search_documents"]

    assert main(["manifest", str(defs)]) == 0
    assert orjson.loads(capsys.readouterr().out) == manifest


def test_manifest_command_refuses_definitions_that_break_the_gate(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = clean_definition()
    del bad["version"]
    write_definition(tmp_path, bad)
    assert main(["manifest", str(tmp_path)]) == 1
    assert "version: required field is missing" in capsys.readouterr().err


def _three_kinds(root: Path) -> Path:
    """A definition breaking a naming rule (default config), a content rule and a
    structural one."""
    bad = clean_definition()
    bad["description"]["when_to_use"] = "TODO"  # content: a placeholder
    bad["destructive"] = True  # structure: a read_only tool cannot be destructive
    return write_definition(root, bad, relaxed=False)  # default naming: category_action_object


def test_check_orders_problems_by_what_matters_and_says_how_to_adopt_naming(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _three_kinds(tmp_path)
    assert main(["check", str(tmp_path), "--format", "json"]) == 1
    rules = [p["rule"] for p in orjson.loads(capsys.readouterr().out)["problems"]]
    assert "name-structure" in rules
    assert "placeholder" in rules
    assert rules[0] == "hints"  # structure first
    assert rules.index("placeholder") < rules.index("name-structure")  # naming last
    assert main(["check", str(tmp_path)]) == 1
    lines = capsys.readouterr().out.splitlines()
    (adopt,) = [line for line in lines if line.startswith("naming: adopt")]
    assert "--profile metering-only" in adopt
    (naming,) = [i for i, line in enumerate(lines) if ": name: 'search_documents' must" in line]
    assert naming < lines.index(adopt) == len(lines) - 2  # after every problem, before the count


def test_metering_only_profile_fails_only_on_what_breaks_the_definitions(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _three_kinds(tmp_path)
    assert main(["check", str(tmp_path), "--profile", "metering-only", "--format", "json"]) == 1
    body = orjson.loads(capsys.readouterr().out)
    assert [p["rule"] for p in body["problems"]] == ["hints"]
    assert {"placeholder", "name-structure"} <= {w["rule"] for w in body["warnings"]}

    fixed = path.read_text(encoding="utf-8").replace("destructive: true", "destructive: false")
    path.write_text(fixed, encoding="utf-8")
    assert main(["check", str(tmp_path), "--profile", "metering-only"]) == 0
    out = capsys.readouterr().out
    assert "warning: " in out
    assert "air check: ok (" in out
    assert main(["check", str(tmp_path)]) == 1  # the full gate still lists them
