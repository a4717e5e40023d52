"""air installs and runs outside a checkout: the wheel (and the sdist) carry the demo server, its
definitions and the dashboard's assets; in a fresh venv, from a directory outside the checkout,
``air demo``, ``air meter report``, ``air dashboard`` and ``air serve`` work as a pip user runs
them."""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
import tarfile
import zipfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import httpx
import orjson
import pytest
from mcp.client import Client
from mcp.client.stdio import StdioServerParameters

from tests.e2e.docblocks import readme_install_commands

# Building the wheel and pip-installing it with its dependencies (from PyPI) takes far longer
# than the suite's default 120 s limit on a loaded 2-core machine: the fixtures run inside the
# first test's limit.
pytestmark = [pytest.mark.slow, pytest.mark.timeout(1200)]

ROOT = Path(__file__).resolve().parents[2]
INSTALL_TIMEOUT = 900.0
"""Seconds for ``pip install`` of the wheel and its dependencies (from PyPI: the test's HOME is
private, so pip starts with an empty cache)."""

# Added to the README's install commands. `--no-compile`: pip byte-compiles every .py file it
# installs (~3,900 here: ~4.5 s of each install's ~17 s of CPU) while the tests import ~1,200 of
# them in one venv and ~600 in the other; Python writes the bytecode of those on first import
# instead (into the venv: the user env drops PYTHONDONTWRITEBYTECODE), ~2 s in all. The same files
# are installed and the same code runs.
PIP_OPTIONS = ("-q", "--no-compile")

SHIPPED = (
    "aircli/demo_server.py",
    "aircli/demo_definitions/air-check.yml",
    "aircli/demo_definitions/units/convert_units.yml",
    "dashboard/assets/style.css",
    "airstore/py.typed",
)


def _run(
    argv: list[str],
    *,
    cwd: Path | str | None = None,
    env: dict[str, str] | None = None,
    timeout: float = 300,
) -> str:
    """Run ``argv`` to its end, assert it succeeded; its stdout then stderr."""
    done = subprocess.run(
        argv, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout, check=False
    )
    assert done.returncode == 0, f"{argv} failed:\n{done.stdout}\n{done.stderr}"
    return done.stdout + done.stderr


def _without_speedups_mode(env: Mapping[str, str]) -> dict[str, str]:
    """``env`` without ``AIR_SPEEDUPS``: builds and runs as a user's, whatever this shell says."""
    return {k: v for k, v in env.items() if k != "AIR_SPEEDUPS"}


def _build(target: str, out: Path) -> Path:
    """Build the wheel (with pip) or the sdist (with hatchling) of the checkout into ``out``."""
    env = _without_speedups_mode(os.environ)  # the default build
    if target == "wheel":
        cmd = [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation"]
        _run([*cmd, "-w", str(out), str(ROOT)], env=env)
    else:
        hatchling = [sys.executable, "-m", "hatchling", "build", "-t", "sdist", "-d", str(out)]
        _run(hatchling, cwd=ROOT, env=env)
    (built,) = out.glob("air_mcp-*.whl" if target == "wheel" else "air_mcp-*.tar.gz")
    return built


@dataclass(frozen=True, slots=True, kw_only=True)
class Built:
    """The checkout's wheel and sdist, each alone in its own directory (``dist/`` holds only the
    wheel, as after the README's ``pip wheel --no-deps -w dist .``)."""

    wheel: Path
    sdist: Path


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Built:
    """The wheel and the sdist, built once for every test of the module (which only read them)."""
    base = tmp_path_factory.mktemp("built")
    return Built(wheel=_build("wheel", base / "dist"), sdist=_build("sdist", base / "sdist"))


@pytest.fixture(scope="module")
def installed(
    built: Built, tmp_path_factory: pytest.TempPathFactory
) -> tuple[Path, dict[str, str]]:
    """A fresh venv with ``air-mcp[demo]`` installed from the built wheel, and a user env
    (no AIR_DATA_DIR, no PYTHONPATH, a private HOME)."""
    base = tmp_path_factory.mktemp("wheel")
    venv = base / "venv"
    _run([sys.executable, "-m", "venv", str(venv)])
    env = _user_env(base, venv)
    # the README's own command, in the directory that holds dist/ (and dist/ holds the wheel)
    (command,) = [c for c in readme_install_commands() if "--find-links dist" in c]
    holder = built.wheel.parent.parent
    _run([*shlex.split(command), *PIP_OPTIONS], cwd=holder, env=env, timeout=INSTALL_TIMEOUT)
    return venv, env


def _user_env(base: Path, venv: Path) -> dict[str, str]:
    """A user's shell with ``venv`` activated: no AIR_DATA_DIR, no PYTHONPATH, a private HOME."""
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("AIR_DATA_DIR", "PYTHONPATH", "AIR_SPEEDUPS", "PYTHONDONTWRITEBYTECODE")
    }
    env.update(HOME=str(base / "home"), VIRTUAL_ENV=str(venv))
    # pip would otherwise ask PyPI for a newer pip at every run (the private HOME keeps no record
    # of the last check); that changes nothing of what it installs
    env["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
    env["PATH"] = f"{venv / 'bin'}{os.pathsep}{env.get('PATH', '')}"
    return env


def test_the_readme_checkout_install_command_installs_air(tmp_path: Path) -> None:
    venv = tmp_path / "venv"
    _run([sys.executable, "-m", "venv", str(venv)])
    env = _user_env(tmp_path, venv)
    checkout = tmp_path / "checkout"  # a copy: the build leaves nothing in this checkout
    tracked = _run(["git", "ls-files", "-z"], cwd=ROOT).split("\0")
    for name in filter(None, tracked):
        if (ROOT / name).is_file():
            (checkout / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / name, checkout / name)
    command = readme_install_commands()[0]
    assert command == "pip install '.[demo]'"
    _run([*shlex.split(command), *PIP_OPTIONS], cwd=checkout, env=env, timeout=INSTALL_TIMEOUT)
    said = _run(["air", "demo", "--calls", "5", "--no-dashboard", "--history", "0"],
                cwd=_outside(tmp_path), env=env)  # fmt: skip
    assert "5/5 calls" in said


def test_the_built_wheel_and_sdist_pass_twine_check(built: Built) -> None:
    twine = [sys.executable, "-m", "twine", "check", "--strict"]
    said = _run([*twine, str(built.wheel), str(built.sdist)])
    assert said.count("PASSED") == 2


def _outside(tmp_path: Path) -> Path:
    work = tmp_path / "somewhere-else"
    work.mkdir()
    assert not work.resolve().is_relative_to(ROOT)
    return work


def test_the_installed_package_is_the_one_that_runs(installed: tuple[Path, dict[str, str]]) -> None:
    venv, env = installed
    show = [str(venv / "bin" / "python"), "-c", "import aircli; print(aircli.__file__)"]
    where = _run(show, env=env, cwd="/")
    assert Path(where.strip()).is_relative_to(venv)


def test_the_installed_wheel_runs_the_c_speedups_it_carries(
    installed: tuple[Path, dict[str, str]],
) -> None:
    venv, env = installed
    show = [
        str(venv / "bin" / "python"),
        "-c",
        "from airstore import _accel as a; print(a.speedups.__file__)",
    ]
    where = _run(show, env=env, cwd="/")
    assert Path(where.strip()).is_relative_to(venv)
    assert Path(where.strip()).name.startswith("_speedups.")


def test_air_demo_runs_from_a_directory_outside_the_checkout(
    installed: tuple[Path, dict[str, str]], tmp_path: Path
) -> None:
    venv, env = installed
    work = _outside(tmp_path)
    demo = [str(venv / "bin" / "air"), "demo", "--calls", "50", "--no-dashboard", "--history", "0"]
    said = _run(demo, env=env, cwd=work)
    assert "50/50 calls" in said
    assert "Traceback" not in said
    data = work / ".air" / "data"
    assert f"metering to file://{data}" in said
    assert len((data / "meter.calls.log.jsonl").read_bytes().splitlines()) == 50

    report = subprocess.run(
        [str(venv / "bin" / "air"), "meter", "report", "--since", "all", "--format", "json"],
        cwd=work, env=env, capture_output=True, text=True, timeout=120, check=True,
    )  # fmt: skip
    assert orjson.loads(report.stdout)["total_calls"] == 50

    proc = subprocess.Popen(
        [str(venv / "bin" / "air"), "dashboard", "--port", "0"],
        cwd=work, env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
    )  # fmt: skip
    try:
        assert proc.stdout is not None
        found = re.search(r"http://127\.0\.0\.1:\d+/", proc.stdout.readline())
        assert found, "the dashboard printed no URL"
        with httpx.Client(base_url=found.group(0), timeout=30) as http:
            assert http.get("/").status_code == 200
            assert "--" in http.get("/assets/style.css").text  # the packaged stylesheet
    finally:
        proc.terminate()
        proc.wait(timeout=30)
        if proc.stdout is not None:
            proc.stdout.close()


async def test_air_serve_serves_the_packaged_demo_server_from_anywhere(
    installed: tuple[Path, dict[str, str]], tmp_path: Path
) -> None:
    venv, env = installed
    params = StdioServerParameters(
        command=str(venv / "bin" / "air"),
        args=["serve", "aircli.demo_server", "--transport", "stdio", "--store", "memory://"],
        env=env,
        cwd=_outside(tmp_path),
    )
    async with Client(params) as client:
        tools = (await client.list_tools()).tools
        pong = await client.call_tool("ping", {})
    assert len(tools) == 15
    assert not pong.is_error


def test_the_sdist_carries_the_demo_and_builds_a_wheel_that_does(
    built: Built, tmp_path: Path
) -> None:
    sdist = built.sdist
    with tarfile.open(sdist) as tar:
        names = {name.split("/", 1)[1] for name in tar.getnames() if "/" in name}
    assert set(SHIPPED) <= names
    assert {"airstore/_speedups.c", "hatch_build.py"} <= names  # what compiles the speedups
    assert not [n for n in names if n.endswith(".so")]  # a checkout's own build stays out
    build = [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation"]
    env = _without_speedups_mode(os.environ)
    _run([*build, "-w", str(tmp_path / "from-sdist"), str(sdist)], env=env)
    (wheel,) = (tmp_path / "from-sdist").glob("*.whl")
    assert "-py3-none-any" not in wheel.name  # compiled here: tagged for this interpreter
    with zipfile.ZipFile(wheel) as whl:
        assert set(SHIPPED) <= set(whl.namelist())
        assert [
            n for n in whl.namelist() if n.startswith("airstore/_speedups.") and n.endswith(".so")
        ]
