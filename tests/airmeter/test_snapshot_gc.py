"""A cold read of many rollups does not make the cyclic GC walk them again and again.

Over 1.5 M calls in 30 days (rows ~ calls when many tools, servers and instances share the
minutes) the collections triggered while reading rollups took 17 s of a 28 s report. The read
now keeps the collector paused, restores it afterwards, and leaves it alone when it was off.
"""

from __future__ import annotations

import asyncio
import gc
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from airmeter import StoreSink, snapshot
from airmeter.snapshot import load_groups
from airstore import FileStore, create_storage
from tests.airmeter.helpers import make_records


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
