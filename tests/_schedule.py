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
import os
from collections import OrderedDict, defaultdict
from pathlib import Path
from typing import Any

import pytest

DURATIONS = Path(__file__).with_name("durations.json")
"""Seconds per test file, as the last refresh measured them (a hint for the order only)."""

DURATIONS_ENV = "AIR_TEST_DURATIONS"
"""Another durations file to order by (tests/test_schedule.py's run of a small suite)."""

UNKNOWN_PER_TEST = 0.2
"""Seconds a test of a file missing from :data:`DURATIONS` is assumed to take."""

WORKERS_ENV = "PYTEST_XDIST_AUTO_NUM_WORKERS"
"""pytest-xdist's own variable: how many workers ``-n auto`` starts, when set."""

EXTRA_WORKERS = 1
"""Workers beyond one per core for ``-n auto``. A worker spends about a quarter of its time
waiting on the processes its tests start (servers, Chromium, Redis, pip); with one worker per
core the cores idled that quarter (measured on 2 cores: 76% busy, pytest 367 s; with one more
worker, 327 s)."""

__all__ = [
    "DURATIONS",
    "DURATIONS_ENV",
    "EXTRA_WORKERS",
    "UNKNOWN_PER_TEST",
    "WORKERS_ENV",
    "LongestFirstQueue",
    "auto_workers",
    "file_of",
    "load_durations",
    "longest_first",
    "weight",
]


def file_of(nodeid: str) -> str:
    """The test file a node id belongs to (xdist's ``loadfile`` scope)."""
    return nodeid.split("::", 1)[0]


def load_durations(path: Path | None = None) -> dict[str, float]:
    """The recorded seconds per file (``path``, else :data:`DURATIONS_ENV`'s file, else
    :data:`DURATIONS`); an unreadable or missing file gives no hints."""
    if path is None:
        path = Path(os.environ.get(DURATIONS_ENV) or DURATIONS)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    if not isinstance(data, dict):
        return {}
    return {str(k): float(v) for k, v in data.items() if isinstance(v, int | float)}


def weight(scope: str, tests: int, durations: dict[str, float]) -> float:
    """Seconds a file is expected to take: recorded, else :data:`UNKNOWN_PER_TEST` per test."""
    return durations.get(scope, UNKNOWN_PER_TEST * tests)


class LongestFirstQueue(OrderedDict[str, dict[str, bool]]):
    """xdist's queue of work units (a file's node ids each), handing out the heaviest unit
    still queued first: its ``popitem(last=False)`` is how the scheduler takes the next one.
    Only the order changes; the collections the workers index into stay as they collected."""

    def __init__(self, durations: dict[str, float]) -> None:
        super().__init__()
        self.durations = durations

    def popitem(self, last: bool = True) -> tuple[str, dict[str, bool]]:
        if last or not self:
            return super().popitem(last)
        scope = max(self, key=lambda name: weight(name, len(self[name]), self.durations))
        return scope, self.pop(scope)


def longest_first(nodeids: list[str], durations: dict[str, float]) -> list[str]:
    """The order :class:`LongestFirstQueue` hands ``nodeids`` out in, file by file (the order
    within a file kept)."""
    queue = LongestFirstQueue(durations)
    for nodeid in nodeids:
        queue.setdefault(file_of(nodeid), {})[nodeid] = False
    order: list[str] = []
    while queue:
        order.extend(queue.popitem(last=False)[1])
    return order


def auto_workers(config: pytest.Config) -> int:
    """How many workers ``-n auto`` starts: :data:`WORKERS_ENV` when it is set (xdist reads
    it), else xdist's own count (physical cores; ``-n logical``: logical ones) plus
    :data:`EXTRA_WORKERS`."""
    from xdist.plugin import pytest_xdist_auto_num_workers as xdist_count

    count = int(xdist_count(config))
    try:
        int(os.environ.get(WORKERS_ENV, ""))
    except ValueError:  # not set, or not a number (xdist warns and counts cores)
        return count + EXTRA_WORKERS
    return count


def make_scheduler(config: pytest.Config, log: Any) -> Any:
    """The ``loadfile`` scheduler, its queue longest file first (see the module's text)."""
    from xdist.scheduler import LoadFileScheduling

    scheduler = LoadFileScheduling(config, log)
    scheduler.workqueue = LongestFirstQueue(load_durations())
    return scheduler


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
