"""Longest file first: how ``make test`` spreads the suite over pytest-xdist's workers.

``--dist loadfile`` keeps a test file on one worker (its module fixtures start once) and hands
files out in a queue. xdist orders that queue by the number of tests in a file, which puts a file
of two slow tests (a wheel built and installed into a clean venv, a minute) at the very end, where
one worker runs it alone while the other waits. Ordering by how long a file took instead is the
classic longest-processing-time-first rule: the long files start first and the short ones fill the
gaps, so both workers finish at about the same time.

How long each file took lives in ``tests/durations.json`` (seconds, summed over setup, call and
teardown of its tests). A file not listed there (a new one) is placed as if each of its tests
took :data:`UNKNOWN_PER_TEST` seconds. Refresh the file after adding slow tests::

    make pytest PYTEST_ARGS="--write-durations tests/durations.json"

The order changes only when tests run, never what runs: every collected test is still run
exactly once.
"""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest

DURATIONS = Path(__file__).with_name("durations.json")
"""Seconds per test file, as the last refresh measured them (a hint for the order only)."""

UNKNOWN_PER_TEST = 0.2
"""Seconds a test of a file missing from :data:`DURATIONS` is assumed to take."""

__all__ = ["DURATIONS", "UNKNOWN_PER_TEST", "file_of", "load_durations", "longest_first"]


def file_of(nodeid: str) -> str:
    """The test file a node id belongs to (xdist's ``loadfile`` scope)."""
    return nodeid.split("::", 1)[0]


def load_durations(path: Path = DURATIONS) -> dict[str, float]:
    """The recorded seconds per file; an unreadable or missing file gives no hints."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    if not isinstance(data, dict):
        return {}
    return {str(k): float(v) for k, v in data.items() if isinstance(v, int | float)}


def longest_first(nodeids: list[str], durations: dict[str, float]) -> list[str]:
    """``nodeids`` regrouped by file, the files longest first (recorded seconds, else an
    estimate from their number of tests); the order within a file is kept."""
    by_file: dict[str, list[str]] = defaultdict(list)
    for nodeid in nodeids:
        by_file[file_of(nodeid)].append(nodeid)

    def weight(item: tuple[str, list[str]]) -> float:
        name, ids = item
        return durations.get(name, UNKNOWN_PER_TEST * len(ids))

    ordered = sorted(by_file.items(), key=weight, reverse=True)
    return [nodeid for _, ids in ordered for nodeid in ids]


def make_scheduler(config: pytest.Config, log: Any) -> Any:
    """The ``loadfile`` scheduler, its queue longest file first (see the module's text)."""
    from xdist.scheduler import LoadFileScheduling

    class LongestFileFirst(LoadFileScheduling):  # type: ignore[misc]
        def schedule(self) -> None:
            if self.collection is None and self.collection_is_completed:
                durations = load_durations()
                for node, ids in list(self.registered_collections.items()):
                    self.registered_collections[node] = longest_first(list(ids), durations)
            super().schedule()

    # xdist would reorder the queue by the number of tests per file: keep ours
    config.option.loadscopereorder = False
    return LongestFileFirst(config, log)


class DurationRecorder:
    """Sums each file's setup, call and teardown seconds, and writes them as JSON at the end
    (``--write-durations PATH``); runs on the controller, which sees every worker's reports."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.seconds: dict[str, float] = defaultdict(float)

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        self.seconds[file_of(report.nodeid)] += report.duration

    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        if hasattr(session.config, "workerinput"):
            return  # a worker: the controller writes the sums
        rows = {name: round(sec, 2) for name, sec in sorted(self.seconds.items())}
        self.path.write_text(json.dumps(rows, indent=1) + "\n", encoding="utf-8")
