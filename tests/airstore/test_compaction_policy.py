"""When a flush rewrites a namespace's snapshot: always while it is small, else only once the
journal since it reaches 1/8 of its size (a flush used to rewrite the whole snapshot for one
changed key)."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

from airstore import FileStore
from airstore._compaction import REWRITE_RATIO, SMALL_SNAPSHOT


def _snapshot_ino(root: Path) -> int:
    return os.stat(root / "ns.json").st_ino


def _size(path: Path) -> int:
    return os.stat(path).st_size if path.exists() else 0


async def test_a_small_snapshot_is_rewritten_at_every_flush_that_changed_it(
    tmp_path: Path,
) -> None:
    async with FileStore(tmp_path, flush_interval=3600) as store:
        await store.set("ns", "a", 1)
        await store.flush()
        first = _snapshot_ino(tmp_path)
        await store.set("ns", "a", 2)
        await store.flush()
        assert _snapshot_ino(tmp_path) != first
        assert b'["a",2]' in (tmp_path / "ns.json").read_bytes()
        await store.flush()  # nothing changed: nothing rewritten
        assert b'["a",2]' in (tmp_path / "ns.json").read_bytes()


async def test_a_large_snapshot_waits_for_an_eighth_of_its_size_in_the_journal(
    tmp_path: Path,
) -> None:
    async with FileStore(tmp_path, flush_interval=3600) as store:
        i = 0
        while _size(tmp_path / "ns.json") <= SMALL_SNAPSHOT:
            for _ in range(1000):
                await store.set("ns", f"k{i}", {"v": i, "pad": "x" * 20})
                i += 1
            await store.flush()
        size = _size(tmp_path / "ns.json")
        ino = _snapshot_ino(tmp_path)
        await store.set("ns", "k1", {"v": "changed"})
        await store.flush()
        assert _snapshot_ino(tmp_path) == ino  # one changed key: the snapshot stays
        journal = tmp_path / "ns.journal.jsonl"
        assert b'["k1",{"v":"changed"}]' in journal.read_bytes()
        async with FileStore(tmp_path, read_only=True) as reader:  # the journal has it
            assert await reader.get("ns", "k1") == {"v": "changed"}
            assert await reader.get("ns", f"k{i - 1}") == {"v": i - 1, "pad": "x" * 20}
        n = 0
        while _size(journal) * REWRITE_RATIO < size:
            for _ in range(100):
                await store.set("ns", f"k{n}", {"v": -n, "pad": "y" * 20})
                n += 1
            await asyncio.sleep(0)  # the end-of-turn commit writes them to the journal
        assert n < i
        await store.flush()
        assert _snapshot_ino(tmp_path) != ino  # the journal reached 1/8: rewritten
        assert _size(journal) < 100  # a new journal: its header only
    async with FileStore(tmp_path, read_only=True) as reader:
        assert await reader.get("ns", "k1") == {"v": -1, "pad": "y" * 20}
        assert await reader.get("ns", f"k{n}") == {"v": n, "pad": "x" * 20}
        assert len(await reader.list("ns")) == i
