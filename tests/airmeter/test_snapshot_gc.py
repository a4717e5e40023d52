"""A cold read of many rollups need not make the cyclic GC walk them again and again.

Over 1.5 M calls in 30 days (rows ~ calls when many tools, servers and instances share the
minutes) the collections triggered while reading rollups took 17 s of a 28 s report. A reader
asked to (``RollupReader(store, pause_gc=True)``: the dashboard's, and the report command's
own pause) keeps the collector paused, restores it afterwards, and leaves it alone when it was
off; a plain read (a library user's) never touches the process-wide collector.
"""

from __future__ import annotations

import asyncio
import gc
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from airmeter import RollupReader, StoreSink, snapshot
from airstore import FileStore, MemoryStore, create_storage
from airstore.types import Store
from tests.airmeter.helpers import make_records


async def load_groups(store: Store) -> Any:
    """A cold read by a reader that pauses the collector (as the dashboard's does)."""
    return await RollupReader(store, pause_gc=True).load_groups()


@pytest.fixture
def collections() -> Iterator[list[int]]:
    """Generations of the collections that run while the test does; low thresholds so any
    stretch of allocations without a pause triggers some."""
    seen: list[int] = []

    def callback(phase: str, info: dict[str, Any]) -> None:
        if phase == "start":
            seen.append(int(info["generation"]))

    thresholds = gc.get_threshold()
    was_enabled = gc.isenabled()
    gc.enable()
    gc.set_threshold(50, 2, 2)
    gc.callbacks.append(callback)
    try:
        yield seen
    finally:
        gc.callbacks.remove(callback)
        gc.set_threshold(*thresholds)
        if not was_enabled:
            gc.disable()


async def _recorded(path: Path) -> None:
    async with FileStore(path) as store:
        sink = StoreSink(store, writer="w1", rollup_ttl=None)
        records = make_records(6000, minutes=240, servers=("a", "b"), instances=("i-1", "i-2"))
        await sink.write(records)
        await sink.close()


async def test_a_cold_read_runs_no_collection_and_restores_the_collector(
    tmp_path: Path, collections: list[int]
) -> None:
    await _recorded(tmp_path / "data")
    store = await create_storage(f"file://{tmp_path / 'data'}", read_only=True)
    try:
        gc.collect()  # the allocation counts start at zero
        collections.clear()
        groups = await load_groups(store)
        # at most the one that runs when the collector resumes; before: one per 50 allocations
        assert len(collections) <= 1, collections
        assert gc.isenabled()
        assert sum(r.calls for _, rows in groups for r in rows) == 6000
        assert (await snapshot(store)).total_calls == 6000
    finally:
        await store.close()


async def test_concurrent_reads_restore_the_collector_once_both_end(
    tmp_path: Path, collections: list[int]
) -> None:
    await _recorded(tmp_path / "data")
    stores = [await create_storage(f"file://{tmp_path / 'data'}", read_only=True) for _ in range(2)]
    try:
        gc.collect()
        collections.clear()
        first, second = await asyncio.gather(*(load_groups(s) for s in stores))
        assert len(collections) <= 1, collections
        assert gc.isenabled()
        assert len(first) == len(second) > 0
    finally:
        for s in stores:
            await s.close()


async def test_a_collector_turned_off_by_the_caller_stays_off(
    tmp_path: Path, collections: list[int]
) -> None:
    await _recorded(tmp_path / "data")
    store = await create_storage(f"file://{tmp_path / 'data'}", read_only=True)
    gc.disable()
    try:
        await load_groups(store)
        assert not gc.isenabled()
    finally:
        gc.enable()
        await store.close()


async def test_the_report_command_turns_the_collector_back_on(
    tmp_path: Path, collections: list[int], capsys: pytest.CaptureFixture[str]
) -> None:
    """`air meter report` keeps the collector off for its one report (the process then ends);
    called in-process, it gives it back as it found it."""
    from aircli import main

    await _recorded(tmp_path / "data")
    url = f"file://{tmp_path / 'data'}"

    def report() -> int:  # in a thread: the command runs its own event loop
        code = main(["meter", "report", "--store", url, "--since", "all"])
        assert gc.isenabled()
        return code

    assert await asyncio.to_thread(report) == 0
    assert "6000" in capsys.readouterr().out


class _Probe:
    """A store that notes, at each read, whether the cyclic collector is on."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self.collector_on: list[bool] = []

    def __getattr__(self, name: str) -> Any:
        return getattr(self.store, name)

    async def entries(self, ns: str, prefix: str = "") -> Any:
        self.collector_on.append(gc.isenabled())
        return await self.store.entries(ns, prefix)


async def test_a_plain_snapshot_leaves_the_collector_alone() -> None:
    store = MemoryStore()
    await StoreSink(store, writer="w1").write(make_records(50, minutes=5))
    probe = _Probe(store)
    assert gc.isenabled()
    assert (await snapshot(probe)).total_calls == 50  # type: ignore[arg-type]
    assert (await RollupReader(probe).snapshot()).total_calls == 50  # type: ignore[arg-type]
    assert probe.collector_on
    assert all(probe.collector_on)
    probe.collector_on.clear()
    paused = RollupReader(probe, pause_gc=True)  # type: ignore[arg-type]
    assert (await paused.snapshot()).total_calls == 50
    assert probe.collector_on
    assert not any(probe.collector_on)
    assert gc.isenabled()


async def test_the_dashboard_reads_its_rollups_with_the_collector_paused() -> None:
    from dashboard.data import DashboardData

    store = MemoryStore()
    await StoreSink(store, writer="w1").write(make_records(50, minutes=5))
    probe = _Probe(store)
    data = DashboardData(probe, objectives=[])  # type: ignore[arg-type]
    try:
        view = await data.view(data.resolve("7d"))
        assert view.store_empty is False
    finally:
        await data.close()
    assert False in probe.collector_on  # the rollup reads ran paused
    assert gc.isenabled()
