"""The backends the contract suite runs against. Each backend adds one ``Backend`` row here."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from airstore import FileStore, MemoryStore, Store


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
    marks: tuple[Any, ...] = ()


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


BACKENDS: list[Backend] = [
    Backend("memory", _open_memory, persistent=False),
    Backend("file-journal", _file_opener("journal"), persistent=True),
    Backend("file-snapshot", _file_opener("snapshot"), persistent=True),
    Backend("file-sync", _file_opener("sync"), persistent=True),
]
