"""SLO, history back-fill and context-counting benchmark (issue 16, item 5).

1. SLO evaluation over N calls (default 1 M) spread over 7 days, written by ``StoreSink`` to a
   FileStore and read by a read-only reader: cold (first evaluation) and warm (the same
   evaluator again), against the peer that parses the whole call log and computes the same
   budgets and burn rates. Target: warm ≤ 50 ms. Then the dashboard's snapshot of the last
   1 h, 24 h and 7 days, read again by the same reader. ``--store sqlite`` runs it on a
   SqliteStore instead (written, then read by a read-only store on the same file).
2. History back-fill: 7 days (≈150 k calls) through the real meter path (an aircore server's
   ``call_tool`` → ``MeterMiddleware`` with a back-dated clock → ``Meter`` → ``StoreSink`` →
   FileStore), against the floor of appending the same records straight to the store.
   Target: ≤ 5 s.
3. Call-path overhead with context counting on: the meter middleware's hot path, and with
   background delivery (amortized), with the exact tokenizer loaded, the estimate, and off.
   Target: hot path ≤ 5 µs over a bare call.

Run: ``python bench/meter_slo_bench.py`` (``--calls 200000`` for a shorter section 1,
``--sections 2,3``).
"""

from __future__ import annotations

import argparse
import asyncio
import math
import os
import random
import statistics
import sys
import tempfile
import time
from datetime import timedelta
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from aircore import define_server, define_tool
from airmeter import (
    CALLS_NAMESPACE,
    CallRecord,
    Layer,
    Meter,
    MeterMiddleware,
    RollupReader,
    StoreSink,
)
from airmeter.outcome import RATE_CLASSES, error_class_of
from airmeter.slo import SloEvaluator
from airmeter.slo_config import Objective
from airmeter.tokens import context_text, shared_counting
from airstore.file import FileStore
from airstore.sqlite import SqliteStore
from airstore.types import Store

DAY_MS = 86_400_000
TOOLS = [("health", 1), ("get_user", 2), ("list_files", 2), ("format_date", 3),
         ("summarize_text", 4), ("count_words", 4), ("fetch_url", 5), ("post_webhook", 5),
         ("generate_reply", 6), ("embed_text", 6), ("plan_trip", 7), ("run_agent", 7)]  # fmt: skip
OBJECTIVES = [Objective(availability=0.995), Objective(latency_p95_ms=300)]
WINDOWS_MIN = (5, 30, 60, 360)
VIEWS_H = (1, 24, 168)


def history(n: int, *, now_ms: int, days: int = 7, seed: int = 3) -> list[CallRecord]:
    rng = random.Random(seed)
    start = now_ms - days * DAY_MS
    step = days * DAY_MS / n
    out = []
    for i in range(n):
        tool, layer = TOOLS[rng.randrange(len(TOOLS))]
        roll = rng.random()
        etype = None if roll > 0.03 else ("tool_error" if roll > 0.01 else "-32602")
        out.append(CallRecord(
            ts_ms=start + int(i * step), server="bench", tool=tool, layer=Layer(layer),
            latency_ms=round(math.exp(rng.gauss(math.log(8 * layer), 0.9)), 3),
            ok=etype is None, error_type=etype, request_id=str(i), instance_id="i-1",
        ))  # fmt: skip
    return out


def _open(kind: str, path: str, *, read_only: bool = False) -> Store:
    if kind == "sqlite":
        return SqliteStore(path, read_only=read_only)
    return FileStore(path, read_only=read_only)


async def naive_slo(path: str, now_ms: int, kind: str = "file") -> tuple[float, int]:
    """The peer: parse the whole log, then count per tool and window."""
    t0 = time.perf_counter()
    async with _open(kind, path, read_only=True) as store:
        entries = await store.query(CALLS_NAMESPACE, limit=10**8)
    per: dict[str, list[tuple[int, bool, float]]] = {}
    for e in entries:
        cls = None if e["ok"] else error_class_of(e.get("error_type"))
        if cls in ("refused", "cancelled", "budget", "protocol"):
            continue
        per.setdefault(e["tool"], []).append((e["_ts"], cls in RATE_CLASSES, e["latency_ms"]))
    results = 0
    for calls in per.values():
        for minutes in (*WINDOWS_MIN, 30 * 1440):
            start = now_ms - minutes * 60_000
            inside = [c for c in calls if c[0] >= start]
            bad = sum(1 for c in inside if c[1])
            slow = sum(1 for c in inside if c[2] > 300)
            results += bool(inside) and (bad >= 0 and slow >= 0)
    return time.perf_counter() - t0, len(entries)


async def section_slo(n: int, runs: int, kind: str = "file") -> None:
    print(f"\n## 1. SLO evaluation over {n:,} calls in 7 days ({len(TOOLS)} tools, "
          f"{len(OBJECTIVES)} objectives; {kind} store; medians of {runs})\n")  # fmt: skip
    now_ms = (int(time.time() * 1000) // 60_000) * 60_000
    records = history(n, now_ms=now_ms)
    with tempfile.TemporaryDirectory() as tmp:
        data = os.path.join(tmp, "air.db" if kind == "sqlite" else "data")
        async with _open(kind, data) as store:
            sink = StoreSink(store, writer="bench")
            for i in range(0, len(records), 4096):
                await sink.write(records[i : i + 4096])
            await sink.close()
        del records
        colds: list[float] = []
        warms: list[float] = []
        warm_cpu: list[float] = []
        views: dict[int, list[float]] = {}
        statuses: list[Any] = []
        for _ in range(runs):
            async with _open(kind, data, read_only=True) as reader:
                rollups = RollupReader(reader)  # one reader for both, as the dashboard's
                evaluator = SloEvaluator(reader, OBJECTIVES, clock=lambda: now_ms / 1000,
                                         reader=rollups)  # fmt: skip
                t0 = time.perf_counter()
                statuses = await evaluator.evaluate()
                colds.append(time.perf_counter() - t0)
                for _ in range(3):
                    t0, c0 = time.perf_counter(), time.process_time()
                    await evaluator.evaluate()
                    warms.append(time.perf_counter() - t0)
                    warm_cpu.append(time.process_time() - c0)
                for hours in VIEWS_H:  # the dashboard's views (its snapshot), read again
                    since = timedelta(hours=hours)
                    await rollups.snapshot(since=since)
                    for _ in range(3):
                        t0 = time.perf_counter()
                        await rollups.snapshot(since=since)
                        views.setdefault(hours, []).append(time.perf_counter() - t0)
        naives = []
        for _ in range(runs):
            t_naive, lines = await naive_slo(data, now_ms, kind)
            naives.append(t_naive)
    cold, warm, t_naive = (statistics.median(v) for v in (colds, warms, naives))
    assert lines == n, lines
    assert len(statuses) == 2 * len(TOOLS), len(statuses)
    print("| evaluation | ms | vs naive full-log parse |")
    print("|---|---:|---:|")
    for label, secs in (
        ("cold (first evaluation, read-only reader)", cold),
        ("warm (same evaluator again)", warm),
        ("peer: parse the whole log, count per tool and window", t_naive),
    ):
        print(f"| {label} | {secs * 1000:.1f} | {t_naive / secs:.1f}x |")  # fmt: skip
    print(f"\nwarm target ≤ 50 ms: {'met' if warm <= 0.05 else 'MISSED'} ({warm * 1000:.1f} ms; "
          f"CPU time of this process {statistics.median(warm_cpu) * 1000:.1f} ms)")  # fmt: skip
    print("\n| snapshot (a dashboard view) read again | ms |\n|---|---:|")
    for hours, times in views.items():
        print(f"| last {hours} h | {statistics.median(times) * 1000:.1f} |")


async def section_backfill(n: int, runs: int) -> None:
    print(f"\n## 2. History back-fill: {n:,} calls over 7 days through the meter path "
          f"(median of {runs})\n")  # fmt: skip
    from airmeter.history import PlannedTool, backfill, demo_plan

    now = time.time()
    layers = dict(TOOLS)
    planned = [PlannedTool(name=name, weight=8 - layer, latency_ms=8.0 * layer,
                           result="Alice, 42, Oslo, admin " * layer) for name, layer in TOOLS]  # fmt: skip
    t0 = time.perf_counter()
    plan = demo_plan(planned, now=now, days=7, calls=n, incident_tool="fetch_url",
                     slow_tool="plan_trip")  # fmt: skip
    plan_s = time.perf_counter() - t0
    names = [name for name, _ in TOOLS]

    def handler(params: dict[str, Any]) -> dict[str, Any]:
        return {"user": params["id"], "ok": True}

    samples: dict[str, list[float]] = {}
    cpu: dict[str, list[float]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for run in range(runs):
            for mode in ("exact", "off"):
                async with FileStore(f"{tmp}/h{run}{mode}") as store:
                    meter = Meter(store=store, server="bench", instance_id="history")
                    await meter.start()
                    t0, c0 = time.perf_counter(), time.process_time()
                    await backfill(meter, plan, layers=layers, count_tokens=mode)
                    await meter.stop()
                    label = f"airmeter.history.backfill (air demo's path), tokens {mode}"
                    samples.setdefault(label, []).append(time.perf_counter() - t0)
                    cpu.setdefault(label, []).append(time.process_time() - c0)
                    assert meter.stats.dropped == 0
            tools = [define_tool(name, params={"id": "string"}, handler=handler) for name in names]
            clock = [now - 7 * 86_400]
            step = 7 * 86_400 / n
            rng = random.Random(run)
            server = define_server(name="bench", tools=tools, storage=f"file://{tmp}/s{run}",
                                   meter=MeterMiddleware(clock=lambda c=clock: c[0],
                                                         max_pending=10**6))  # fmt: skip
            t0 = time.perf_counter()
            async with server:
                for i in range(n):
                    clock[0] += step
                    await server.call_tool(names[rng.randrange(len(names))], {"id": str(i)})
                    if i % 2048 == 0:
                        await asyncio.sleep(0)
            label = "peer: aircore call_tool (validation, chain, result) → meter → FileStore"
            samples.setdefault(label, []).append(time.perf_counter() - t0)
            records = history(n, now_ms=int(now * 1000), seed=6)
            async with FileStore(f"{tmp}/floor{run}") as floor:
                t0 = time.perf_counter()
                sink = StoreSink(floor, writer="floor")
                for i in range(0, n, 4096):
                    await sink.write(records[i : i + 4096])
                await sink.close()
                label = "floor: StoreSink.write of records already built"
                samples.setdefault(label, []).append(time.perf_counter() - t0)
        async with FileStore(f"{tmp}/h0exact", read_only=True) as reader:
            stored = len(await reader.query(CALLS_NAMESPACE, limit=n + 1))
        assert stored == n, stored
    medians = {label: statistics.median(v) for label, v in samples.items()}
    floor_s = medians["floor: StoreSink.write of records already built"]
    print("| path | seconds | calls/s | vs floor |")
    print("|---|---:|---:|---:|")
    for label, secs in medians.items():
        print(f"| {label} | {secs:.2f} | {n / secs:,.0f} | {secs / floor_s:.2f}x |")
    print(f"\nplanning the {n:,} calls (demo_plan): {plan_s:.2f} s")
    for label, values in cpu.items():
        print(f"CPU time of this process, {label}: {statistics.median(values):.2f} s")
    meter_s = medians["airmeter.history.backfill (air demo's path), tokens exact"]
    print(
        f"target ≤ 5 s: {'met' if meter_s <= 5 else 'MISSED'} ({meter_s:.2f} s through the meter)"
    )


async def section_counting(n: int, repeats: int) -> None:
    print(f"\n## 3. Call-path overhead with context counting (in process, median of {repeats} "
          f"runs of {n:,} calls)\n")  # fmt: skip

    class Ctx:
        def __init__(self) -> None:
            self.tool_name, self.arguments, self.request_id = "get_user", {"id": "u1"}, "1"
            self.call_id = self.session_id = None
            self.protocol_version, self.transport, self.client_name = "2025-11-25", "pipe", "b"
            self.server_name, self.layer, self.annotations = "bench", None, None
            self.tool_meta = self.input_schema = self.traceparent = self.tracestate = None
            self.usage: dict[str, Any] = {}

    ctx = Ctx()
    result = {"content": [{"type": "text", "text": "Alice, 42, Oslo, admin " * 8}]}

    async def call_next(c: Any) -> Any:
        return result

    async def best(fn: Any, *, deliver: Meter | None = None) -> float:
        out: list[float] = []
        for _ in range(repeats):
            t0 = time.perf_counter()
            for i in range(n):
                await fn()
                if deliver is not None and i % 256 == 0:
                    await asyncio.sleep(0)
            if deliver is not None:
                await deliver.flush()
            out.append((time.perf_counter() - t0) / n * 1e6)
        return statistics.median(out)

    bare = await best(lambda: call_next(ctx))
    print("| path | µs/call | added vs bare |")
    print("|---|---:|---:|")
    print(f"| bare call_next | {bare:.2f} | +0.00 |")
    exact = await shared_counting().ready()
    for mode in ("exact", "estimate", "off"):
        hot = MeterMiddleware(Meter(max_pending=10**8, batch_size=10**8, flush_interval=3600),
                              count_tokens=mode)  # type: ignore[arg-type]  # fmt: skip
        await hot.start(server_name="bench")
        us = await best(lambda hot=hot: hot(ctx, call_next))
        print(f"| meter hot path, counting {mode} | {us:.2f} | {us - bare:+.2f} |")
        meter = Meter(flush_interval=0.05)
        await meter.start()
        amortized = MeterMiddleware(meter, count_tokens=mode)  # type: ignore[arg-type]
        us = await best(lambda a=amortized: a(ctx, call_next), deliver=meter)
        tokens = meter.recent(1)[0].result_tokens
        await meter.stop()
        print(f"| meter + delivery incl. counting (amortized), {mode} | {us:.2f} | "
              f"{us - bare:+.2f} (result_tokens={tokens}) |")  # fmt: skip
    text = context_text(result)

    async def counted_inline(c: Any) -> Any:
        out = await call_next(c)
        c.usage["result_tokens"] = exact.count(text)  # what counting on the call path costs
        return out

    us = await best(lambda: counted_inline(ctx))
    print(f"| peer: exact count on the call path (no meter) | {us:.2f} | {us - bare:+.2f} |")
    print(f"\nexact tokenizer: {exact.name}")


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--calls", type=int, default=1_000_000, help="section 1 history size")
    parser.add_argument("--backfill", type=int, default=150_000, help="section 2 calls")
    parser.add_argument("--sections", default="1,2,3")
    parser.add_argument("--runs", type=int, default=3, help="runs per measurement (median)")
    parser.add_argument("--store", choices=("file", "sqlite"), default="file",
                        help="section 1's store")  # fmt: skip
    args = parser.parse_args()
    sections = {int(x) for x in args.sections.split(",")}
    print(f"load average: {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    if 1 in sections:
        await section_slo(args.calls, args.runs, args.store)
    if 2 in sections:
        await section_backfill(args.backfill, args.runs)
    if 3 in sections:
        await section_counting(20_000, args.runs)


if __name__ == "__main__":
    asyncio.run(main())
