"""A store location that cannot be used is one clear line and exit status 2, before anything
is created (real ``air`` processes, in a fresh working directory)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from tests.air_process import run_air

SERVER = """
from aircore import define_server, define_tool

server = define_server(
    name="kept",
    tools=[define_tool("ping", handler=lambda params: "pong")],
    meter=True,
)
"""

GATEWAY = """
servers:
  - name: notes
    url: http://127.0.0.1:1/mcp
"""

COMMANDS = {
    "serve": ("serve", "server.py", "--transport", "stdio"),
    "meter report": ("meter", "report"),
    "store stats": ("store", "stats"),
    "dashboard": ("dashboard", "--port", "0"),
    "demo": ("demo", "--no-dashboard", "--calls", "1", "--history", "0"),
}
STORE_COMMANDS = {
    **COMMANDS,
    "meter slo": ("meter", "slo"),
    "store check": ("store", "check"),
    "gateway": ("gateway", "--config", "gateway.yml", "--port", "0"),
}


def _workdir(tmp_path: Path) -> Path:
    work = tmp_path / "work"
    work.mkdir()
    (work / "server.py").write_text(SERVER, encoding="utf-8")
    (work / "gateway.yml").write_text(GATEWAY, encoding="utf-8")
    return work


def _made(work: Path) -> list[str]:
    """What is in ``work`` (Python's bytecode cache of the imported server.py is not air's)."""
    return sorted(p.name for p in work.iterdir() if p.name != "__pycache__")


def _run(cwd: Path, args: tuple[str, ...], **env: str) -> subprocess.CompletedProcess[str]:
    return run_air(*args, cwd=cwd, env={**os.environ, "HOME": str(cwd.parent / "home"), **env})


@pytest.mark.parametrize("url", ["file:///tmp/air-x/u", "sqlite:///tmp/air-x/a.db", "memory://"])
@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_a_url_in_air_data_dir_is_refused_with_one_line_naming_the_variable(
    command: str, url: str, tmp_path: Path
) -> None:
    work = _workdir(tmp_path)

    done = _run(work, COMMANDS[command], AIR_DATA_DIR=url)

    assert done.returncode == 2, done.stderr
    said = done.stderr.strip().splitlines()
    assert len(said) == 1, done.stderr
    assert f"AIR_DATA_DIR={url!r} is a URL" in said[0]
    assert said[0].startswith(f"air {command}: ")
    assert _made(work) == ["gateway.yml", "server.py"]  # no junk


@pytest.mark.parametrize(
    ("store", "problem"),
    [
        ("notaurl", "store URL 'notaurl' must look like memory://"),
        ("127.0.0.1:4000/x", "store URL '127.0.0.1:4000/x' must look like memory://"),
        ("bogus://x", "unknown store scheme 'bogus'"),
    ],
)
@pytest.mark.parametrize("command", sorted(STORE_COMMANDS))
def test_a_store_that_is_not_a_store_url_is_one_line_and_exit_2_in_every_command(
    command: str, store: str, problem: str, tmp_path: Path
) -> None:
    work = _workdir(tmp_path)

    done = _run(work, (*STORE_COMMANDS[command], "--store", store))

    assert done.returncode == 2, done.stderr
    said = done.stderr.strip().splitlines()
    assert len(said) == 1, done.stderr
    assert said[0].startswith(f"air {command}: ")
    assert problem in said[0]
    assert _made(work) == ["gateway.yml", "server.py"]
