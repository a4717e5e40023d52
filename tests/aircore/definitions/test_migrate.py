"""``air migrate``: drafts from an existing server's own metadata, with the standard's
conservative defaults, never overwriting a file; the gate reports them as drafts."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from aircli import main
from aircli.check import check_directory
from aircore.definitions import load_definitions, render_tool
from tests.aircore.conftest import DEMO


def _load(path: Path) -> dict[str, object]:
    data: dict[str, object] = yaml.safe_load(path.read_text(encoding="utf-8"))
    return data


def test_migrating_the_demo_server_writes_drafts_the_gate_reports_as_drafts(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "drafts"
    assert main(["migrate", DEMO, "--out", str(out)]) == 0
    printed = capsys.readouterr().out

    files = sorted(out.rglob("*.yml"))
    names = sorted(p.stem for p in files)
    assert len(names) == 15
    assert "air migrate: 15 draft(s) written, 0 kept" in printed
    for path in files:
        data = _load(path)
        assert data["register"] is False, path
        assert data["owner_org"] == "MCP_TOOL"
        assert data["description"]["when_not_to_use"] == "None"  # type: ignore[index]  # English
        assert path.parent.name == data["category_key"]

    report = check_directory(out)
    assert not report.ok  # drafts are not clean: what nobody wrote yet stays TODO
    assert report.drafts == tuple(names)
    assert {p.rule for p in report.problems} >= {"placeholder"}
    assert "15 draft(s), register: false" in printed


def test_drafts_take_what_the_source_says(tmp_path: Path) -> None:
    assert main(["migrate", DEMO, "--out", str(tmp_path)]) == 0
    delete = _load(tmp_path / "notes" / "delete_note.yml")
    assert (delete["read_only"], delete["destructive"], delete["idempotent"]) == (
        False, True, True,  # the tool's own annotations
    )  # fmt: skip
    assert delete["display_name"] == "Delete note"
    assert delete["description"]["function"] == "Delete a note permanently."  # type: ignore[index]
    assert delete["layer"] == "L5"
    save = _load(tmp_path / "notes" / "save_note.yml")  # no annotations: from the verb
    assert (save["read_only"], save["destructive"], save["idempotent"]) == (False, True, False)
    user = _load(tmp_path / "general" / "get_user.yml")
    assert user["output_schema"]["properties"]["email"] == {"type": "string"}  # type: ignore[index]
    schema = user["parameters_schema"]
    assert schema["additionalProperties"] is False  # type: ignore[index]
    assert schema["properties"]["user_id"]["description"] == "u1 or u2"  # type: ignore[index]
    greet = _load(tmp_path / "general" / "greet.yml")  # a decorator tool: described by hints
    assert greet["parameters_schema"]["properties"]["name"]["description"].startswith("TODO")  # type: ignore[index]


def test_migration_never_overwrites_a_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    mine = tmp_path / "legacy" / "save_note.yml"
    mine.parent.mkdir(parents=True)
    mine.write_text("# the team's own work in progress\nname: save_note\n", encoding="utf-8")

    assert main(["migrate", DEMO, "--out", str(tmp_path)]) == 0
    assert mine.read_text(encoding="utf-8").startswith("# the team's own work in progress")
    assert not (tmp_path / "notes" / "save_note.yml").exists()
    assert f"kept {mine} (exists; not overwritten)" in capsys.readouterr().out

    before = {p: p.read_bytes() for p in tmp_path.rglob("*.yml")}
    assert main(["migrate", DEMO, "--out", str(tmp_path)]) == 0
    assert "0 draft(s) written, 15 kept" in capsys.readouterr().out
    assert {p: p.read_bytes() for p in tmp_path.rglob("*.yml")} == before


def test_a_filled_draft_passes_and_register_false_reaches_meta(tmp_path: Path) -> None:
    assert main(["migrate", DEMO, "--out", str(tmp_path / "all")]) == 0
    filled = _load(tmp_path / "all" / "general" / "ping.yml")
    filled["description"] = {
        "function": "Health check; answers the constant text pong.",
        "when_to_use": "A client wants to know whether the server responds.",
        "when_not_to_use": "없음",
        "io_limits": "Takes no input; returns the single word pong.",
    }
    filled["display_description"] = "Health check that answers pong."
    filled["example_queries"] = ["is the server up?", "check that you respond", "are you alive?"]
    one = tmp_path / "one"
    (one / "general").mkdir(parents=True)
    (one / "general" / "ping.yml").write_text(yaml.safe_dump(filled, allow_unicode=True))
    (one / "air-check.yml").write_text("name_structure: action_object\n")

    report = check_directory(one)
    assert report.ok, report.problems
    assert report.drafts == ("ping",)
    tool = render_tool(load_definitions(one)["ping"])
    assert tool["_meta"]["register"] is False
    assert tool["_meta"]["ownerOrg"] == "MCP_TOOL"


def test_an_unloadable_server_is_an_error_and_writes_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    broken = tmp_path / "broken_migrate_srv.py"
    broken.write_text("raise RuntimeError('boom at import')\n")
    assert main(["migrate", str(broken), "--out", str(tmp_path / "out")]) == 1
    assert "boom at import" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()
