"""SqliteStore and RedisStore against their peers, in one process; prints tables with ratios.

Run: ``.venv/bin/python bench/backends_bench.py [--n 100000] [--redis-url redis://…]``.
Without ``--redis-url`` a temporary ``redis-server`` is started on a free 127.0.0.1 port.
Every figure is the best of ``--repeat`` runs (the machine may be shared). Ours go through the
public async API, one coroutine per operation, many in flight (``asyncio.gather`` of
``--concurrency``): that is the case the stores group-commit.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sqlite3
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import aiosqlite
import orjson
import redis.asyncio as aioredis

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from airstore import RedisStore, SqliteStore
from airstore._sqlite_sql import SCHEMA

Rows = list[tuple[str, str, float]]  # (workload, implementation, ops/s)


async def best(repeat: int, n: int, run: Callable[[int], Awaitable[None]]) -> float:
    """Best ops/s of ``repeat`` runs of ``run(rep)`` doing ``n`` operations."""
    top = 0.0
    for rep in range(repeat):
        start = time.perf_counter()
        await run(rep)
        top = max(top, n / (time.perf_counter() - start))
    return top


async def in_chunks(n: int, chunk: int, make: Callable[[int], Awaitable[Any]]) -> None:
    for base in range(0, n, chunk):
        await asyncio.gather(*(make(i) for i in range(base, min(n, base + chunk))))


async def bench_sqlite(n: int, c: int, repeat: int, tmp: Path) -> Rows:
    rows: Rows = []

    async def noop(i: int) -> None:
        return None

    rows.append(
        (
            "async floor",
            "gather of no-op coroutines",
            await best(repeat, n, lambda r: in_chunks(n, c, noop)),
        )
    )

    async with SqliteStore(tmp / "ours.db") as store:

        async def ours_set(rep: int) -> None:
            await in_chunks(n, c, lambda i: store.set("ns", f"k{rep}-{i}", {"i": i, "tool": "x"}))

        rows.append(("set", "SqliteStore (group commit)", await best(repeat, n, ours_set)))

        async def ours_set_workers(rep: int) -> None:
            async def worker(w: int) -> None:
                for base in range(w * 1000, n, 4000):
                    await asyncio.gather(
                        *(
                            store.set("ns", f"w{rep}-{i}", {"i": i})
                            for i in range(base, min(n, base + 1000))
                        )
                    )

            await asyncio.gather(*(worker(w) for w in range(4)))

        rows.append(
            ("set", "SqliteStore, 4 writers x 1000", await best(repeat, n, ours_set_workers))
        )

        async def ours_append(rep: int) -> None:
            await in_chunks(n, c, lambda i: store.append("log", {"i": i, "tool": "x"}))

        rows.append(("append", "SqliteStore (group commit)", await best(repeat, n, ours_append)))

        async def ours_get(rep: int) -> None:
            await in_chunks(n, c, lambda i: store.get("ns", f"k0-{i}"))

        rows.append(("get", "SqliteStore, concurrent", await best(repeat, n, ours_get)))
        small = min(n, 20_000)

        async def ours_get_seq(rep: int) -> None:
            for i in range(small):
                await store.get("ns", f"k0-{i}")

        rows.append(("get", "SqliteStore, one await each", await best(repeat, small, ours_get_seq)))

        async def ours_query(rep: int) -> None:
            for _ in range(100):
                await store.query("log", limit=100)

        rows.append(("newest-100 query", "SqliteStore", await best(repeat, 100, ours_query)))

        async def ours_filter(rep: int) -> None:
            await store.query("log", limit=100, filter={"i": n // 2})

        rows.append(("filtered query (SQL)", "SqliteStore", await best(repeat, 1, ours_filter)))

    per_op = min(n, 20_000)
    db = await aiosqlite.connect(tmp / "peer.db", isolation_level=None)
    try:
        await db.execute("PRAGMA journal_mode=WAL")
        await db.execute("PRAGMA synchronous=NORMAL")
        await db.executescript(SCHEMA)

        async def peer_one_tx(rep: int) -> None:
            await db.execute("BEGIN")
            for i in range(per_op):
                await db.execute(
                    "INSERT OR REPLACE INTO kv VALUES (?, ?, ?, NULL)",
                    ("ns", f"p{rep}-{i}", orjson.dumps({"i": i, "tool": "x"}).decode()),
                )
            await db.commit()

        rows.append(
            ("set", "aiosqlite, one await per op (one tx)", await best(repeat, per_op, peer_one_tx))
        )
        few = min(n, 2000)

        async def peer_autocommit(rep: int) -> None:
            for i in range(few):
                await db.execute(
                    "INSERT OR REPLACE INTO kv VALUES (?, ?, ?, NULL)",
                    ("ns", f"a{rep}-{i}", orjson.dumps({"i": i, "tool": "x"}).decode()),
                )

        rows.append(
            (
                "set",
                "aiosqlite, one await + commit per op",
                await best(repeat, few, peer_autocommit),
            )
        )
    finally:
        await db.close()

    raw = sqlite3.connect(tmp / "raw.db", isolation_level=None)
    try:
        raw.execute("PRAGMA journal_mode=WAL")
        raw.execute("PRAGMA synchronous=NORMAL")
        raw.executescript(SCHEMA)

        async def raw_one_tx(rep: int) -> None:
            raw.execute("BEGIN")
            for i in range(n):
                raw.execute(
                    "INSERT OR REPLACE INTO kv VALUES (?, ?, ?, NULL)",
                    ("ns", f"r{rep}-{i}", orjson.dumps({"i": i, "tool": "x"}).decode()),
                )
            raw.execute("COMMIT")

        rows.append(
            ("set", "raw sqlite3, one transaction (sync)", await best(repeat, n, raw_one_tx))
        )
    finally:
        raw.close()
    return rows


async def bench_redis(n: int, c: int, repeat: int, url: str) -> Rows:
    rows: Rows = []
    naive_n = min(n, 10_000)
    async with RedisStore(url, prefix="bench:") as store:
        await store._client.flushdb()

        async def ours_set(rep: int) -> None:
            await in_chunks(n, c, lambda i: store.set("ns", f"k{i}", {"i": i, "tool": "x"}))

        async def ours_get(rep: int) -> None:
            await in_chunks(n, c, lambda i: store.get("ns", f"k{i}"))

        async def ours_append(rep: int) -> None:
            await in_chunks(n, c, lambda i: store.append("log", {"i": i, "tool": "x"}))

        async def ours_get_seq(rep: int) -> None:
            for i in range(naive_n):
                await store.get("ns", f"k{i}")

        rows.append(("set", "RedisStore (pipelined)", await best(repeat, n, ours_set)))
        rows.append(("get", "RedisStore (pipelined)", await best(repeat, n, ours_get)))
        rows.append(("append", "RedisStore (pipelined XADD)", await best(repeat, n, ours_append)))
        rows.append(
            ("get", "RedisStore, one await each", await best(repeat, naive_n, ours_get_seq))
        )

        async def ours_query(rep: int) -> None:
            for _ in range(100):
                await store.query("log", limit=100)

        rows.append(
            ("newest-100 query", "RedisStore (XREVRANGE)", await best(repeat, 100, ours_query))
        )

    client = aioredis.Redis.from_url(url)
    try:

        async def naive_set(rep: int) -> None:
            for i in range(naive_n):
                await client.set(f"naive:k{i}", orjson.dumps({"i": i, "tool": "x"}))

        async def naive_get(rep: int) -> None:
            for i in range(naive_n):
                await client.get(f"naive:k{i}")

        async def naive_xadd(rep: int) -> None:
            for i in range(naive_n):
                await client.xadd("naive:log", {"d": orjson.dumps({"i": i, "tool": "x"})})

        async def raw_pipeline(rep: int) -> None:
            async with client.pipeline(transaction=False) as pipe:
                for i in range(n):
                    pipe.xadd("raw:log", {"d": orjson.dumps({"i": i, "tool": "x"})})
                await pipe.execute()

        rows.append(("set", "redis-py, one await per op", await best(repeat, naive_n, naive_set)))
        rows.append(("get", "redis-py, one await per op", await best(repeat, naive_n, naive_get)))
        rows.append(
            ("append", "redis-py XADD, one await per op", await best(repeat, naive_n, naive_xadd))
        )
        rows.append(
            ("append", "redis-py, one pipeline of all (floor)", await best(repeat, n, raw_pipeline))
        )
        await client.flushdb()
    finally:
        await client.aclose()
    return rows


def table(title: str, rows: Rows, ref: dict[str, str]) -> str:
    """Markdown table; each row's ratio is against the named reference of its workload."""
    out = [
        f"### {title}",
        "",
        "| workload | implementation | ops/s | ratio |",
        "|---|---|---:|---:|",
    ]
    base = {w: v for w, impl, v in rows if ref.get(w) == impl}
    for workload, impl, value in rows:
        ratio = f"{value / base[workload]:.1f}x" if workload in base else ""
        out.append(f"| {workload} | {impl} | {value:,.0f} | {ratio} |")
    refs = ", ".join(f"{w}: {i}" for w, i in ref.items())
    return "\n".join([*out, "", f"ratio = ops/s / reference ({refs})", ""])


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--n", type=int, default=100_000)
    parser.add_argument("--concurrency", type=int, default=5000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--redis-url", default=None)
    parser.add_argument("--skip-redis", action="store_true")
    args = parser.parse_args()
    print(
        f"cpus={os.cpu_count()} loadavg={os.getloadavg()[0]:.2f} n={args.n} repeat={args.repeat}\n"
    )
    with tempfile.TemporaryDirectory() as tmp:
        rows = await bench_sqlite(args.n, args.concurrency, args.repeat, Path(tmp))
    print(table("SQLite", rows, {"set": "aiosqlite, one await per op (one tx)"}))
    if args.skip_redis:
        return
    server = None
    url = args.redis_url
    if url is None:
        from tests.redis_server import RedisServer

        server = RedisServer().start()
        url = server.url()
    try:
        rows = await bench_redis(args.n, args.concurrency, args.repeat, url)
    finally:
        if server is not None:
            server.stop()
    ref = {
        "set": "redis-py, one await per op",
        "get": "redis-py, one await per op",
        "append": "redis-py XADD, one await per op",
    }
    print(table("Redis", rows, ref))
    print(f"loadavg after={os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    asyncio.run(main())
