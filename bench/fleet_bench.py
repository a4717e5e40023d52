"""RedisStore on the fleet's topologies, side by side in one run; prints a table with ratios.

Run: ``.venv/bin/python bench/fleet_bench.py [--n 20000] [--repeat 3]``.

It starts, on free 127.0.0.1 ports: one ``redis-server``; one master with a replica (for
``durability="replicated"``); a 6-node Redis Cluster (3 masters, 3 replicas). Each workload
runs through the public async API, ``--concurrency`` operations in flight, on every topology in
turn in every round (so all see the same background load); a figure is the best round. The
peer beside ours is redis-py itself on one node: one pipelined ``SET`` per key (what a client
without our batching and scripts does at best). Ratios are against ``one node``.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import redis.asyncio as aioredis

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from airstore import RedisStore
from tests.redis_server import RedisServer
from tests.redis_topology import RedisClusterGroup

Run = Callable[[RedisStore, int, int], Awaitable[None]]


async def in_chunks(n: int, chunk: int, make: Callable[[int], Awaitable[Any]]) -> None:
    for base in range(0, n, chunk):
        await asyncio.gather(*(make(i) for i in range(base, min(n, base + chunk))))


async def kv_set(store: RedisStore, n: int, c: int) -> None:
    await in_chunks(n, c, lambda i: store.set(f"ns{i % 16}", f"k{i}", {"i": i}))


async def append(store: RedisStore, n: int, c: int) -> None:
    await in_chunks(n, c, lambda i: store.append(f"log{i % 4}", {"i": i, "tool": "x"}))


async def meter_records(store: RedisStore, n: int, c: int) -> None:
    """What the meter's store sink writes per delivery: the records, then minute rollups."""
    for base in range(0, n, c):
        rows = [{"tool": f"t{i % 8}", "ms": 1.5, "ok": True} for i in range(base, base + c)]
        await store.append_many("meter.calls", rows)
        await asyncio.gather(
            *(store.incr("meter.rollups.1", f"t{t}:calls", by=c // 8) for t in range(8))
        )


WORKLOADS: dict[str, Run] = {"kv set": kv_set, "append": append, "meter records": meter_records}


async def peer_set(url: str, n: int, c: int) -> None:
    client = aioredis.Redis.from_url(url)
    try:
        for base in range(0, n, c):
            async with client.pipeline(transaction=False) as pipe:
                for i in range(base, min(n, base + c)):
                    pipe.set(f"floor:k{i}", b'|{"i":1}')
                await pipe.execute()
    finally:
        await client.aclose()


async def main(n: int, c: int, repeat: int) -> None:
    with (
        RedisServer() as one,
        RedisServer() as master,
        RedisServer(extra_args=("--replicaof", "127.0.0.1", "0")) as replica,
        RedisClusterGroup() as cluster,
    ):
        fix = aioredis.Redis(port=replica.port)
        await fix.execute_command("REPLICAOF", "127.0.0.1", master.port)
        for _ in range(200):
            if (await fix.info("replication")).get("master_link_status") == "up":
                break
            await asyncio.sleep(0.05)
        await fix.aclose()
        topologies = {
            "one node": (one.url(), {}),
            "one node + replica, replicated": (master.url(), {"durability": "replicated"}),
            "cluster (3 masters)": (cluster.url(), {}),
            "cluster, replicated": (cluster.url(), {"durability": "replicated"}),
        }
        best: dict[tuple[str, str], float] = {}
        stores = {
            name: RedisStore(url, prefix=f"bench{r}:", **opts)  # type: ignore[arg-type]
            for r, (name, (url, opts)) in enumerate(topologies.items())
        }
        for store in stores.values():
            await store.init()
        try:
            for _ in range(repeat):
                start = time.perf_counter()
                await peer_set(one.url(), n, c)
                rate = n / (time.perf_counter() - start)
                best["kv set", "peer: redis-py pipelined SETs, one node"] = max(
                    best.get(("kv set", "peer: redis-py pipelined SETs, one node"), 0.0), rate
                )
                for work, run in WORKLOADS.items():
                    for name, store in stores.items():
                        start = time.perf_counter()
                        await run(store, n, c)
                        rate = n / (time.perf_counter() - start)
                        best[work, name] = max(best.get((work, name), 0.0), rate)
        finally:
            for store in stores.values():
                await store.close()
    print(f"RedisStore by topology: {n} operations, {c} in flight, best of {repeat}")
    print(f"{'workload':<15} {'topology':<38} {'ops/s':>10} {'vs one node':>12}")
    for (work, name), rate in best.items():
        base = best.get((work, "one node"), rate)
        print(f"{work:<15} {name:<38} {rate:>10,.0f} {rate / base:>11.2f}x")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--n", type=int, default=20_000)
    parser.add_argument("--concurrency", type=int, default=256)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    asyncio.run(main(args.n, args.concurrency, args.repeat))
