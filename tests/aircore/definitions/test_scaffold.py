"""``air scaffold tool``: the standard's inputs by flags or on a terminal, the files it writes,
hints from the verb, and the check that runs right after."""

from __future__ import annotations

import json
import os
import pty
import re
import select
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
import yaml

from aircli import main
from aircli._scaffold_inputs import Field, ScaffoldInputs, parse_field
from aircli.scaffold import ScaffoldError, scaffold_tool

ROOT = Path(__file__).resolve().parents[3]

FULL_KOREAN = [
    "smp_exchange_inquiry",
    "--display-name", "환율 조회",
    "--display-description", "통화별 기준 환율을 조회합니다.",
    "--function", "기준일의 통화별 매매기준율을 조회해 돌려준다.",
    "--when-to-use", "사용자가 오늘이나 특정 날짜의 환율을 물을 때 사용한다.",
    "--when-not-to-use", "없음. 이 서버에 비슷한 도구가 없다.",
    "--io-limits", "통화 코드는 ISO 4217 세 글자이며 결과는 통화 하나당 한 건이다.",
    "--example", "오늘 달러 환율 알려줘",
    "--example", "지난주 금요일 엔화 매매기준율이 얼마였어?",
    "--example", "유로 송금 환율 좀 조회해 줘",
    "--tag", "환율", "--owner", "외환시스템팀", "--legacy-id", "IF-SMP-0012",
    "--param", "currency:string(3..3):ISO 4217 통화 코드 (예: USD)",
    "--param", "date:string?:기준일, YYYY-MM-DD",
    "--output", "rate:number:매매기준율",
    "--output", "currency:string:통화 코드",
]  # fmt: skip


def _scaffold(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run(
        [sys.executable, "-m", "aircli", "scaffold", "tool", *args, "--no-input"],
        cwd=tmp_path, capture_output=True, text=True, env=env, timeout=120, check=False,
    )  # fmt: skip


def test_scaffold_without_inputs_lists_every_placeholder_left_to_fill(tmp_path: Path) -> None:
    run = _scaffold(tmp_path, "smp_exchange_inquiry")
    assert run.returncode == 0, run.stderr
    assert "left to fill (10):" in run.stdout
    for field in ("description.function", "description.when_not_to_use", "example_queries[2]",
                  "parameters_schema.properties.query.description",
                  "outputSchema (explicit on the tool).properties.result.description"):  # fmt: skip
        assert f": {field}: placeholder text 'TODO'" in run.stdout, field
    assert "hints (inferred from 'inquiry'): read_only=True destructive=False" in run.stdout
    assert main(["check", str(tmp_path / "tool-definitions")]) == 1


def test_scaffold_with_every_input_passes_the_gate_at_once(tmp_path: Path) -> None:
    run = _scaffold(tmp_path, *FULL_KOREAN)
    assert run.returncode == 0, run.stderr
    assert "air check: ok; smp_exchange_inquiry is a draft (register: false)" in run.stdout

    definition = yaml.safe_load(
        (tmp_path / "tool-definitions/smp/smp_exchange_inquiry.yml").read_text(encoding="utf-8")
    )
    assert definition["category_key"] == "smp"
    assert definition["description"]["function"].startswith("기준일의")
    assert definition["legacy_interface_id"] == "IF-SMP-0012"
    assert (definition["owner_org"], definition["register"]) == ("외환시스템팀", False)
    assert definition["parameters_schema"]["required"] == ["currency"]
    currency = definition["parameters_schema"]["properties"]["currency"]
    assert (currency["minLength"], currency["maxLength"]) == (3, 3)
    schema = json.loads((tmp_path / "schemas/smp_exchange_inquiry.output.json").read_text())
    assert schema["required"] == ["rate", "currency"]
    mock = json.loads((tmp_path / "mocks/smp_exchange_inquiry.json").read_text())
    assert mock == {"rate": 1.5, "currency": "example"}


def test_base_name_is_prefixed_with_the_category(tmp_path: Path) -> None:
    run = _scaffold(tmp_path, "--base", "comcode_lookup", "--category", "cmm", "--no-check")
    assert run.returncode == 0, run.stderr
    assert (tmp_path / "tool-definitions/cmm/cmm_comcode_lookup.yml").is_file()
    assert _scaffold(tmp_path, "--base", "x_y").returncode == 2


@pytest.mark.parametrize(
    ("name", "flags", "hints"),
    [
        ("notes_memo_search", {}, (True, False, True)),
        ("notes_memo_delete", {}, (False, True, False)),
        ("notes_memo_frobnicate", {}, (False, True, False)),
        ("notes_memo_delete", {"read_only": True}, (True, False, True)),
        ("notes_memo_search", {"destructive": True}, (False, True, False)),
        ("notes_memo_save", {"idempotent": True}, (False, True, True)),
    ],
)
def test_hints_come_from_the_verb_unless_given(
    tmp_path: Path, name: str, flags: dict[str, bool], hints: tuple[bool, bool, bool]
) -> None:
    scaffold_tool(ScaffoldInputs(name=name, category="notes", **flags), project=tmp_path)
    data = yaml.safe_load((tmp_path / f"tool-definitions/notes/{name}.yml").read_text())
    assert (data["read_only"], data["destructive"], data["idempotent"]) == hints


def test_scaffold_wires_the_server_module(tmp_path: Path) -> None:
    scaffold_tool(ScaffoldInputs(name="notes_memo_search", category="notes"), project=tmp_path)
    result = scaffold_tool(
        ScaffoldInputs(name="notes_memo_delete", category="notes"), project=tmp_path
    )
    assert result.updated == (tmp_path / "server.py",)
    assert set(result.created) == {
        tmp_path / "tool-definitions/notes/notes_memo_delete.yml",
        tmp_path / "tools/notes_memo_delete.py",
        tmp_path / "schemas/notes_memo_delete.output.json",
        tmp_path / "mocks/notes_memo_delete.json",
        tmp_path / "tests/test_notes_memo_delete.py",
    }
    server = (tmp_path / "server.py").read_text()
    assert "from tools.notes_memo_search import notes_memo_search\n" in server
    assert "        notes_memo_delete,\n" in server
    compile(server, "server.py", "exec")
    compile((tmp_path / "tools/notes_memo_delete.py").read_text(), "handler.py", "exec")
    compile((tmp_path / "tests/test_notes_memo_delete.py").read_text(), "test.py", "exec")


@pytest.mark.parametrize(
    ("inputs", "message"),
    [
        (ScaffoldInputs(name="Bad-Name", category="general"), "must match"),
        (ScaffoldInputs(name="ok_name", category="Not OK"), "category"),
        (ScaffoldInputs(name="ok_name", category="general", read_only=True, destructive=True),
         "both"),
    ],
)  # fmt: skip
def test_scaffold_rejects_bad_input_and_writes_nothing(
    tmp_path: Path, inputs: ScaffoldInputs, message: str
) -> None:
    with pytest.raises(ScaffoldError, match=message):
        scaffold_tool(inputs, project=tmp_path)
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(
    "spec", ["phone", "phone:string", "phone:str:Number", "9phone:string:Number", "p:string: "]
)
def test_bad_field_specs_are_refused(spec: str) -> None:
    with pytest.raises(ValueError, match=r"NAME:TYPE|identifier|type must"):
        parse_field(spec)


def test_field_specs_parse_arrays_optionals_and_colons() -> None:
    field = parse_field("at:string[]?:시각 목록: HH:MM")
    assert field == Field("at", "string", "시각 목록: HH:MM", array=True, optional=True)
    assert field.schema() == {"type": "array", "items": {"type": "string"},
                              "description": "시각 목록: HH:MM"}  # fmt: skip


@pytest.mark.parametrize(
    ("spec", "schema", "example"),
    [
        ("unit:string(km|mi):단위", {"type": "string", "enum": ["km", "mi"]}, "km"),
        ("limit:integer(5..50)?:최대 건수", {"type": "integer", "minimum": 5, "maximum": 50}, 5),
        ("rate:number(..0.5):비율", {"type": "number", "maximum": 0.5}, 0.5),
        ("code:string(3..3):통화 코드", {"type": "string", "minLength": 3, "maxLength": 3}, "exa"),
        ("pin:string(8..):PIN", {"type": "string", "minLength": 8}, "examplex"),
    ],
)
def test_field_constraints_reach_the_schema_and_the_mock(
    spec: str, schema: dict[str, Any], example: Any
) -> None:
    field = parse_field(spec)
    assert field.schema() == {**schema, "description": field.description}
    assert field.example() == example


@pytest.mark.parametrize(
    "spec", ["b:boolean(1..2):x", "n:integer(5..1):x", "n:integer(a|b):x", "s:string(-1..):x",
             "n:number(nan..):x", "s:string(a||b):x"],
)  # fmt: skip
def test_bad_constraints_are_refused(spec: str) -> None:
    with pytest.raises(ValueError, match=re.escape(repr(spec))):
        parse_field(spec)


def test_bad_param_flag_is_a_usage_error(tmp_path: Path) -> None:
    run = _scaffold(tmp_path, "notes_memo_search", "--param", "q")
    assert run.returncode == 2
    assert "NAME:TYPE:DESCRIPTION" in run.stderr
    assert not (tmp_path / "tool-definitions").exists()


def test_scaffold_refuses_to_overwrite_an_existing_tool(tmp_path: Path) -> None:
    scaffold_tool(ScaffoldInputs(name="notes_memo_search", category="notes"), project=tmp_path)
    before = (tmp_path / "server.py").read_text()
    with pytest.raises(ScaffoldError, match="already exists"):
        scaffold_tool(ScaffoldInputs(name="notes_memo_search", category="x"), project=tmp_path)
    assert (tmp_path / "server.py").read_text() == before


def test_scaffold_needs_markers_in_an_existing_server_module(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "server.py").write_text("server = None\n")
    args = ["scaffold", "tool", "notes_memo_search", "--dir", str(tmp_path), "--no-input"]
    assert main(args) == 2
    assert "# air scaffold: imports" in capsys.readouterr().err
    assert not (tmp_path / "tool-definitions").exists()


def test_scaffold_output_is_lint_clean_and_formatted(tmp_path: Path) -> None:
    scaffold_tool(ScaffoldInputs(name="notes_memo_search", category="notes"), project=tmp_path)
    scaffold_tool(
        ScaffoldInputs(name="notes_memo_delete", category="notes",
                       params=(parse_field("memo_id:string:메모 ID"),)),
        project=tmp_path,
    )  # fmt: skip
    ruff = [sys.executable, "-m", "ruff"]
    lint = [*ruff, "check", "--isolated", "--select", "E,F,W,I,B,UP,SIM,RUF", "."]
    fmt = [*ruff, "format", "--isolated", "--check", "."]
    for cmd in (lint, fmt):  # run in the project, as its owner would
        run = subprocess.run(cmd, capture_output=True, text=True, check=False, cwd=tmp_path)
        assert run.returncode == 0, run.stdout + run.stderr


def _read_until(fd: int, needle: bytes, deadline: float) -> bytes:
    seen = b""
    while needle not in seen:
        left = deadline - time.monotonic()
        assert left > 0, seen.decode(errors="replace")
        ready, _, _ = select.select([fd], [], [], left)
        if ready:
            try:
                chunk = os.read(fd, 4096)
            except OSError:  # the child closed the terminal
                break
            if not chunk:
                break
            seen += chunk
    return seen


def test_missing_inputs_are_asked_for_on_a_terminal(tmp_path: Path) -> None:
    answers: list[tuple[bytes, str]] = [
        (b"Display name", "환율 조회"),
        (b"catalogue", "통화별 기준 환율을 조회합니다."),
        (b"What it does", "기준일의 통화별 매매기준율을 조회해 돌려준다."),
        (b"When to use", "사용자가 오늘이나 특정 날짜의 환율을 물을 때 사용한다."),
        (b"When not to use", "없음"),
        (b"Input limits", "통화 코드는 ISO 4217 세 글자이며 결과는 한 건이다."),
        (b"request 1", "오늘 달러 환율 알려줘"),
        (b"request 2", "지난주 금요일 엔화 매매기준율이 얼마였어?"),
        (b"request 3", "유로 송금 환율 좀 조회해 줘"),
        (b"request 4", ""),
        (b"Input field", "currency:string:ISO 4217 통화 코드"),
        (b"Input field", ""),
        (b"Output field", "rate:number:매매기준율"),
        (b"Output field", ""),
    ]
    controller, terminal = pty.openpty()
    env = {**os.environ, "PYTHONPATH": str(ROOT), "PYTHONIOENCODING": "utf-8"}
    proc = subprocess.Popen(
        [sys.executable, "-m", "aircli", "scaffold", "tool", "smp_exchange_inquiry"],
        stdin=terminal, stdout=terminal, stderr=terminal, cwd=tmp_path, env=env,
    )  # fmt: skip
    os.close(terminal)
    deadline = time.monotonic() + 60
    try:
        for prompt, answer in answers:
            _read_until(controller, prompt, deadline)
            os.write(controller, answer.encode() + b"\n")
        out = _read_until(controller, b"air check: ok", deadline)
        assert proc.wait(timeout=60) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
        os.close(controller)
    assert b"draft (register: false)" in out
    data: dict[str, Any] = yaml.safe_load(
        (tmp_path / "tool-definitions/smp/smp_exchange_inquiry.yml").read_text(encoding="utf-8")
    )
    assert data["example_queries"][2] == "유로 송금 환율 좀 조회해 줘"
    assert data["description"]["when_not_to_use"] == "없음"
    assert list(data["parameters_schema"]["properties"]) == ["currency"]
