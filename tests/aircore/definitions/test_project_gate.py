"""``air check`` without PATH finds the project's server; a real ``python -m build`` of a small
project fails on a violation through the ``air-check`` hatch build hook."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import orjson
import pytest
import yaml

from aircli.check import check_project
from tests.aircore.definitions.fixtures import clean_definition, write_definition
from tests.aircore.definitions.korean import exchange_inquiry

ROOT = Path(__file__).resolve().parents[3]

SERVER = """\
from pathlib import Path
from aircore import define_server, define_tool

def handle(params):
    return {{"rate": 1.0}}

server = define_server(
    name="project-gate",
    tools=[define_tool(n, handler=handle) for n in {names!r}],
    {definitions}
)
"""


def _package(root: Path, names: list[str], *, own_definitions: bool = True) -> Path:
    """A package ``gate_pkg_<dir>`` with a server; definitions inside the package (shipped)."""
    package = root / f"gate_pkg_{root.name}"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("")
    definitions = (
        'definitions=Path(__file__).parent / "tool-definitions",' if own_definitions else ""
    )
    (package / "server.py").write_text(SERVER.format(names=names, definitions=definitions))
    return package


def _definition(directory: Path, stem: str | None = None, **changes: object) -> None:
    data = exchange_inquiry()
    data["description"]["when_not_to_use"] = "없음. 이 서버에 비슷한 도구가 없다."
    data.update(changes)
    write_definition(directory, data, category="smp", stem=stem, relaxed=False)


def _air(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run(
        [sys.executable, "-m", "aircli", *args],
        cwd=cwd, capture_output=True, text=True, env=env, timeout=120, check=False,
    )  # fmt: skip


def test_check_without_path_runs_server_mode_on_the_pyproject_server(tmp_path: Path) -> None:
    tools = ["smp_exchange_inquiry", "smp_exchange_send", "smp_exchange_cancel"]
    package = _package(tmp_path, tools)
    _definition(package / "tool-definitions")
    _definition(package / "tool-definitions", "smp_exchange_send", name="smp_exchange_submit")
    _definition(package / "tool-definitions", name="smp_exchange_history")
    (tmp_path / "pyproject.toml").write_text(
        f'[tool.air]\nserver = "{package.name}.server:server"\n', encoding="utf-8"
    )

    run = _air(tmp_path, "check", "--format", "json")

    assert run.returncode == 1, run.stdout + run.stderr
    body = orjson.loads(run.stdout)
    assert (body["mode"], body["target"]) == ("server", f"{package.name}.server:server")
    got = {(p["rule"], p["field"]) for p in body["problems"]}
    assert got == {
        ("missing-definition", "smp_exchange_cancel"),
        ("unused-definition", "-"),  # smp_exchange_history.yml
        ("name-mismatch", "name"),  # smp_exchange_send.yml names smp_exchange_submit
    }


def test_pyproject_definitions_pair_with_a_server_that_names_none(tmp_path: Path) -> None:
    package = _package(tmp_path, ["smp_exchange_inquiry"], own_definitions=False)
    _definition(tmp_path / "defs")
    (tmp_path / "pyproject.toml").write_text(
        f'[tool.air]\nserver = "{package.name}.server:server"\ndefinitions = "defs"\n'
    )
    run = _air(tmp_path, "check")
    assert run.returncode == 0, run.stdout + run.stderr
    assert f"1 definition(s) checked in {package.name}.server:server" in run.stdout
    (tmp_path / "pyproject.toml").write_text(f'[tool.air]\nserver = "{package.name}.server"\n')
    run = _air(tmp_path, "check")  # without the setting: ./tool-definitions, which is missing
    assert run.returncode == 1
    assert "tool-definitions: -: definitions directory not found" in run.stdout


def test_server_py_is_found_when_there_is_no_pyproject_setting(tmp_path: Path) -> None:
    (tmp_path / "server.py").write_text(
        SERVER.format(names=["smp_exchange_inquiry"],
                      definitions='definitions=Path(__file__).parent / "tool-definitions",')
    )  # fmt: skip
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "x"\n')
    _definition(tmp_path / "tool-definitions")
    _definition(tmp_path / "tool-definitions", name="smp_exchange_unused")
    run = _air(tmp_path, "check")
    assert run.returncode == 1
    assert "no registered tool uses this definition" in run.stdout
    assert "checked in" in run.stdout
    assert "server.py" in run.stdout.splitlines()[-1]


@pytest.mark.parametrize(
    ("text", "field"),
    [("[tool.air]\nserver = 3\n", "tool.air.server"),
     ("[tool.air]\nserve = 'x'\n", "tool.air.serve"),
     ("[tool.air\n", "-")],
)  # fmt: skip
def test_bad_tool_air_settings_are_problems(tmp_path: Path, text: str, field: str) -> None:
    (tmp_path / "pyproject.toml").write_text(text)
    report = check_project(tmp_path)
    assert not report.ok
    assert report.problems[0].field == field
    assert report.problems[0].rule == "config"


def test_drafts_are_reported_and_fail_with_no_drafts(tmp_path: Path) -> None:
    defs = tmp_path / "tool-definitions"
    draft = clean_definition("search_documents")
    draft["register"] = False
    write_definition(defs, draft)
    run = _air(tmp_path, "check")
    assert run.returncode == 0, run.stdout
    assert "1 draft(s), register: false: search_documents" in run.stdout
    strict = _air(tmp_path, "check", "--no-drafts", "--format", "json")
    assert strict.returncode == 1
    body = orjson.loads(strict.stdout)
    assert body["drafts"] == ["search_documents"]
    assert [(p["rule"], p["field"]) for p in body["problems"]] == [("draft", "search_documents")]


def _build(project: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run(
        [sys.executable, "-m", "build", "--no-isolation", "--wheel", "--outdir", "dist"],
        cwd=project, capture_output=True, text=True, env=env, timeout=300, check=False,
    )  # fmt: skip


@pytest.mark.slow
def test_python_m_build_fails_on_a_violation_through_the_hatch_hook(tmp_path: Path) -> None:
    package = _package(tmp_path, ["smp_exchange_inquiry"])
    _definition(package / "tool-definitions")
    (tmp_path / "pyproject.toml").write_text(
        '[build-system]\nrequires = ["hatchling>=1.25", "air-mcp"]\n'
        'build-backend = "hatchling.build"\n\n'
        f'[project]\nname = "{package.name.replace("_", "-")}"\nversion = "0.1.0"\n\n'
        "[tool.hatch.build.hooks.air-check]\n\n"
        f'[tool.air]\nserver = "{package.name}.server:server"\n',
        encoding="utf-8",
    )

    clean = _build(tmp_path)
    assert clean.returncode == 0, clean.stdout + clean.stderr
    assert "air check: ok, 1 definition(s)" in clean.stdout + clean.stderr
    (wheel,) = (tmp_path / "dist").glob("*.whl")
    wheel.unlink()

    path = package / "tool-definitions" / "smp" / "smp_exchange_inquiry.yml"
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    data["description"]["function"] = "TODO"
    path.write_text(yaml.safe_dump(data, allow_unicode=True), encoding="utf-8")

    broken = _build(tmp_path)
    out = broken.stdout + broken.stderr
    assert broken.returncode != 0, out
    assert f"{path}: description.function: placeholder text 'TODO'" in out
    assert "the wheel build stops" in out
    assert list((tmp_path / "dist").glob("*.whl")) == []
