"""The order ``make test`` hands test files to its workers (tests/_schedule.py)."""

from __future__ import annotations

import json
from pathlib import Path

from tests._schedule import DURATIONS, UNKNOWN_PER_TEST, load_durations, longest_first

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


def test_a_missing_or_broken_durations_file_gives_no_hints(tmp_path: Path) -> None:
    assert load_durations(tmp_path / "absent.json") == {}
    (tmp_path / "broken.json").write_text("{not json")
    assert load_durations(tmp_path / "broken.json") == {}
    (tmp_path / "list.json").write_text("[1, 2]")
    assert load_durations(tmp_path / "list.json") == {}


def test_the_committed_durations_name_files_that_exist() -> None:
    recorded = load_durations(DURATIONS)
    assert len(recorded) > 100
    root = DURATIONS.parents[1]
    gone = [name for name in recorded if not (root / name).is_file()]
    assert len(gone) <= len(recorded) // 10, f"tests/durations.json is stale: refresh it ({gone})"
    assert json.loads(DURATIONS.read_text())  # valid JSON, as the scheduler reads it
