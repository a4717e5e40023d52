"""Gateway test fixtures: the shared redis-server is stopped when the session ends."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.redis_server import stop_shared_redis_server


@pytest.fixture(scope="session", autouse=True)
def _stop_shared_redis() -> Iterator[None]:
    yield
    stop_shared_redis_server()
