"""Storage benchmark: our stores and their peers side by side, over the same workload.

Workload: N set, N get, N append (the loop builds each entry), then on an L-entry log the
newest-100 query and a filtered query (field equality matching ~0.1 % of entries, so it scans
the whole log), also right after a read-only reopen where the backend has one. The "kv set"
row is issue 10's KV workload: N awaited ``set(ns, f"k{i}", {"v": i})``, the loop building key
and value; its floor is an awaited coroutine that stores into a dict ("async floor"). The
"kv set, CPU time" row is the same loop timed by the process's CPU time (``time.process_time``,
every thread of the process, so the flush's worker threads count): on a machine loaded by
other processes wall-clock rates swing by 2-3 times between the rows of one run, CPU time far less.
"kv set CPU ÷ async floor beside it" divides that by the async floor's CPU-time rate measured
right after it in the same state of the process (the store's keys still in memory).

Peers: a plain dict (the physical floor, synchronous), diskcache, raw sqlite3 (one
transaction), redis-py used naively (one await per op). RedisStore and the redis-py peer each
start a private ``redis-server`` on a free 127.0.0.1 port (tests/redis_server.py) and stop it at
the end; both are left out when ``redis-server`` is not installed. Other backends join by adding
a ``Backend`` row to ``backends()``.

Multi-process rows (FileStore): 4 writer processes on one data dir, started together, each
appending L/4 entries (aggregate rate; loss must be 0) and then each setting N/4 keys
(aggregate rate); then newest-100 and the filtered scan over their merged logs (4 writer
slots), read by a read-only store.

Segment rows (FileStore, issue 12 item 8): the L-entry log rotated every 8 MiB, once with
plain segments and once gzip-compressed: bytes per record on disk, a page deep in the rotated
segments (offset 90 % of L), and the filtered scan through them.

Pure-Python rows (FileStore, MemoryStore): the key-value rows again with airstore's C speedups
off (``airstore/_speedups.c``), what an install without a C compiler runs.

Run: ``python bench/store_bench.py`` (N=100 k, L=1 M) or ``--quick`` (N=10 k, L=100 k).
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import importlib
import os
import shutil
import sqlite3
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

import orjson

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from airstore import FileStore, MemoryStore, Store, _accel

FILTER = {"tool": "rare"}
RARE_EVERY = 1000
KV_SET = "kv set (k{i}, {v: i})"
KV_SET_CPU = "kv set, CPU time"
KV_SET_BESIDE = "kv set CPU ÷ async floor beside it"
PURE_FILE = "FileStore (pure Python)"
PURE_MEMORY = "MemoryStore (pure Python)"


def make_entry(i: int) -> dict[str, Any]:
    tool = "rare" if i % RARE_EVERY == 0 else f"tool_{i % 37}"
    return {"tool": tool, "i": i, "layer": "L2", "ok": True, "ms": 1.25}


@dataclass
class Results:
    """Per backend: workload -> ops/s (rates) or seconds (queries)."""

    rows: dict[str, dict[str, float]] = field(default_factory=dict)

    def put(self, backend: str, workload: str, value: float) -> None:
        self.rows.setdefault(backend, {})[workload] = value


@dataclass
class Backend:
    """One column of the table; ``run`` fills ``Results`` for the workloads it supports."""

    name: str
    run: Callable[[str, int, int, Results], Awaitable[None]]
    ours: bool = False


def _median_time(fn: Callable[[], Any], repeat: int = 7) -> float:
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


async def _amedian_time(fn: Callable[[], Awaitable[Any]], repeat: int = 7) -> float:
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        await fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


# -- our stores, through the public async API ------------------------------------------------
async def _gathered(n: int, batch: int, op: Callable[[int], Awaitable[Any]]) -> None:
    """Issue ``op(i)`` for i < n, ``batch`` calls at a time (for stores that group-commit
    concurrent callers)."""
    for start in range(0, n, batch):
        await asyncio.gather(*(op(i) for i in range(start, min(n, start + batch))))


async def run_store(
    name: str,
    open_store: Callable[[str], Awaitable[Store]],
    reopen_read_only: Callable[[str], Awaitable[Store]] | None,
    tmp: str,
    n: int,
    log_n: int,
    res: Results,
    *,
    batch: int = 1,
    kv_only: bool = False,
) -> None:
    """The workload through the public async API; ``batch > 1`` issues calls concurrently;
    ``kv_only`` stops after the key-value rows (kv set, set, get)."""
    store = await open_store(tmp)
    try:
        gc.collect()
        t0, c0 = time.perf_counter(), time.process_time()
        if batch == 1:
            for i in range(n):
                await store.set("kv", f"k{i}", {"v": i})
        else:
            await _gathered(n, batch, lambda i: store.set("kv", f"k{i}", {"v": i}))
        await store.flush()
        res.put(name, KV_SET, n / (time.perf_counter() - t0))
        rate = n / (time.process_time() - c0)
        res.put(name, KV_SET_CPU, rate)
        # The floor measured right here, the store's keys still alive: both loops then build
        # their dicts in fresh memory (run apart, the later one reuses what the earlier freed).
        res.put(name, KV_SET_BESIDE, rate / await _async_floor_cpu(n))
        gc.collect()
        t0 = time.perf_counter()
        if batch == 1:
            for i in range(n):
                await store.set("bench", f"key:{i}", {"i": i, "name": "value", "ok": True})
        else:
            await _gathered(
                n, batch, lambda i: store.set("bench", f"key:{i}", {"i": i, "name": "value"})
            )
        await store.flush()
        res.put(name, "set", n / (time.perf_counter() - t0))
        t0 = time.perf_counter()
        if batch == 1:
            for i in range(n):
                await store.get("bench", f"key:{i}")
        else:
            await _gathered(n, batch, lambda i: store.get("bench", f"key:{i}"))
        res.put(name, "get", n / (time.perf_counter() - t0))
        if kv_only:
            return
        t0 = time.perf_counter()
        if batch == 1:
            for i in range(n):
                await store.append("bench.small", make_entry(i))
        else:
            await _gathered(n, batch, lambda i: store.append("bench.small", make_entry(i)))
        await store.flush()
        res.put(name, "append", n / (time.perf_counter() - t0))
        t0 = time.perf_counter()
        if batch == 1:
            for i in range(log_n):
                await store.append("bench.log", make_entry(i))
                if i % 4096 == 0:
                    await asyncio.sleep(0)  # a server's loop yields; let group commits happen
        else:
            await _gathered(log_n, batch, lambda i: store.append("bench.log", make_entry(i)))
        await store.flush()
        res.put(name, f"append {log_n // 1000}k (sustained)", log_n / (time.perf_counter() - t0))
        got = await store.query("bench.log", limit=100)
        assert len(got) == 100, len(got)
        assert got[0]["i"] == log_n - 1, got[:1]
        res.put(name, "newest-100", await _amedian_time(lambda: store.query("bench.log")))
        got = await store.query("bench.log", filter=FILTER, limit=10_000)
        assert len(got) == len(range(0, log_n, RARE_EVERY)), len(got)
        res.put(
            name,
            "filtered scan",
            await _amedian_time(lambda: store.query("bench.log", filter=FILTER, limit=10_000), 3),
        )
    finally:
        await store.close()
    if reopen_read_only is None:
        return
    t0 = time.perf_counter()
    reader = await reopen_read_only(tmp)
    got = await reader.query("bench.log", limit=100)
    res.put(name, "read-only reopen + newest-100", time.perf_counter() - t0)
    assert len(got) == 100
    try:
        res.put(
            name, "newest-100 (read-only)", await _amedian_time(lambda: reader.query("bench.log"))
        )
        res.put(
            name,
            "filtered scan (read-only)",
            await _amedian_time(lambda: reader.query("bench.log", filter=FILTER, limit=10_000), 3),
        )
    finally:
        await reader.close()


async def _open_memory(_tmp: str) -> Store:
    store = MemoryStore()
    await store.init()
    return store


async def _open_file(path: str) -> Store:
    store = FileStore(os.path.join(path, "data"))
    await store.init()
    return store


async def _open_file_reader(path: str) -> Store:
    store = FileStore(os.path.join(path, "data"), read_only=True)
    await store.init()
    return store


async def bench_memory(tmp: str, n: int, log_n: int, res: Results) -> None:
    await run_store("MemoryStore", _open_memory, None, tmp, n, log_n, res)


async def bench_file(tmp: str, n: int, log_n: int, res: Results) -> None:
    await run_store("FileStore", _open_file, _open_file_reader, tmp, n, log_n, res)


async def bench_memory_pure(tmp: str, n: int, log_n: int, res: Results) -> None:
    """MemoryStore without the C speedups (an install without a C compiler): the set rows."""
    with _accel.disabled():
        await run_store(PURE_MEMORY, _open_memory, None, tmp, n, log_n, res, kv_only=True)


async def bench_file_pure(tmp: str, n: int, log_n: int, res: Results) -> None:
    """FileStore without the C speedups (an install without a C compiler): the set rows."""
    with _accel.disabled():
        await run_store(PURE_FILE, _open_file, None, tmp, n, log_n, res, kv_only=True)


async def bench_sqlite_store(tmp: str, n: int, log_n: int, res: Results) -> None:
    module = importlib.import_module("airstore.sqlite")
    cls = module.SqliteStore

    async def open_sqlite(path: str) -> Store:
        store: Store = cls(os.path.join(path, "air.db"))
        await store.init()
        return store

    async def open_reader(path: str) -> Store:
        store: Store = cls(os.path.join(path, "air.db"), read_only=True)
        await store.init()
        return store

    # SqliteStore group-commits concurrent callers; sequential awaits would measure one
    # transaction per call, so its calls are issued 1000 at a time.
    await run_store("SqliteStore", open_sqlite, open_reader, tmp, n, log_n, res, batch=1000)


async def bench_redis_store(tmp: str, n: int, log_n: int, res: Results) -> None:
    from tests.redis_server import RedisServer

    cls = importlib.import_module("airstore.redis_store").RedisStore
    server = RedisServer().start()  # a private redis-server on a free 127.0.0.1 port

    async def open_redis(_path: str) -> Store:
        # max_log_entries=None: the 1 M-entry log must not be trimmed under the queries
        store: Store = cls(server.url(), prefix="bench:", max_log_entries=None)
        await store.init()
        return store

    async def open_reader(_path: str) -> Store:
        store: Store = cls(server.url(), prefix="bench:", read_only=True)
        await store.init()
        return store

    try:
        # RedisStore pipelines the calls of one loop turn; sequential awaits would measure one
        # round trip per call, so its calls are issued 1000 at a time (like SqliteStore).
        await run_store("RedisStore", open_redis, open_reader, tmp, n, log_n, res, batch=1000)
    finally:
        server.stop()


# -- peers -----------------------------------------------------------------------------------
async def bench_dict(tmp: str, n: int, log_n: int, res: Results) -> None:
    name = "dict (floor)"
    kv: dict[str, Any] = {}
    gc.collect()
    t0, c0 = time.perf_counter(), time.process_time()
    for i in range(n):
        kv[f"k{i}"] = {"v": i}
    res.put(name, KV_SET, n / (time.perf_counter() - t0))
    res.put(name, KV_SET_CPU, n / (time.process_time() - c0))
    kv = {}
    t0 = time.perf_counter()
    for i in range(n):
        kv[f"key:{i}"] = {"i": i, "name": "value", "ok": True}
    res.put(name, "set", n / (time.perf_counter() - t0))
    t0 = time.perf_counter()
    for i in range(n):
        kv.get(f"key:{i}")
    res.put(name, "get", n / (time.perf_counter() - t0))
    log: list[dict[str, Any]] = []
    t0 = time.perf_counter()
    for i in range(n):
        e = make_entry(i)
        e["_ts"] = int(time.time() * 1000)
        log.append(e)
    res.put(name, "append", n / (time.perf_counter() - t0))
    big: list[dict[str, Any]] = []
    t0 = time.perf_counter()
    for i in range(log_n):
        e = make_entry(i)
        e["_ts"] = int(time.time() * 1000)
        big.append(e)
    res.put(name, f"append {log_n // 1000}k (sustained)", log_n / (time.perf_counter() - t0))
    res.put(name, "newest-100", _median_time(lambda: big[-100:][::-1]))
    res.put(
        name,
        "filtered scan",
        _median_time(lambda: [e for e in reversed(big) if e["tool"] == "rare"], 3),
    )


async def _async_floor_cpu(n: int) -> float:
    """The async floor's kv set rate by CPU time (see ``bench_async_floor``)."""
    kv: dict[str, dict[str, Any]] = {}

    async def put(ns: str, key: str, value: Any) -> None:
        kv[key] = value

    gc.collect()
    c0 = time.process_time()
    for i in range(n):
        await put("kv", f"k{i}", {"v": i})
    return n / (time.process_time() - c0)


async def bench_async_floor(tmp: str, n: int, log_n: int, res: Results) -> None:
    """An awaited coroutine that stores into a dict: what any async ``set`` costs at least."""
    name = "async floor"
    kv: dict[str, dict[str, Any]] = {}

    async def put(ns: str, key: str, value: Any) -> None:
        kv[key] = value

    gc.collect()
    t0, c0 = time.perf_counter(), time.process_time()
    for i in range(n):
        await put("kv", f"k{i}", {"v": i})
    res.put(name, KV_SET, n / (time.perf_counter() - t0))
    res.put(name, KV_SET_CPU, n / (time.process_time() - c0))


async def bench_diskcache(tmp: str, n: int, log_n: int, res: Results) -> None:
    import diskcache

    name = "diskcache"
    n = min(n, 10_000)  # ~6 k sets/s: a rate from 10 k ops is as good and 10x shorter
    with diskcache.Cache(os.path.join(tmp, "dc")) as cache:
        t0 = time.perf_counter()
        for i in range(n):
            cache.set(f"k{i}", {"v": i})
        res.put(name, KV_SET, n / (time.perf_counter() - t0))
        t0 = time.perf_counter()
        for i in range(n):
            cache.set(f"key:{i}", {"i": i, "name": "value", "ok": True})
        res.put(name, "set", n / (time.perf_counter() - t0))
        t0 = time.perf_counter()
        for i in range(n):
            cache.get(f"key:{i}")
        res.put(name, "get", n / (time.perf_counter() - t0))
        t0 = time.perf_counter()
        for i in range(n):
            cache.push(make_entry(i), prefix="log")
        res.put(name, "append", n / (time.perf_counter() - t0))


async def bench_redis_naive(tmp: str, n: int, log_n: int, res: Results) -> None:
    """redis-py used naively: one awaited round trip per operation (issue 6's reference)."""
    import redis.asyncio as aioredis

    from tests.redis_server import RedisServer

    name = "redis-py (1 await/op)"
    n = min(n, 20_000)  # one round trip per op: a rate from 20 k ops is as good
    server = RedisServer().start()
    client = aioredis.Redis.from_url(server.url())
    try:
        t0 = time.perf_counter()
        for i in range(n):
            await client.set(f"kv:k{i}", orjson.dumps({"v": i}))
        res.put(name, KV_SET, n / (time.perf_counter() - t0))
        t0 = time.perf_counter()
        for i in range(n):
            await client.set(f"kv:key:{i}", orjson.dumps({"i": i, "name": "value", "ok": True}))
        res.put(name, "set", n / (time.perf_counter() - t0))
        t0 = time.perf_counter()
        for i in range(n):
            orjson.loads(await client.get(f"kv:key:{i}"))
        res.put(name, "get", n / (time.perf_counter() - t0))
        t0 = time.perf_counter()
        for i in range(n):
            await client.xadd("log", {"d": orjson.dumps(make_entry(i))})
        res.put(name, "append", n / (time.perf_counter() - t0))
    finally:
        await client.aclose()
        server.stop()


async def bench_sqlite3(tmp: str, n: int, log_n: int, res: Results) -> None:
    name = "sqlite3 (1 txn)"
    db = sqlite3.connect(os.path.join(tmp, "raw.db"))
    try:
        db.execute("PRAGMA journal_mode=WAL")
        db.execute("PRAGMA synchronous=NORMAL")
        db.execute("CREATE TABLE kv (k TEXT PRIMARY KEY, v BLOB)")
        db.execute("CREATE TABLE log (id INTEGER PRIMARY KEY, ts INTEGER, data BLOB)")
        t0 = time.perf_counter()
        with db:
            for i in range(n):
                db.execute(
                    "INSERT OR REPLACE INTO kv VALUES (?, ?)", (f"k{i}", orjson.dumps({"v": i}))
                )
        res.put(name, KV_SET, n / (time.perf_counter() - t0))
        db.execute("DELETE FROM kv")
        db.commit()
        t0 = time.perf_counter()
        with db:
            for i in range(n):
                v = orjson.dumps({"i": i, "name": "value", "ok": True})
                db.execute("INSERT OR REPLACE INTO kv VALUES (?, ?)", (f"key:{i}", v))
        res.put(name, "set", n / (time.perf_counter() - t0))
        t0 = time.perf_counter()
        for i in range(n):
            row = db.execute("SELECT v FROM kv WHERE k = ?", (f"key:{i}",)).fetchone()
            orjson.loads(row[0])
        res.put(name, "get", n / (time.perf_counter() - t0))
        for label, count in (("append", n), (f"append {log_n // 1000}k (sustained)", log_n)):
            t0 = time.perf_counter()
            with db:
                for i in range(count):
                    e = make_entry(i)
                    ts = int(time.time() * 1000)
                    e["_ts"] = ts
                    db.execute("INSERT INTO log (ts, data) VALUES (?, ?)", (ts, orjson.dumps(e)))
            res.put(name, label, count / (time.perf_counter() - t0))
            if label == "append":
                db.execute("DELETE FROM log")
                db.commit()

        def newest() -> list[Any]:
            rows = db.execute("SELECT data FROM log ORDER BY id DESC LIMIT 100").fetchall()
            return [orjson.loads(r[0]) for r in rows]

        def filtered() -> list[Any]:
            rows = db.execute(
                "SELECT data FROM log WHERE json_extract(data, '$.tool') = ? ORDER BY id DESC",
                ("rare",),
            ).fetchall()
            return [orjson.loads(r[0]) for r in rows]

        res.put(name, "newest-100", _median_time(newest))
        res.put(name, "filtered scan", _median_time(filtered, 3))
    finally:
        db.close()


# -- several processes on one data dir ---------------------------------------------------------
WORKERS = 4


async def _worker(kind: str, path: str, writer: int, count: int, go: float) -> None:
    """One of the processes of ``bench_multi``: waits for the common start, then works."""
    store = FileStore(path)
    await store.init()
    await asyncio.sleep(max(0.0, go - time.time()))
    t0 = time.time()
    if kind == "append":
        for i in range(count):
            await store.append("multi.log", make_entry(i * WORKERS + writer))
            if i % 4096 == 0:
                await asyncio.sleep(0)  # a server's loop yields; let group commits happen
    else:
        for i in range(count):
            await store.set("multi", f"w{writer}k{i}", {"v": i})
            if i % 4096 == 0:
                await asyncio.sleep(0)
    await store.flush()
    t1 = time.time()
    await store.close()
    print(orjson.dumps({"t0": t0, "t1": t1}).decode(), flush=True)


def _run_workers(kind: str, path: str, count: int) -> float:
    """Start the workers together; return the aggregate rate (operations per second)."""
    import subprocess

    go = time.time() + 1.5  # every process imported and opened its store by then
    procs = [
        subprocess.Popen(
            [sys.executable, __file__, "--worker", kind, path, str(w), str(count), repr(go)],
            stdout=subprocess.PIPE,
        )
        for w in range(WORKERS)
    ]
    spans = []
    for proc in procs:
        out, _ = proc.communicate(timeout=600)
        assert proc.returncode == 0, f"{kind} worker failed"
        spans.append(orjson.loads(out.splitlines()[-1]))
    elapsed = max(s["t1"] for s in spans) - min(s["t0"] for s in spans)
    return WORKERS * count / elapsed


async def bench_multi(tmp: str, n: int, log_n: int, res: Results) -> None:
    name = "FileStore ×4 processes"
    path = os.path.join(tmp, "data")
    per = log_n // WORKERS
    res.put(name, f"append {log_n // 1000}k (sustained)", _run_workers("append", path, per))
    reader = FileStore(path, read_only=True)
    await reader.init()
    try:
        every = await reader.query("multi.log", limit=10**7)
        assert len(every) == WORKERS * per, f"lost {WORKERS * per - len(every)} entries"
        assert sorted(e["i"] for e in every) == list(range(WORKERS * per))
        res.put(name, "newest-100", await _amedian_time(lambda: reader.query("multi.log")))
        got = await reader.query("multi.log", filter=FILTER, limit=10_000)
        assert len(got) == len(range(0, WORKERS * per, RARE_EVERY)), len(got)
        res.put(
            name,
            "filtered scan",
            await _amedian_time(lambda: reader.query("multi.log", filter=FILTER, limit=10_000), 3),
        )
    finally:
        await reader.close()
    res.put(name, KV_SET, _run_workers("set", path, n // WORKERS))
    async with FileStore(path, read_only=True) as reader:
        assert len(await reader.list("multi")) == n // WORKERS * WORKERS


# -- rotated segments, plain and compressed ----------------------------------------------------
SEGMENT_BYTES = 8 << 20


def _log_bytes(path: str, prefix: str) -> int:
    files = [f for f in os.listdir(path) if f.startswith(prefix)]
    return sum(os.path.getsize(os.path.join(path, f)) for f in files)


async def _segments(name: str, path: str, log_n: int, res: Results, *, compress: bool) -> None:
    store = FileStore(path, max_log_bytes=SEGMENT_BYTES, compress_segments=compress)
    await store.init()
    try:
        for i in range(log_n):
            await store.append("seg.log", make_entry(i))
            if i % 4096 == 0:
                await asyncio.sleep(0)
        await store.flush()
        res.put(name, "bytes/record on disk", _log_bytes(path, "seg.log.") / log_n)
        deep = int(log_n * 0.9)
        got = await store.query("seg.log", limit=100, offset=deep)
        assert got[0]["i"] == log_n - 1 - deep, got[:1]
        res.put(
            name,
            "page at offset 90 %",
            await _amedian_time(lambda: store.query("seg.log", limit=100, offset=deep), 3),
        )
        res.put(
            name,
            "filtered scan",
            await _amedian_time(lambda: store.query("seg.log", filter=FILTER, limit=10_000), 3),
        )
    finally:
        await store.close()


async def bench_plain_segments(tmp: str, n: int, log_n: int, res: Results) -> None:
    path = os.path.join(tmp, "plain")
    await _segments("FileStore plain segments", path, log_n, res, compress=False)


async def bench_gz_segments(tmp: str, n: int, log_n: int, res: Results) -> None:
    path = os.path.join(tmp, "gz")
    await _segments("FileStore gz segments", path, log_n, res, compress=True)


def backends() -> list[Backend]:
    """The table's columns; add a row here for a new backend."""
    rows = [
        Backend("FileStore", bench_file, ours=True),
        Backend("FileStore ×4 processes", bench_multi, ours=True),
        Backend("FileStore plain segments", bench_plain_segments, ours=True),
        Backend("FileStore gz segments", bench_gz_segments, ours=True),
        Backend("MemoryStore", bench_memory, ours=True),
        Backend(PURE_FILE, bench_file_pure, ours=True),
        Backend(PURE_MEMORY, bench_memory_pure, ours=True),
    ]
    try:
        importlib.import_module("airstore.sqlite")
        rows.append(Backend("SqliteStore", bench_sqlite_store, ours=True))
    except ImportError:
        pass
    redis_ok = shutil.which("redis-server") is not None
    if redis_ok:
        rows.append(Backend("RedisStore", bench_redis_store, ours=True))
    rows += [
        Backend("dict (floor)", bench_dict),
        Backend("async floor", bench_async_floor),
        Backend("diskcache", bench_diskcache),
        Backend("sqlite3 (1 txn)", bench_sqlite3),
    ]
    if redis_ok:
        rows.append(Backend("redis-py (1 await/op)", bench_redis_naive))
    return rows


def _fmt(workload: str, value: float | None) -> str:
    if value is None:
        return "—"
    if "÷" in workload:
        return f"{value:.2f}"
    if "bytes" in workload:
        return f"{value:.0f} B"
    if any(word in workload for word in ("newest", "scan", "reopen", "page")):
        return f"{value * 1000:.2f} ms"
    return f"{value / 1000:,.0f} k/s"


def print_table(res: Results, order: list[str], n: int, log_n: int) -> None:
    workloads: list[str] = []
    for row in res.rows.values():
        workloads += [w for w in row if w not in workloads]
    ref = "FileStore"
    print(f"\nN = {n:,} KV ops / appends; log = {log_n:,} entries")
    built = "built and on" if _accel.speedups is not None else "off (AIR_SPEEDUPS=off or not built)"
    print(f"airstore C speedups (the set path of FileStore and MemoryStore): {built}")
    print(
        "ratio = FileStore ÷ backend for rates, backend ÷ FileStore for times (>1: FileStore faster)"
    )
    header = "| workload | " + " | ".join(order) + " |"
    print(header)
    print("|" + "---|" * (len(order) + 1))
    for w in workloads:
        cells = []
        for b in order:
            v = res.rows.get(b, {}).get(w)
            r = res.rows.get(ref, {}).get(w)
            text = _fmt(w, v)
            if v is not None and r is not None and b != ref and "÷" not in w:
                timed = any(word in w for word in ("newest", "scan", "reopen", "page", "bytes"))
                ratio = v / r if timed else r / v
                text += f" ({ratio:.2g}×)"
            cells.append(text)
        print(f"| {w} | " + " | ".join(cells) + " |")


def print_floor_ratios(res: Results) -> None:
    """Issue 10's targets are fractions of the async floor measured in the same run."""
    floor = res.rows.get("async floor", {})
    for w in (KV_SET, KV_SET_CPU):
        if w not in floor:
            continue
        ratios = [
            f"{b} {v[w] / floor[w]:.2f}"
            for b, v in res.rows.items()
            if w in v and b != "async floor"
        ]
        print(f"\n{w} ÷ async floor: " + ", ".join(ratios))


async def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "--worker":
        kind, path, writer, count, go = sys.argv[2:7]
        await _worker(kind, path, int(writer), int(count), float(go))
        return
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="N=10k, log of 100k (smoke run)")
    parser.add_argument("--only", help="comma-separated backend names")
    args = parser.parse_args()
    n, log_n = (10_000, 100_000) if args.quick else (100_000, 1_000_000)
    res = Results()
    rows = backends()
    if args.only:
        wanted = set(args.only.split(","))
        rows = [b for b in rows if b.name in wanted]
    for b in rows:
        with tempfile.TemporaryDirectory(prefix="airbench-") as tmp:
            print(f"running {b.name} …", file=sys.stderr, flush=True)
            await b.run(tmp, n, log_n, res)
    print_table(res, [b.name for b in rows], n, log_n)
    print_floor_ratios(res)


if __name__ == "__main__":
    asyncio.run(main())
