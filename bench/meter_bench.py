"""Metering benchmark: what the meter adds to a call, how fast records reach a store, and how
fast a snapshot over a large history is.

1. Per call, in process: a bare ``await call_next(ctx)`` against the same call through the
   meter middleware (hot path only, and amortized with background delivery), against a bare
   OpenTelemetry SDK span (no exporter), and a real aircore server's ``call_tool`` with and
   without ``meter=``.
2. Records per second sustained into a store through ``StoreSink`` (FileStore, MemoryStore,
   SqliteStore and RedisStore — a real ``redis-server`` started for the run), against the
   anti-pattern peer (one ``aiofiles`` append per record).
3. Snapshot over N calls (default 1 M) written by ``StoreSink`` to a FileStore: cold (another
   process opens the store read-only and summarizes) and warm (the same reader again),
   against the peer that parses the whole call log and computes the same numbers.

Run: ``python bench/meter_bench.py`` (1 M-call history) or ``--quick`` (100 k);
``--sections 2`` runs only the store-delivery table, ``--skip-redis`` leaves Redis out.
"""

from __future__ import annotations

import argparse
import asyncio
import math
import os
import random
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from typing import Any

import orjson

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from aircore import define_server, define_tool
from airmeter import (
    CALLS_NAMESPACE,
    CallRecord,
    Layer,
    Meter,
    MeterMiddleware,
    RollupReader,
)
from airmeter.store_sink import StoreSink
from airstore import MemoryStore, RedisStore, SqliteStore
from airstore.file import FileStore

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

TOOLS = [
    ("health", 1),
    ("get_user", 2),
    ("list_files", 2),
    ("format_date", 3),
    ("summarize_text", 4),
    ("count_words", 4),
    ("fetch_url", 5),
    ("post_webhook", 5),
    ("generate_reply", 6),
    ("embed_text", 6),
    ("plan_trip", 7),
    ("run_agent", 7),
]


class Ctx:
    """The attributes aircore's ToolContext gives a meter hook."""

    def __init__(self, tool: str) -> None:
        self.tool_name = tool
        self.arguments = {"user_id": "u1"}
        self.request_id = "1"
        self.session_id = None
        self.protocol_version = "2025-11-25"
        self.transport = "inproc"
        self.client_name = "bench"
        self.server_name = "bench"
        self.layer = None
        self.annotations = None
        self.tool_meta = None
        self.usage: dict[str, Any] = {}
        self.input_schema: dict[str, Any] | None = None
        self.call_id: str | None = None
        self.traceparent: str | None = None
        self.tracestate: str | None = None


class CountSink:
    """A sink that only counts (the cost of delivery itself, without keeping records)."""

    def __init__(self) -> None:
        self.count = 0

    async def write(self, records: Any) -> None:
        self.count += len(records)

    async def close(self) -> None:
        pass


async def _best_of(fn: Callable[[], Awaitable[None]], n: int, repeats: int) -> float:
    """Best per-iteration time in microseconds over ``repeats`` runs of ``n`` calls."""
    best = math.inf
    for _ in range(repeats):
        t0 = time.perf_counter()
        for _ in range(n):
            await fn()
        best = min(best, (time.perf_counter() - t0) / n * 1e6)
    return best


async def per_call(n: int, repeats: int) -> list[tuple[str, float]]:
    ctx = Ctx("get_user")
    result = {"name": "Alice"}

    async def call_next(c: Any) -> Any:
        return result

    def new_mw(**kw: Any) -> MeterMiddleware:
        return MeterMiddleware(
            Meter(max_pending=10**8, batch_size=10**8, flush_interval=3600, ring_size=1024), **kw
        )

    sizes, nosizes = new_mw(), new_mw(measure_sizes=False)
    rows = [("bare call_next", await _best_of(lambda: call_next(ctx), n, repeats))]
    rows.append(
        ("meter middleware, hot path", await _best_of(lambda: sizes(ctx, call_next), n, repeats))
    )
    rows.append(
        (
            "meter, hot path, no byte sizes",
            await _best_of(lambda: nosizes(ctx, call_next), n, repeats),
        )
    )
    for mw in (sizes, nosizes):
        mw.meter._pending.clear()

    # amortized: the same calls with the delivery task running into a counting sink
    sink = CountSink()
    meter = Meter(sinks=[sink], flush_interval=0.05)
    await meter.start()
    amortized = MeterMiddleware(meter)

    async def through_delivery() -> None:
        await amortized(ctx, call_next)

    best = math.inf
    for _ in range(repeats):
        t0 = time.perf_counter()
        for i in range(n):
            await through_delivery()
            if i % 256 == 0:  # a server yields to the loop on I/O; let the delivery task run
                await asyncio.sleep(0)
        await meter.flush()
        best = min(best, (time.perf_counter() - t0) / n * 1e6)
    await meter.stop()
    rows.append(("meter + background delivery (amortized)", best))

    from opentelemetry.sdk.trace import TracerProvider

    tracer = TracerProvider().get_tracer("bench")

    async def with_span() -> None:
        with tracer.start_as_current_span("tools/call get_user"):
            await call_next(ctx)

    rows.append(("bare OTel SDK span (no exporter)", await _best_of(with_span, n, repeats)))

    def handler(params: dict[str, Any]) -> dict[str, Any]:
        return result

    tool = define_tool(name="get_user", params={"user_id": "string"}, handler=handler)
    plain = define_server(name="bench", tools=[tool], storage=MemoryStore())
    hooked_meter = Meter(sinks=[CountSink()], flush_interval=0.05)
    metered = define_server(
        name="bench", tools=[tool], storage=MemoryStore(), meter=MeterMiddleware(hooked_meter)
    )
    async with plain, metered:
        args = {"user_id": "u1"}
        rows.append(
            (
                "aircore call_tool, no meter",
                await _best_of(lambda: plain.call_tool("get_user", args), n // 4, repeats),
            )
        )
        rows.append(
            (
                "aircore call_tool, meter=",
                await _best_of(lambda: metered.call_tool("get_user", args), n // 4, repeats),
            )
        )
    await hooked_meter.stop()
    return rows


def make_records(n: int, *, minutes: int, seed: int = 1) -> list[CallRecord]:
    rng = random.Random(seed)
    start = (int(time.time() * 1000) // 60_000 - minutes) * 60_000
    step = minutes * 60_000 / n
    out = []
    for i in range(n):
        tool, layer = TOOLS[rng.randrange(len(TOOLS))]
        ok = rng.random() > 0.05
        out.append(CallRecord(
            ts_ms=start + int(i * step), server="bench", tool=tool, layer=Layer(layer),
            latency_ms=round(math.exp(rng.gauss(math.log(1.5 * layer), 0.8)), 3), ok=ok,
            error_type=None if ok else "tool_error", request_id=str(i), instance_id="i-1",
        ))  # fmt: skip
    return out


async def write_rate(records: list[CallRecord], store: Any) -> float:
    sink = StoreSink(store, writer="bench")
    t0 = time.perf_counter()
    for i in range(0, len(records), 2048):
        await sink.write(records[i : i + 2048])
    await sink.close()
    return len(records) / (time.perf_counter() - t0)


async def aiofiles_peer(records: list[CallRecord], path: str) -> float:
    import aiofiles

    t0 = time.perf_counter()
    for rec in records:
        async with aiofiles.open(path, "ab") as f:
            await f.write(orjson.dumps(rec.to_log()) + b"\n")
    return len(records) / (time.perf_counter() - t0)


READER = r"""
import asyncio, sys, time
t0 = time.perf_counter()
from airmeter import RollupReader, CALLS_NAMESPACE
from airstore.file import FileStore
t_import = time.perf_counter() - t0

async def main():
    t0 = time.perf_counter()
    async with FileStore(sys.argv[1], read_only=True) as store:
        t_open = time.perf_counter() - t0
        reader = RollupReader(store)  # kept, as the dashboard and Meter.snapshot keep theirs
        t1 = time.perf_counter()
        cold = await reader.snapshot()
        t_cold = time.perf_counter() - t1
        warm = []
        for _ in range(5):
            t2 = time.perf_counter()
            await reader.snapshot()
            warm.append(time.perf_counter() - t2)
        t3 = time.perf_counter()
        filtered = await reader.snapshot(tool="fetch_url")
        t_filtered = time.perf_counter() - t3
        print(cold.total_calls, t_import, t_open, t_cold, min(warm), t_filtered, cold.p95_ms)

asyncio.run(main())
"""


async def live_refresh(writer: FileStore, data: str) -> float:
    """Best snapshot time of a read-only reader just after the writer stored new calls."""
    sink = StoreSink(writer, writer="live", persist_interval=0)
    fresh = make_records(5000, minutes=1, seed=5)
    best = math.inf
    async with FileStore(data, read_only=True) as store:
        reader = RollupReader(store)
        await reader.snapshot()
        for i in range(5):
            await sink.write(fresh[i * 1000 : (i + 1) * 1000])
            await writer.flush()
            t0 = time.perf_counter()
            await reader.snapshot()
            best = min(best, time.perf_counter() - t0)
    await sink.close()
    return best


async def naive_peer(path: str, n: int) -> tuple[float, int, float | None]:
    """Read every call from the log and compute totals and percentiles from scratch."""
    t0 = time.perf_counter()
    async with FileStore(path, read_only=True) as store:
        entries = await store.query(CALLS_NAMESPACE, limit=n + 10_000)
        lat = sorted(e["latency_ms"] for e in entries)
        by_tool: dict[str, int] = {}
        for e in entries:
            by_tool[e["tool"]] = by_tool.get(e["tool"], 0) + 1
        p95 = lat[max(0, math.ceil(0.95 * len(lat)) - 1)] if lat else None
    return time.perf_counter() - t0, len(entries), p95


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="100 k-call history")
    parser.add_argument("--calls", type=int, default=None, help="history size")
    parser.add_argument("--sections", default="1,2,3", help="which tables, e.g. 2 or 1,3")
    parser.add_argument("--skip-redis", action="store_true", help="no RedisStore row")
    args = parser.parse_args()
    sections = {int(x) for x in args.sections.split(",")}
    n_hist = args.calls or (100_000 if args.quick else 1_000_000)
    n_calls, repeats = (20_000, 3) if args.quick else (100_000, 5)

    print(f"load average: {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    if 1 in sections:
        await section_per_call(n_calls, repeats)
    if 2 in sections:
        await section_write_rate(args.quick, args.skip_redis)
    if 3 in sections:
        await section_snapshot(n_hist)


async def section_per_call(n_calls: int, repeats: int) -> None:
    print("\n## 1. Added latency per call (in process, best of runs)\n")
    rows = await per_call(n_calls, repeats)
    base = rows[0][1]
    print("| path | µs/call | added vs bare |")
    print("|---|---:|---:|")
    for label, us in rows:
        print(f"| {label} | {us:.2f} | {us - base:+.2f} µs |")
    plain = dict(rows)["aircore call_tool, no meter"]
    metered = dict(rows)["aircore call_tool, meter="]
    print(
        f"\naircore call_tool with the meter: {metered - plain:+.2f} µs/call "
        f"({metered / plain:.2f}x of no meter)"
    )


async def section_write_rate(quick: bool, skip_redis: bool) -> None:
    print("\n## 2. Records per second into a store (StoreSink, batches of 2048)\n")
    records = make_records(200_000 if not quick else 50_000, minutes=60)
    rows: list[tuple[str, float]] = []
    with tempfile.TemporaryDirectory() as tmp:
        async with FileStore(os.path.join(tmp, "w")) as store:
            rows.append(("StoreSink → FileStore", await write_rate(records, store)))
        rows.append(("StoreSink → MemoryStore", await write_rate(records, MemoryStore())))
        async with SqliteStore(os.path.join(tmp, "w.db")) as sql:
            rows.append(("StoreSink → SqliteStore", await write_rate(records, sql)))
        if not skip_redis:
            from tests.redis_server import RedisServer

            with RedisServer() as server:
                async with RedisStore(server.url(), max_log_entries=None) as red:
                    rows.append(("StoreSink → RedisStore", await write_rate(records, red)))
        peer_n = 5_000
        peer_rate = await aiofiles_peer(records[:peer_n], os.path.join(tmp, "peer.jsonl"))
    rows.append(("peer: one aiofiles append per record", peer_rate))
    print("| sink | records/s | vs aiofiles-per-record peer |")
    print("|---|---:|---:|")
    for label, rate in rows:
        print(f"| {label} | {rate:,.0f} | {rate / peer_rate:.1f}x |")


async def section_snapshot(n_hist: int) -> None:
    print(f"\n## 3. Snapshot over {n_hist:,} calls (24 h, {len(TOOLS)} tools)\n")
    history = make_records(n_hist, minutes=24 * 60, seed=2)
    with tempfile.TemporaryDirectory() as tmp:
        data = os.path.join(tmp, "data")
        async with FileStore(data) as store:
            t0 = time.perf_counter()
            hist_rate = await write_rate(history, store)
            t_write = time.perf_counter() - t0
            t_live = await live_refresh(store, data)
        del history
        env = {**os.environ, "PYTHONPATH": ROOT}
        proc = await asyncio.create_subprocess_exec(
            sys.executable, "-c", READER, data, env=env, stdout=asyncio.subprocess.PIPE
        )
        stdout, _ = await proc.communicate()
        assert proc.returncode == 0
        out = stdout.decode().split()
        total, t_import, t_open, t_cold, t_warm, t_filtered, p95 = (
            int(out[0]), *map(float, out[1:6]), out[6])  # fmt: skip
        t_naive, naive_n, naive_p95 = await naive_peer(data, n_hist)
    assert total == naive_n == n_hist + 5000, (total, n_hist, naive_n)
    print(f"history written in {t_write:.1f} s ({hist_rate:,.0f} records/s into FileStore)")
    print(f"p95: snapshot {float(p95):.3f} ms, exact {naive_p95:.3f} ms\n")
    print("| query | seconds | vs naive full-log parse |")
    print("|---|---:|---:|")
    for label, secs in (
        ("snapshot cold (open read-only + first snapshot)", t_open + t_cold),
        ("snapshot warm (same reader again)", t_warm),
        ("snapshot warm, one tool", t_filtered),
        ("in-process reader, right after the writer stored new calls", t_live),
        ("peer: parse the whole log, compute", t_naive),
    ):
        print(
            f"| {label} | {secs:.3f} | {t_naive / secs:.1f}x faster |"
            if secs != t_naive
            else f"| {label} | {secs:.3f} | 1.0x |"
        )
    print(f"\n(reader process import time, not counted above: {t_import:.2f} s)")


if __name__ == "__main__":
    asyncio.run(main())
