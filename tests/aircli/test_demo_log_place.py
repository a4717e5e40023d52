"""Where ``air demo`` puts its server's log: beside the data directory, and for a store that
has none (memory, SQLite) where ``.air/data`` would be (real ``air demo`` processes)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from tests.air_process import run_air

pytestmark = pytest.mark.slow  # real air demo processes: make test, not test-fast


def _demo(store: str, cwd: Path | str, home: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("XDG_DATA_HOME",)}
    env["HOME"] = str(home)
    argv = ("demo", "--no-dashboard", "--calls", "1", "--history", "0", "--store", store)
    return run_air(*argv, cwd=cwd, env=env)


@pytest.mark.parametrize("kind", ["memory", "sqlite", "file"])
def test_the_demo_servers_log_goes_under_the_working_directorys_dot_air_for_every_store(
    kind: str, tmp_path: Path
) -> None:
    work, home = tmp_path / "work", tmp_path / "home"
    work.mkdir()
    store = {
        "memory": "memory://",
        "sqlite": f"sqlite:///{tmp_path / 'air.db'}",
        "file": "file://.air/data",
    }[kind]

    done = _demo(store, work, home)

    assert done.returncode == 0, done.stderr
    log = work / ".air" / "demo-server.log"
    assert f"air demo: the server's log goes to {log}" in done.stderr
    assert log.is_file()
    # nothing in the per-user directory but the locations index (a file store is registered)
    files = sorted(p.name for p in home.rglob("*") if p.is_file()) if home.exists() else []
    assert files == ([] if kind != "file" else ["locations.json"])


def test_a_file_store_elsewhere_keeps_the_log_beside_its_data_directory(tmp_path: Path) -> None:
    work, home = tmp_path / "work", tmp_path / "home"
    work.mkdir()

    done = _demo(f"file://{tmp_path / 'kept' / 'data'}", work, home)

    assert done.returncode == 0, done.stderr
    assert (tmp_path / "kept" / "demo-server.log").is_file()
    assert list(work.iterdir()) == []


def test_in_the_root_directory_a_memory_stores_log_goes_to_the_per_user_directory(
    tmp_path: Path,
) -> None:
    home = tmp_path / "home"

    done = _demo("memory://", "/", home)

    assert done.returncode == 0, done.stderr
    log = home / ".local" / "share" / "air" / "demo-server.log"
    assert f"air demo: the server's log goes to {log}" in done.stderr
    assert log.is_file()
