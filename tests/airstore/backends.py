"""The backends the contract suite runs against. Each backend adds one ``Backend`` row here."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from airstore import FileStore, MemoryStore, RedisStore, SqliteStore, Store
from tests.redis_server import shared_redis_server, unique_prefix
from tests.redis_topology import shared_cluster, shared_sentinel, shared_valkey


class FakeClock:
    """A controllable clock (seconds since the epoch) for TTL tests without sleeps."""

    def __init__(self, start: float = 1_800_000_000.0) -> None:
        self.now = start

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


@dataclass(frozen=True)
class Backend:
    """How to open one backend in a test directory with a given clock."""

    name: str
    open: Callable[[Path, FakeClock], Awaitable[Store]]
    persistent: bool
    url: Callable[[Path], str]
    """The store URL of the data ``open`` uses in that test directory (for create_storage)."""
    marks: tuple[Any, ...] = ()
    pure: bool = False
    """Run with airstore's C speedups off (``tests/airstore/conftest.py``): the Python path of
    every set, what an install without a C compiler runs."""
    exfat: bool = False
    """Keep the data on the session's real exFAT volume (``tests/airstore/exfat.py``)."""
    macos: bool = False
    """Run with the macOS choices of airstore's platform seam (``tests/airstore/conftest.py``):
    no ``os.fdatasync``; ``F_FULLFSYNC``, which Linux refuses, and its ``fsync`` fallback."""


async def _open_memory(tmp: Path, clock: FakeClock) -> Store:
    store = MemoryStore(clock=clock)
    await store.init()
    return store


def _file_opener(durability: str) -> Callable[[Path, FakeClock], Awaitable[Store]]:
    async def _open(tmp: Path, clock: FakeClock) -> Store:
        store = FileStore(tmp / "data", durability=durability, clock=clock)  # type: ignore[arg-type]
        await store.init()
        return store

    return _open


EXFAT: list[Path] = []
"""The exFAT volume's mount point once the session made it (``tests/airstore/conftest.py``)."""


def exfat_dir(tmp: Path) -> Path:
    """The test's own directory on the exFAT volume, named after its ``tmp_path``."""
    return EXFAT[0] / f"{tmp.parent.name}-{tmp.name}"


async def _open_exfat(tmp: Path, clock: FakeClock) -> Store:
    store = FileStore(exfat_dir(tmp) / "data", clock=clock)
    await store.init()
    return store


async def _open_sqlite(tmp: Path, clock: FakeClock) -> Store:
    store = SqliteStore(tmp / "air.db", clock=clock)
    await store.init()
    return store


async def _open_redis(tmp: Path, clock: FakeClock) -> Store:
    # The prefix follows the test directory, so a reopen in the same test sees the same data.
    store = RedisStore(shared_redis_server().url(), prefix=unique_prefix(str(tmp)), clock=clock)
    await store.init()
    return store


# Connecting to a live local topology is not what these tests check: on a loaded machine (two
# pytest workers beside other work) the default 2 s connect timeout was seen to run out against a
# running cluster. Refusals of unreachable servers are tested with their own stores.
_LIVE_CONNECT_TIMEOUT = 15.0


def _topology_opener(url: Callable[[], str]) -> Callable[[Path, FakeClock], Awaitable[Store]]:
    async def _open(tmp: Path, clock: FakeClock) -> Store:
        prefix = unique_prefix(str(tmp))
        store = RedisStore(url(), prefix=prefix, clock=clock, connect_timeout=_LIVE_CONNECT_TIMEOUT)
        await store.init()
        return store

    return _open


def _topology_url(url: Callable[[], str]) -> Callable[[Path], str]:
    return lambda tmp: f"{url()}?prefix={unique_prefix(str(tmp))}"


def _cluster_url() -> str:
    return shared_cluster().url()


def _sentinel_url() -> str:
    return shared_sentinel().url()


def _valkey_url() -> str:
    return shared_valkey().url()


def _file_url(tmp: Path) -> str:
    return f"file://{tmp / 'data'}"


def _redis_url(tmp: Path) -> str:
    return f"{shared_redis_server().url()}?prefix={unique_prefix(str(tmp))}"


BACKENDS: list[Backend] = [
    Backend("memory", _open_memory, persistent=False, url=lambda tmp: "memory://"),
    Backend("memory-py", _open_memory, persistent=False, url=lambda tmp: "memory://", pure=True),
    Backend("file-journal", _file_opener("journal"), persistent=True, url=_file_url),
    Backend("file-journal-py", _file_opener("journal"), persistent=True, url=_file_url, pure=True),
    Backend("file-snapshot", _file_opener("snapshot"), persistent=True, url=_file_url),
    Backend("file-sync", _file_opener("sync"), persistent=True, url=_file_url),
    Backend("file-macos", _file_opener("sync"), persistent=True, url=_file_url, macos=True),
    Backend(
        "file-exfat",
        _open_exfat,
        persistent=True,
        url=lambda tmp: f"file://{exfat_dir(tmp) / 'data'}",
        exfat=True,
    ),
    Backend("sqlite", _open_sqlite, persistent=True, url=lambda tmp: f"sqlite:///{tmp / 'air.db'}"),
    Backend("redis", _open_redis, persistent=True, url=_redis_url, marks=(pytest.mark.redis,)),
    # the fleet's topologies, each a real one started on first use (tests/redis_topology.py)
    Backend(
        "redis-cluster",
        _topology_opener(_cluster_url),
        persistent=True,
        url=_topology_url(_cluster_url),
        marks=(pytest.mark.redis,),
    ),
    Backend(
        "redis-sentinel",
        _topology_opener(_sentinel_url),
        persistent=True,
        url=_topology_url(_sentinel_url),
        marks=(pytest.mark.redis,),
    ),
    Backend(
        "valkey",
        _topology_opener(_valkey_url),
        persistent=True,
        url=_topology_url(_valkey_url),
        marks=(pytest.mark.redis,),
    ),
]
