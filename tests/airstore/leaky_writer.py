"""A process that opens a store, writes, and never closes it (tests/airstore/test_leaks.py).

Usage: ``python leaky_writer.py URL``. Writes ``ns/k`` = ``{"v": 1}``, one log entry and one
counter step, prints ``written`` and returns from main with the store still open.
"""

from __future__ import annotations

import asyncio
import sys

from airstore import create_storage

_KEEP: list[object] = []  # alive until interpreter exit, like a module-level store


async def main(url: str) -> None:
    store = await create_storage(url)
    _KEEP.append(store)
    await store.set("ns", "k", {"v": 1})
    await store.append("log", {"i": 1})
    await store.incr("ns", "n")
    print("written", flush=True)


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1]))
