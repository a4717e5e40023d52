"""The hosted CI matrix (``.github/workflows/ci.yml``), the switch that lets its macOS and
Windows jobs skip tests needing programs the runner lacks, and ``scripts/dev.py`` (the
Makefile's steps without make, for Windows)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[1]
WORKFLOW = ROOT / ".github" / "workflows" / "ci.yml"


def _jobs() -> dict[str, Any]:
    loaded: dict[Any, Any] = yaml.safe_load(WORKFLOW.read_text(encoding="utf-8"))
    jobs: dict[str, Any] = loaded["jobs"]
    return jobs


def test_the_matrix_is_three_oses_by_three_pythons() -> None:
    matrix = _jobs()["test"]["strategy"]["matrix"]
    assert matrix["os"] == ["ubuntu-latest", "macos-latest", "windows-latest"]
    assert matrix["python"] == ["3.11", "3.12", "3.13"]
    assert _jobs()["test"]["strategy"]["fail-fast"] is False


def test_each_os_runs_lint_types_and_the_suite_with_its_own_commands() -> None:
    steps = _jobs()["test"]["steps"]
    linux = " ".join(s.get("run", "") for s in steps if s.get("if") == "runner.os == 'Linux'")
    assert "make test" in linux
    others = [s for s in steps if s.get("if") in ("runner.os != 'Linux'",
                                                  "runner.os == 'macOS'",
                                                  "runner.os == 'Windows'")]  # fmt: skip
    runs = " ".join(s.get("run", "") for s in others)
    for command in ("pip install -e '.[dev]'", "ruff check", "ruff format --check", "mypy",
                    "pytest"):  # fmt: skip
        assert command in runs
    suite = next(s for s in others if "pytest" in s.get("run", ""))
    assert suite["env"] == {"AIR_TEST_ALLOW_MISSING": "1"}  # skip with the reason, not fail


SAMPLE = """
import pytest

@pytest.mark.redis
def test_needs_redis():
    raise AssertionError("ran without redis-server")

def test_plain():
    pass
"""


def _sample(tmp_path: Path, allow: bool) -> subprocess.CompletedProcess[str]:
    (tmp_path / "test_sample.py").write_text(SAMPLE)
    env = {**os.environ, "PATH": str(tmp_path)}  # no redis-server, no Chromium
    env.pop("AIR_TEST_ALLOW_MISSING", None)
    if allow:
        env["AIR_TEST_ALLOW_MISSING"] = "1"
    sample = tmp_path / "test_sample.py"
    conftest = ROOT / "tests" / "conftest.py"
    (tmp_path / "conftest.py").write_text(conftest.read_text(encoding="utf-8"))
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-rs", str(sample)],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip


def test_a_missing_program_skips_with_its_reason_only_where_allowed(tmp_path: Path) -> None:
    allowed = _sample(tmp_path, allow=True)
    assert allowed.returncode == 0, allowed.stdout
    assert "redis-server is not installed on this runner" in allowed.stdout
    assert "1 passed, 1 skipped" in allowed.stdout
    strict = _sample(tmp_path, allow=False)
    assert strict.returncode == 1
    assert "ran without redis-server" in strict.stdout


def test_the_dev_script_runs_the_makefiles_lint_step_without_make() -> None:
    done = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "dev.py"), "lint", "--no-install",
         "--venv", sys.prefix],
        cwd=ROOT, capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    assert "ruff check ." in done.stdout
    assert "ruff format --check ." in done.stdout


def test_the_dev_script_finds_the_venvs_programs_where_this_os_puts_them() -> None:
    sys.path.insert(0, str(ROOT / "scripts"))
    try:
        import dev
    finally:
        sys.path.remove(str(ROOT / "scripts"))
    venv = Path(sys.prefix)
    assert dev.venv_program(venv, "python").is_file()
    assert dev.venv_program(venv, "air").is_file()
