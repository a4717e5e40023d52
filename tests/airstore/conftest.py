from __future__ import annotations

import contextlib
import os
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
import redis.asyncio as aioredis

from airstore import Store, _accel, _platform
from airstore.settings import PLATFORM_ENV
from tests.airstore.backends import BACKENDS, EXFAT, Backend, FakeClock
from tests.airstore.exfat import exfat_volume
from tests.redis_server import RedisServer, shared_redis_server, stop_shared_redis_server
from tests.redis_topology import stop_shared_topologies


@pytest.fixture(params=[pytest.param(b, id=b.name, marks=b.marks) for b in BACKENDS])
def backend(request: pytest.FixtureRequest) -> Backend:
    return request.param  # type: ignore[no-any-return]


@pytest.fixture(autouse=True)
def _pure_python_rows(request: pytest.FixtureRequest) -> Iterator[None]:
    """A backend row marked ``pure`` (``memory-py``, ``file-journal-py``) runs its test with the
    C speedups off, so every contract test also covers the Python path of set."""
    callspec = getattr(request.node, "callspec", None)
    params = callspec.params if callspec is not None else {}
    rows = [params.get(name) for name in ("backend", "persistent_backend")]
    if any(isinstance(row, Backend) and row.pure for row in rows):
        with _accel.disabled():
            yield
    else:
        yield


@contextlib.contextmanager
def macos_shape() -> Iterator[None]:
    """Run the body with the macOS choices of airstore's platform seam: ``os.fdatasync`` gone
    (as on macOS), ``F_FULLFSYNC`` tried and, refused by Linux, ``fsync`` instead; child
    processes get ``AIR_STORE_PLATFORM=macos``."""
    fdatasync = os.fdatasync
    saved_env = os.environ.get(PLATFORM_ENV)
    del os.fdatasync
    os.environ[PLATFORM_ENV] = "macos"
    previous = _platform.use("macos")
    try:
        yield
    finally:
        os.fdatasync = fdatasync
        if saved_env is None:
            del os.environ[PLATFORM_ENV]
        else:
            os.environ[PLATFORM_ENV] = saved_env
        _platform.use(previous)


@pytest.fixture(autouse=True)
def _macos_rows(request: pytest.FixtureRequest) -> Iterator[None]:
    """A backend row marked ``macos`` (``file-macos``) runs its test in the macOS shape."""
    callspec = getattr(request.node, "callspec", None)
    params = callspec.params if callspec is not None else {}
    rows = [params.get(name) for name in ("backend", "persistent_backend")]
    if any(isinstance(row, Backend) and row.macos for row in rows):
        with macos_shape():
            yield
    else:
        yield


__all__ = ["exfat_volume"]  # a fixture, for the tests of this directory


@pytest.fixture(autouse=True)
def _exfat_rows(request: pytest.FixtureRequest) -> None:
    """A backend row marked ``exfat`` (``file-exfat``) keeps its data on the exFAT volume."""
    callspec = getattr(request.node, "callspec", None)
    params = callspec.params if callspec is not None else {}
    rows = [params.get(name) for name in ("backend", "persistent_backend")]
    if any(isinstance(row, Backend) and row.exfat for row in rows) and not EXFAT:
        EXFAT.append(request.getfixturevalue("exfat_volume"))


@pytest.fixture(params=["auto", "macos"])
def platform_shape(request: pytest.FixtureRequest) -> Iterator[str]:
    """Run a test (crash, multi-writer) in both shapes of the platform seam: Linux's own, and
    macOS's (:func:`macos_shape`), in this process and in the writers it starts."""
    if request.param == "macos":
        with macos_shape():
            yield "macos"
    else:
        yield "auto"


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
async def store(backend: Backend, tmp_path: Path, clock: FakeClock) -> AsyncIterator[Store]:
    s = await backend.open(tmp_path, clock)
    try:
        yield s
    finally:
        await s.close()


@pytest.fixture(
    params=[pytest.param(b, id=b.name, marks=b.marks) for b in BACKENDS if b.persistent]
)
def persistent_backend(request: pytest.FixtureRequest) -> Backend:
    return request.param  # type: ignore[no-any-return]


@pytest.fixture(scope="session", autouse=True)
def _stop_shared_redis() -> Iterator[None]:
    """Stop the shared redis-server (started on first use) when the session ends."""
    yield
    stop_shared_redis_server()
    stop_shared_topologies()


@pytest.fixture
def redis_server() -> RedisServer:
    """The session's shared redis-server; give each test its own key prefix."""
    return shared_redis_server()


@pytest.fixture
async def raw(redis_server: RedisServer) -> AsyncIterator[Any]:
    """A plain redis-py client on the shared server (another application's view of it)."""
    client = aioredis.Redis.from_url(redis_server.url())
    yield client
    await client.aclose()
