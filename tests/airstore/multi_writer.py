"""One of several writer processes on one data dir (tests/airstore/test_multiwriter.py).

Usage: ``python multi_writer.py DATA_DIR WRITER COUNT DURABILITY``: COUNT times it increments
the shared counter ``shared/hits``, sets ``ns/w<WRITER>-<i>`` and appends ``{"w", "i"}`` to
``log``, yielding to the loop every few iterations like a server; then closes the store.
"""

from __future__ import annotations

import asyncio
import sys

from airstore import FileStore


async def main(path: str, writer: int, count: int, durability: str) -> None:
    async with FileStore(path, durability=durability) as store:  # type: ignore[arg-type]
        for i in range(count):
            await store.incr("shared", "hits")
            await store.set("ns", f"w{writer}-{i}", i)
            await store.append("log", {"w": writer, "i": i})
            if i % 7 == 0:
                await asyncio.sleep(0)


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]))
