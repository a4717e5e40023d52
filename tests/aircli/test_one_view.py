"""One machine, one view: every data directory a meter writes to is registered once in the
per-user ``locations.json``, and ``air meter report`` without ``--store`` shows the other
locations' servers, each labelled with where its data is. Nothing is merged on disk."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import orjson
import pytest

from airstore.locations_index import MAX_LOCATIONS, index_path, known_locations, register_location
from tests.air_process import air


def _user_env(tmp_path: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("AIR_DATA_DIR", "XDG_DATA_HOME")}
    env["HOME"] = str(tmp_path / "home")
    return env


def _air(env: dict[str, str], cwd: Path | str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(air(*args), cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=300, check=False)  # fmt: skip


@pytest.mark.slow  # two air demos, three reports, a dashboard: make test, not test-fast
def test_a_desktop_clients_calls_show_in_the_report_run_in_the_project(tmp_path: Path) -> None:
    env = _user_env(tmp_path)
    project = tmp_path / "project"
    project.mkdir()
    demo = ("demo", "--no-dashboard", "--history", "0", "--calls")
    assert _air(env, project, *demo, "3").returncode == 0  # the project's own .air/data
    assert _air(env, "/", *demo, "5").returncode == 0  # a client that starts servers in /
    user_data = tmp_path / "home" / ".local" / "share" / "air" / "data"
    index = json.loads((user_data.parent / "locations.json").read_text(encoding="utf-8"))
    registered = set(index["locations"])
    assert {str(user_data), str(project / ".air" / "data")} <= registered

    done = _air(env, project, "meter", "report", "--since", "all", "--format", "json")
    assert done.returncode == 0, done.stderr
    report = orjson.loads(done.stdout)
    assert report["total_calls"] == 3  # this location's, as before
    (other,) = report["other_locations"]
    assert other["data"] == f"file://{user_data}"
    assert other["total_calls"] == 5
    text = _air(env, project, "meter", "report", "--since", "all").stdout
    assert "other data locations on this machine" in text
    assert f"file://{user_data}" in text
    narrowed = _air(env, project, "meter", "report", "--since", "all", "--format", "json",
                    "--store", f"file://{project / '.air' / 'data'}")  # fmt: skip
    assert orjson.loads(narrowed.stdout)["other_locations"] == []  # --store narrows to one

    dashboard = subprocess.Popen(
        air("dashboard", "--port", "0"), cwd=project, env=env, text=True,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )  # fmt: skip
    try:
        assert dashboard.stdout is not None
        assert "http://127.0.0.1:" in dashboard.stdout.readline()  # serving: said it before
    finally:
        dashboard.terminate()
        _, said = dashboard.communicate(timeout=60)
    assert f"calls are metered in file://{user_data} too" in said


def test_the_index_is_bounded_and_forgets_directories_that_are_gone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    env = {"HOME": str(tmp_path / "home")}
    dirs = [tmp_path / f"d{i}" for i in range(MAX_LOCATIONS + 5)]
    for d in dirs:
        d.mkdir()
        assert register_location(d, env=env)
    assert len(known_locations(env)) == MAX_LOCATIONS
    dirs[-1].rmdir()
    assert dirs[-1] not in known_locations(env)
    index_path(env).write_text("{not json", encoding="utf-8")  # damaged: replaced, not fatal
    assert register_location(dirs[0], env=env)
    assert known_locations(env) == [dirs[0].resolve()]
