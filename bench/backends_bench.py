"""SqliteStore and RedisStore against their peers, in one process; prints tables with ratios.

Run: ``.venv/bin/python bench/backends_bench.py [--n 100000] [--redis-url redis://…]``.
Without ``--redis-url`` a temporary ``redis-server`` is started on a free 127.0.0.1 port.
Each figure is the best of ``--repeat`` rounds, and every round runs all variants in turn, so
ours and the peers see the same background load on a shared machine. Ours go through the
public async API, one coroutine per operation, ``--concurrency`` of them in flight
(``asyncio.gather``): the case the stores group-commit.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
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
Variant = tuple[str, str, int, Callable[[int], Awaitable[None]]]  # (workload, impl, ops, run)
UPSERT = "INSERT OR REPLACE INTO kv VALUES (?, ?, ?, NULL)"


async def run_all(variants: list[Variant], repeat: int) -> Rows:
    """Best ops/s of each variant over ``repeat`` rounds of all variants in turn."""
    top: dict[tuple[str, str], float] = {}
    for rep in range(repeat):
        for workload, impl, n, run in variants:
            start = time.perf_counter()
            await run(rep)
            rate = n / (time.perf_counter() - start)
            top[workload, impl] = max(top.get((workload, impl), 0.0), rate)
    return [(w, i, top[w, i]) for w, i, _n, _r in variants]


async def in_chunks(n: int, chunk: int, make: Callable[[int], Awaitable[Any]]) -> None:
    for base in range(0, n, chunk):
        await asyncio.gather(*(make(i) for i in range(base, min(n, base + chunk))))


def doc(i: int) -> dict[str, Any]:
    return {"i": i, "tool": "x"}


async def bench_sqlite(n: int, c: int, repeat: int, tmp: Path) -> Rows:
    small, few = min(n, 20_000), min(n, 2000)
    async with contextlib.AsyncExitStack() as stack:
        store = await stack.enter_async_context(SqliteStore(tmp / "ours.db"))
        db = await aiosqlite.connect(tmp / "peer.db", isolation_level=None)
        stack.push_async_callback(db.close)
        await db.execute("PRAGMA journal_mode=WAL")
        await db.execute("PRAGMA synchronous=NORMAL")
        await db.executescript(SCHEMA)
        raw = sqlite3.connect(tmp / "raw.db", isolation_level=None)
        stack.callback(raw.close)
        raw.execute("PRAGMA journal_mode=WAL")
        raw.execute("PRAGMA synchronous=NORMAL")
        raw.executescript(SCHEMA)

        async def noop(i: int) -> None:
            return None

        async def floor(rep: int) -> None:
            await in_chunks(n, c, noop)

        async def ours_set(rep: int) -> None:
            await in_chunks(n, c, lambda i: store.set("ns", f"k{rep}-{i}", doc(i)))

        async def ours_set_writers(rep: int) -> None:
            async def writer(w: int) -> None:
                for base in range(w * 1000, n, 4000):
                    keys = range(base, min(n, base + 1000))
                    await asyncio.gather(*(store.set("ns", f"w{rep}-{i}", doc(i)) for i in keys))

            await asyncio.gather(*(writer(w) for w in range(4)))

        async def ours_append(rep: int) -> None:
            await in_chunks(n, c, lambda i: store.append("log", doc(i)))

        async def ours_set_many(rep: int) -> None:
            for base in range(0, n, c):
                await store.set_many("ns", ((f"m{rep}-{i}", doc(i)) for i in range(base, base + c)))

        async def ours_append_many(rep: int) -> None:
            for base in range(0, n, c):
                await store.append_many("log", (doc(i) for i in range(base, base + c)))

        async def ours_get(rep: int) -> None:
            await in_chunks(n, c, lambda i: store.get("ns", f"k0-{i}"))

        async def ours_get_seq(rep: int) -> None:
            for i in range(small):
                await store.get("ns", f"k0-{i}")

        async def ours_query(rep: int) -> None:
            for _ in range(100):
                await store.query("log", limit=100)

        async def ours_filter(rep: int) -> None:
            await store.query("log", limit=100, filter={"i": n // 2})

        async def peer_one_tx(rep: int) -> None:
            await db.execute("BEGIN")
            for i in range(small):
                row = ("ns", f"p{rep}-{i}", orjson.dumps(doc(i)).decode())
                await db.execute(UPSERT, row)
            await db.commit()

        async def peer_autocommit(rep: int) -> None:
            for i in range(few):
                await db.execute(UPSERT, ("ns", f"a{rep}-{i}", orjson.dumps(doc(i)).decode()))

        async def raw_one_tx(rep: int) -> None:
            raw.execute("BEGIN")
            for i in range(n):
                raw.execute(UPSERT, ("ns", f"r{rep}-{i}", orjson.dumps(doc(i)).decode()))
            raw.execute("COMMIT")

        return await run_all(
            [
                ("async floor", "gather of no-op coroutines", n, floor),
                ("set", "SqliteStore (group commit)", n, ours_set),
                ("set", "SqliteStore, 4 writers x 1000 in flight", n, ours_set_writers),
                ("set", "SqliteStore.set_many, 5000 per call", n, ours_set_many),
                ("set", "aiosqlite, one await per op (one tx)", small, peer_one_tx),
                ("set", "aiosqlite, one await + commit per op", few, peer_autocommit),
                ("set", "raw sqlite3, one transaction (sync)", n, raw_one_tx),
                ("append", "SqliteStore (group commit)", n, ours_append),
                ("append", "SqliteStore.append_many, 5000 per call", n, ours_append_many),
                ("get", "SqliteStore, concurrent", n, ours_get),
                ("get", "SqliteStore, one await each", small, ours_get_seq),
                ("newest-100 query", "SqliteStore", 100, ours_query),
                ("filtered query, 1 match", "SqliteStore (json_extract)", 1, ours_filter),
            ],
            repeat,
        )


async def bench_redis(n: int, c: int, repeat: int, url: str) -> Rows:
    naive_n = min(n, 10_000)
    async with contextlib.AsyncExitStack() as stack:
        store = await stack.enter_async_context(RedisStore(url, prefix="bench:"))
        client = aioredis.Redis.from_url(url)
        stack.push_async_callback(client.aclose)
        await client.flushdb()

        async def ours_set(rep: int) -> None:
            await in_chunks(n, c, lambda i: store.set("ns", f"k{i}", doc(i)))

        async def ours_get(rep: int) -> None:
            await in_chunks(n, c, lambda i: store.get("ns", f"k{i}"))

        async def ours_append(rep: int) -> None:
            await in_chunks(n, c, lambda i: store.append("log", doc(i)))

        async def ours_get_seq(rep: int) -> None:
            for i in range(naive_n):
                await store.get("ns", f"k{i}")

        async def ours_append_writers(rep: int) -> None:
            async def writer(w: int) -> None:
                for base in range(w * 1000, n, 4000):
                    batch = range(base, min(n, base + 1000))
                    await asyncio.gather(*(store.append("log", doc(i)) for i in batch))

            await asyncio.gather(*(writer(w) for w in range(4)))

        async def ours_set_many(rep: int) -> None:
            for base in range(0, n, c):
                await store.set_many("ns", ((f"k{i}", doc(i)) for i in range(base, base + c)))

        async def ours_append_many(rep: int) -> None:
            for base in range(0, n, c):
                await store.append_many("log", (doc(i) for i in range(base, base + c)))

        async def ours_query(rep: int) -> None:
            for _ in range(100):
                await store.query("log", limit=100)

        async def naive_set(rep: int) -> None:
            for i in range(naive_n):
                await client.set(f"naive:k{i}", orjson.dumps(doc(i)))

        async def naive_get(rep: int) -> None:
            for i in range(naive_n):
                await client.get(f"naive:k{i}")

        async def naive_xadd(rep: int) -> None:
            for i in range(naive_n):
                await client.xadd("naive:log", {"d": orjson.dumps(doc(i))})

        async def one_pipeline(rep: int) -> None:
            async with client.pipeline(transaction=False) as pipe:
                for i in range(n):
                    pipe.xadd("raw:log", {"d": orjson.dumps(doc(i))})
                await pipe.execute()

        rows = await run_all(
            [
                ("set", "RedisStore (pipelined)", n, ours_set),
                ("set", "RedisStore.set_many, 5000 per call", n, ours_set_many),
                ("set", "redis-py, one await per op", naive_n, naive_set),
                ("get", "RedisStore (pipelined)", n, ours_get),
                ("get", "RedisStore, one await each", naive_n, ours_get_seq),
                ("get", "redis-py, one await per op", naive_n, naive_get),
                ("append", "RedisStore (pipelined)", n, ours_append),
                ("append", "RedisStore, 4 writers x 1000 in flight", n, ours_append_writers),
                ("append", "RedisStore.append_many, 5000 per call", n, ours_append_many),
                ("append", "redis-py XADD, one await per op", naive_n, naive_xadd),
                ("append", "redis-py, one pipeline of all XADDs", n, one_pipeline),
                ("newest-100 query", "RedisStore (XREVRANGE)", 100, ours_query),
            ],
            repeat,
        )
        await client.flushdb()
        return rows


def table(title: str, rows: Rows, ref: dict[str, str]) -> str:
    """Markdown table; each row's ratio is against its workload's reference implementation."""
    out = [f"### {title}", "", "| workload | implementation | ops/s | ratio |"]
    out.append("|---|---|---:|---:|")
    base = {w: v for w, impl, v in rows if ref.get(w) == impl}
    for workload, impl, value in rows:
        ratio = f"{value / base[workload]:.1f}x" if workload in base else ""
        out.append(f"| {workload} | {impl} | {value:,.0f} | {ratio} |")
    refs = "; ".join(f"{w}: {i}" for w, i in ref.items())
    return "\n".join([*out, "", f"ratio = ops/s over the reference ({refs})", ""])


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--n", type=int, default=100_000)
    parser.add_argument("--concurrency", type=int, default=5000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--redis-url", default=None)
    parser.add_argument("--skip-redis", action="store_true")
    args = parser.parse_args()
    load = os.getloadavg()[0]
    print(f"cpus={os.cpu_count()} loadavg={load:.2f} n={args.n} repeat={args.repeat}\n")
    with tempfile.TemporaryDirectory() as tmp:
        rows = await bench_sqlite(args.n, args.concurrency, args.repeat, Path(tmp))
    print(table("SQLite", rows, {"set": "aiosqlite, one await per op (one tx)"}))
    if not args.skip_redis:
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
        naive = "redis-py, one await per op"
        ref = {"set": naive, "get": naive, "append": "redis-py XADD, one await per op"}
        print(table("Redis", rows, ref))
    print(f"loadavg after={os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    asyncio.run(main())
