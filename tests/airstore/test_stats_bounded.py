"""`stats()` on a reader counts each namespace's keys without keeping the namespace.

A reader keeps every namespace it opens; `stats()` counted keys through `list`, so
`air store stats` over a 30-day meter history (723 rollup namespaces) held the whole data
directory in memory (1.7 GB). It now reads each namespace it had not opened, counts, and lets
it go: what stays allocated after the call no longer grows with the directory.
"""

from __future__ import annotations

import tracemalloc
from pathlib import Path

from airstore import FileStore, create_storage

NAMESPACES = 30
KEYS = 200
VALUE = {"rows": [{"tool": f"t{i}", "calls": i, "hist": list(range(20))} for i in range(8)]}


async def _written(path: Path) -> None:
    async with FileStore(path) as store:
        for n in range(NAMESPACES):
            for k in range(KEYS):
                await store.set(f"big.{n}", f"k{k}", VALUE)
        await store.set("small", "a", 1)
        await store.set("small", "gone", 1, ttl=0.001)
        await store.append("log", {"x": 1})


async def test_stats_keeps_no_namespace_it_opened_for_counting(tmp_path: Path) -> None:
    await _written(tmp_path / "data")
    reader = await create_storage(f"file://{tmp_path / 'data'}", read_only=True)
    assert isinstance(reader, FileStore)
    try:
        await reader.get("small", "a")  # one namespace the reader already holds
        tracemalloc.start()
        try:
            found = await reader.stats()
            retained, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
        counts = {s.namespace: s.keys for s in found}
        assert counts == {**{f"big.{n}": KEYS for n in range(NAMESPACES)}, "small": 1, "log": 0}
        one_namespace = peak / NAMESPACES * 4  # generous: the peak is about one namespace
        # before: every namespace stayed loaded (retained ~ the whole directory, ~ the peak)
        assert retained < one_namespace, (retained, peak)
        assert await reader.get("big.3", "k7") == VALUE  # a namespace counted still reads
        assert await reader.list("small") == ["a"]
    finally:
        await reader.close()
