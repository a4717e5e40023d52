"""``air check`` / ``air manifest`` on server targets, the examples, and scaffold output."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import orjson
import pytest

from aircli import main
from aircli.demo_server import DEFINITIONS as DEMO_DEFINITIONS
from aircore.definitions import render_tool
from aircore.definitions.loader import load_definitions
from tests.aircore.definitions.fixtures import clean_definition, write_definition

ROOT = Path(__file__).resolve().parents[3]
EXAMPLES = ROOT / "examples"

SERVER = """\
from pathlib import Path
from aircore import define_server, define_tool

def handle(params):
    return {{"hits": []}}

server = define_server(
    name="cli-test",
    version="2.0.0",
    tools=[define_tool(n, handler=handle) for n in {names!r}],
    definitions=Path(__file__).parent / "defs",
)
"""


def _project(tmp_path: Path, names: list[str], module: str = "srv_a") -> Path:
    path = tmp_path / f"{module}.py"
    path.write_text(SERVER.format(names=names), encoding="utf-8")
    return path


def test_examples_definitions_and_demo_server_pass_the_gate(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["check", str(DEMO_DEFINITIONS)]) == 0
    assert main(["check", str(EXAMPLES / "demo_server.py")]) == 0
    out = capsys.readouterr().out
    assert out.count("air check: ok") == 2


def test_every_demo_tool_carries_its_definition() -> None:
    from aircli.serve import load_server

    server = load_server(str(EXAMPLES / "demo_server.py"))
    assert server.definitions is not None
    definitions = load_definitions(server.definitions)
    assert set(definitions) == set(server.tools)
    assert len(definitions) >= 10


def test_server_mode_reports_mismatch_missing_and_unused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    defs = tmp_path / "defs"
    write_definition(defs, clean_definition("search_documents"))
    write_definition(defs, clean_definition("find_docs"), stem="lookup_docs")
    write_definition(defs, clean_definition("left_over"))
    target = str(_project(tmp_path, ["search_documents", "lookup_docs", "send_mail"]))

    assert main(["check", target, "--format", "json"]) == 1

    body = orjson.loads(capsys.readouterr().out)
    assert body["mode"] == "server"
    got = {(p["rule"], Path(p["file"]).name, p["field"]) for p in body["problems"]}
    assert got == {
        ("name-mismatch", "lookup_docs.yml", "name"),
        ("missing-definition", "srv_a.py", "send_mail"),
        ("unused-definition", "left_over.yml", "-"),
    }


def test_server_mode_accepts_a_module_target_with_attribute(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    write_definition(tmp_path / "defs", clean_definition())
    _project(tmp_path, ["search_documents"], module="srv_mod_target")
    monkeypatch.syspath_prepend(str(tmp_path))
    assert main(["check", "srv_mod_target:server"]) == 0
    assert "ok, 1 definition(s) checked in srv_mod_target:server" in capsys.readouterr().out


def test_server_without_definitions_or_unloadable_is_a_problem(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    plain = tmp_path / "plain_srv.py"
    plain.write_text("from aircore import define_server\nserver = define_server(name='p')\n")
    broken = tmp_path / "broken_srv.py"
    broken.write_text("raise RuntimeError('boom at import')\n")

    assert main(["check", str(plain)]) == 1
    assert "define_server(definitions=...)" in capsys.readouterr().out
    assert main(["check", str(broken)]) == 1
    assert "boom at import" in capsys.readouterr().out


def test_server_manifest_renders_the_definitions_with_server_info(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = clean_definition()
    data["timeout_ms"] = 2500
    write_definition(tmp_path / "defs", data)
    target = str(_project(tmp_path, ["search_documents"], module="srv_manifest"))
    out = tmp_path / "manifest.json"

    assert main(["manifest", target, "--out", str(out)]) == 0

    manifest = orjson.loads(out.read_bytes())
    assert manifest["server"] == {"name": "cli-test", "version": "2.0.0"}
    (entry,) = manifest["tools"]
    assert entry["_meta"]["timeoutMillis"] == 2500
    assert entry["_meta"]["enabled"] is True
    assert entry == render_tool(load_definitions(tmp_path / "defs")["search_documents"])


def test_server_manifest_carries_the_server_timeout_plugin_and_enabled(tmp_path: Path) -> None:
    write_definition(tmp_path / "defs", clean_definition())
    path = _project(tmp_path, ["search_documents"], module="srv_timeout")
    text = path.read_text(encoding="utf-8").replace(
        "    version=", "    use=[timeout_plugin(1.5)],\n    version="
    )
    path.write_text("from aircore import timeout_plugin\n" + text, encoding="utf-8")
    out = tmp_path / "manifest.json"

    assert main(["manifest", str(path), "--out", str(out)]) == 0

    (entry,) = orjson.loads(out.read_bytes())["tools"]
    assert (entry["_meta"]["timeoutMillis"], entry["_meta"]["enabled"]) == (1500, True)


def test_scaffolded_project_passes_the_gate_and_its_generated_tests(tmp_path: Path) -> None:
    from tests.aircore.definitions.test_scaffold import FULL_KOREAN

    env = {**os.environ, "PYTHONPATH": str(ROOT), "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"}
    delete = ["msg_memo_delete", "--category", "msg", "--display-name", "메모 삭제",
              "--display-description", "저장된 메모를 영구히 지웁니다.",
              "--function", "메모 ID로 저장된 메모 하나를 영구히 삭제하고 결과를 알려준다.",
              "--when-to-use", "사용자가 저장해 둔 메모를 지워 달라고 할 때 사용한다.",
              "--when-not-to-use", "없음. 메모를 다루는 다른 도구가 아직 없다.",
              "--io-limits", "메모 ID는 1-64자이며 결과는 삭제 여부 한 건이다.",
              "--example", "어제 쓴 장보기 메모 지워줘", "--example", "회의 메모 3번 삭제해",
              "--example", "필요 없어진 여행 메모를 없애 줘",
              "--param", "memo_id:string:지울 메모의 ID",
              "--output", "deleted:boolean:삭제했는지 여부"]  # fmt: skip
    for args in (FULL_KOREAN, delete):
        run = subprocess.run(
            [sys.executable, "-m", "aircli", "scaffold", "tool", *args, "--no-input"],
            cwd=tmp_path, capture_output=True, text=True, env=env, timeout=120,
        )  # fmt: skip
        assert run.returncode == 0, run.stdout + run.stderr
        assert "air check: ok" in run.stdout, run.stdout

    run = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests"],
        cwd=tmp_path, capture_output=True, text=True, env=env, timeout=120,
    )  # fmt: skip
    assert run.returncode == 0, run.stdout + run.stderr
    assert "4 passed" in run.stdout
