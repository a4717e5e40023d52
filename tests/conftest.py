"""Fixtures for the whole suite."""

from __future__ import annotations

import pytest
from hypothesis import settings

from airstore.settings import DATA_DIR_ENV

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
