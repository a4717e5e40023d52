"""Fixtures for the whole suite."""

from __future__ import annotations

import pytest
from hypothesis import settings

from airstore.settings import DATA_DIR_ENV, XDG_DATA_HOME_ENV

# Tests never assert on time, and a hypothesis deadline is a time assertion: on a loaded
# machine it fails examples that are merely slow. Limits on examples stay per test.
settings.register_profile("air", deadline=None)
settings.load_profile("air")


@pytest.fixture(autouse=True)
def _private_data_dir(
    monkeypatch: pytest.MonkeyPatch, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """Every test (and every process it starts) defaults to its own data dir, so nothing
    meters into the checkout's ``.air/data`` or the user's ``~/.local/share/air/data``. Tests
    of the default-location rules set or remove ``AIR_DATA_DIR`` themselves."""
    monkeypatch.setenv(DATA_DIR_ENV, str(tmp_path_factory.mktemp("air-data")))
    # the per-user directory (its locations.json registers every data directory a meter writes
    # to) is the test's own too, not the user's: a test's dashboard or `air meter slo` would
    # otherwise see every earlier test's stores (on Linux, by XDG_DATA_HOME; macOS and Windows
    # resolve it by their own rules, which tests of those rules set themselves)
    monkeypatch.setenv(XDG_DATA_HOME_ENV, str(tmp_path_factory.mktemp("xdg-data")))


ALLOW_MISSING_ENV = "AIR_TEST_ALLOW_MISSING"
"""Set (to 1) only by the hosted CI's macOS and Windows jobs: a test that drives a system program
the runner lacks (redis-server, Chromium) is skipped with the reason. Unset — ``make test`` and
the project's own CI — such a test fails instead: the Makefile installs those programs."""

_PROGRAMS = {
    "redis": (("redis-server",), "redis-server"),
    "browser": (("chromium", "chromium-browser", "google-chrome"), "Chromium"),
}


def _needs(item: pytest.Item, kind: str) -> bool:
    return item.get_closest_marker(kind) is not None or any(
        kind in name for name in getattr(item, "fixturenames", ())
    )


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Skip, with the reason, what needs a program this runner lacks (see
    :data:`ALLOW_MISSING_ENV`)."""
    import os
    import shutil

    if not os.environ.get(ALLOW_MISSING_ENV):
        return
    for kind, (names, label) in _PROGRAMS.items():
        if any(shutil.which(name) for name in names):
            continue
        mark = pytest.mark.skip(reason=f"{label} is not installed on this runner")
        for item in items:
            if _needs(item, kind):
                item.add_marker(mark)


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--write-durations",
        metavar="PATH",
        default=None,
        help="write each test file's seconds as JSON to PATH (tests/durations.json orders "
        "make test's files longest first; see tests/_schedule.py)",
    )


def pytest_configure(config: pytest.Config) -> None:
    path = config.getoption("--write-durations")
    if path:
        from pathlib import Path

        from tests._schedule import DurationRecorder

        config.pluginmanager.register(DurationRecorder(Path(path)), "air-durations")


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_auto_num_workers(config: pytest.Config) -> int:
    """``-n auto``: one worker per core and one more (tests/_schedule.py's auto_workers)."""
    from tests._schedule import auto_workers

    return auto_workers(config)


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: object) -> object | None:
    """``--dist loadfile`` hands out the longest files first (tests/_schedule.py)."""
    if config.getoption("dist", None) != "loadfile":
        return None
    from tests._schedule import make_scheduler

    return make_scheduler(config, log)
