"""The order ``make test`` hands test files to its workers (tests/_schedule.py): the longest
first, each file whole on one worker, every test run once."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

from tests._schedule import (
    DURATIONS,
    DURATIONS_ENV,
    EXTRA_WORKERS,
    UNKNOWN_PER_TEST,
    WORKERS_ENV,
    LongestFirstQueue,
    load_durations,
    longest_first,
)

ROOT = Path(__file__).resolve().parents[1]
IDS = [
    "tests/a/test_short.py::test_one",
    "tests/a/test_short.py::test_two",
    "tests/b/test_long.py::test_one",
    "tests/b/test_long.py::Cls::test_two",
    "tests/c/test_new.py::test_one",
]


def test_the_longest_recorded_file_goes_first_and_nothing_is_lost_or_repeated() -> None:
    durations = {"tests/a/test_short.py": 1.0, "tests/b/test_long.py": 90.0}
    ordered = longest_first(IDS, durations)
    assert sorted(ordered) == sorted(IDS)  # each test exactly once
    assert ordered[:2] == ["tests/b/test_long.py::test_one", "tests/b/test_long.py::Cls::test_two"]
    # a file not on record (one test: 0.2 s) weighs less than a 1 s file
    assert ordered[2:] == [*IDS[:2], IDS[4]]


def test_a_file_not_on_record_is_weighed_by_its_number_of_tests() -> None:
    many = [f"tests/d/test_many.py::test_{i}" for i in range(100)]
    ordered = longest_first([*IDS, *many], {"tests/b/test_long.py": 10.0})
    assert UNKNOWN_PER_TEST * 100 > 10.0
    assert ordered[:100] == many  # 100 unknown tests are assumed longer than a 10 s file


def test_the_queue_pops_the_heaviest_only_from_the_front() -> None:
    queue = LongestFirstQueue({"x.py": 1.0, "y.py": 5.0})
    queue["x.py"] = {"x.py::t": False}
    queue["y.py"] = {"y.py::t": False}
    assert queue.popitem(last=True)[0] == "y.py"  # the end: as an OrderedDict
    queue["y.py"] = {"y.py::t": False}
    assert queue.popitem(last=False)[0] == "y.py"  # the front: the heaviest
    assert queue.popitem(last=False)[0] == "x.py"
    assert not queue


def test_a_missing_or_broken_durations_file_gives_no_hints(tmp_path: Path) -> None:
    assert load_durations(tmp_path / "absent.json") == {}
    (tmp_path / "broken.json").write_text("{not json")
    assert load_durations(tmp_path / "broken.json") == {}
    (tmp_path / "list.json").write_text("[1, 2]")
    assert load_durations(tmp_path / "list.json") == {}


def test_the_committed_durations_name_files_that_exist() -> None:
    recorded = load_durations(DURATIONS)
    assert len(recorded) > 100
    gone = [name for name in recorded if not (ROOT / name).is_file()]
    assert len(gone) <= len(recorded) // 10, f"tests/durations.json is stale: refresh it ({gone})"
    assert json.loads(DURATIONS.read_text())  # valid JSON, as the scheduler reads it


_CONFTEST = """
import pytest

@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config, log):
    from tests._schedule import make_scheduler
    return make_scheduler(config, log)
"""

_TEST_FILE = """
import os, time

def _ran(request):
    with open(os.environ["RAN_LOG"], "a") as fh:
        fh.write(f"{os.environ['PYTEST_XDIST_WORKER']} {request.node.nodeid} {time.monotonic()}\\n")

"""


def test_two_real_workers_run_each_file_whole_on_one_worker_the_longest_first(
    tmp_path: Path,
) -> None:
    suite = tmp_path / "suite"
    suite.mkdir()
    (suite / "conftest.py").write_text(_CONFTEST)
    counts = {"test_a.py": 3, "test_b.py": 2, "test_c.py": 5, "test_d.py": 4}
    for name, n in counts.items():
        body = _TEST_FILE + "".join(
            f"def test_{i}(request):\n    _ran(request)\n    time.sleep(0.05)\n\n" for i in range(n)
        )
        (suite / name).write_text(body)
    durations = tmp_path / "durations.json"
    durations.write_text(json.dumps({"test_b.py": 100.0, "test_a.py": 50.0, "test_d.py": 0.1}))
    ran = tmp_path / "ran.log"
    env = {**os.environ, DURATIONS_ENV: str(durations), "RAN_LOG": str(ran),
           "PYTHONPATH": str(ROOT)}  # fmt: skip
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-n", "2", "--dist", "loadfile", "-p", "no:cacheprovider",
         "-p", "no:randomly", "-q", str(suite)],
        cwd=suite, env=env, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    assert "14 passed" in done.stdout, done.stdout
    rows = [line.split(" ") for line in ran.read_text().splitlines()]
    assert sorted(nodeid for _, nodeid, _ in rows) == sorted(
        f"{name}::test_{i}" for name, n in counts.items() for i in range(n)
    )  # every test once
    workers_of: dict[str, set[str]] = {}
    first_start: dict[str, float] = {}
    for worker, nodeid, at in rows:
        name = nodeid.split("::")[0]
        workers_of.setdefault(name, set()).add(worker)
        first_start[name] = min(first_start.get(name, float("inf")), float(at))
    assert all(len(w) == 1 for w in workers_of.values()), workers_of  # a file stays whole
    # each worker started its files heaviest first (b 100 s, a 50 s, c 5 x 0.2 s, d 0.1 s),
    # and the two heaviest went to the two workers first
    weights = {"test_b.py": 100.0, "test_a.py": 50.0, "test_c.py": 1.0, "test_d.py": 0.1}
    by_worker: dict[str, list[str]] = {}
    for name in sorted(first_start, key=first_start.__getitem__):
        (worker,) = workers_of[name]
        by_worker.setdefault(worker, []).append(name)
    for files in by_worker.values():
        assert files == sorted(files, key=weights.__getitem__, reverse=True), by_worker
    assert {files[0] for files in by_worker.values()} == {"test_b.py", "test_a.py"}, by_worker


def _xdist_count(monkeypatch: pytest.MonkeyPatch) -> int:
    """What xdist's own ``-n auto`` starts here (its hook reads only ``numprocesses``)."""
    from xdist.plugin import pytest_xdist_auto_num_workers as count

    monkeypatch.delenv(WORKERS_ENV, raising=False)
    config = SimpleNamespace(option=SimpleNamespace(numprocesses="auto"))
    return int(count(config))  # type: ignore[arg-type]


def _workers_started(tmp_path: Path, n: str, env_extra: dict[str, str]) -> str:
    suite = tmp_path / "suite"
    suite.mkdir(exist_ok=True)
    (suite / "conftest.py").write_text(
        "from tests.conftest import pytest_xdist_auto_num_workers  # noqa: F401\n"
    )
    (suite / "test_one.py").write_text("def test_one():\n    pass\n")
    env = {k: v for k, v in os.environ.items() if k != WORKERS_ENV}
    env.update(PYTHONPATH=str(ROOT), **env_extra)
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-n", n, "-p", "no:cacheprovider", str(suite)],
        cwd=suite, env=env, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


def test_n_auto_under_the_suites_conftest_starts_one_worker_more_than_xdist_would(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert EXTRA_WORKERS == 1
    want = _xdist_count(monkeypatch) + 1
    assert f"created: {want}/{want} workers" in _workers_started(tmp_path, "auto", {})


def test_xdists_variable_still_says_how_many(tmp_path: Path) -> None:
    said = _workers_started(tmp_path, "auto", {WORKERS_ENV: "1"})
    assert "created: 1/1 worker" in said, said


def test_a_variable_that_is_not_a_number_leaves_the_extra_worker(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from tests._schedule import auto_workers

    want = _xdist_count(monkeypatch) + 1
    monkeypatch.setenv(WORKERS_ENV, "many")
    config = SimpleNamespace(option=SimpleNamespace(numprocesses="auto"))
    with pytest.warns(UserWarning, match="not a number"):  # xdist's own warning
        assert auto_workers(config) == want  # type: ignore[arg-type]
