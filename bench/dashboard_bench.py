"""Dashboard data timings over a store holding 1 M recorded calls (server side, no browser).

Records N calls spread over the last 7 days into a FileStore through airmeter's StoreSink (the
call log plus per-minute rollups, as a metered server does), then times what the page does:

- first page load: open the store read-only in a fresh reader + the first view (1 h range);
- refresh: the same view again (the page's live refresh), for each range and with a filter;
- tool detail: a tool's histogram and latest calls;
- refresh while a writer process keeps recording calls into the same store;
- the background evaluation of the meter panels (SLOs over 16 objectives x tools with the
  sparkline back-fill, meter health, context cost), which no refresh waits for;

and, as the peer, the naive way: read every call of the range from the raw log and aggregate
in Python (what a dashboard without rollups would do each refresh).

    python bench/dashboard_bench.py [--calls 1000000] [--dir DIR] [--repeat 5] [--live-seconds 15]

Timings go through :class:`dashboard.reader.SyncReader`, the path the page's callbacks take.
"""

from __future__ import annotations

import argparse
import asyncio
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from dash import no_update

from airmeter import CALLS_NAMESPACE, CallRecord, Layer, StoreSink
from airstore import FileStore
from dashboard.reader import SyncReader
from dashboard.types import Filters

TOOLS = (
    ("ping", Layer.L1, 0.3), ("get_user", Layer.L2, 3.0), ("search_notes", Layer.L2, 8.0),
    ("convert_units", Layer.L3, 4.0), ("summarize_text", Layer.L4, 25.0),
    ("fetch_url", Layer.L5, 120.0), ("generate_text", Layer.L6, 600.0),
    ("plan_trip", Layer.L7, 1500.0),
)  # fmt: skip
DAY_MS = 86_400_000
SLO_YAML = "objectives:\n  - {tool: '*', availability: 0.99, latency_p95_ms: 2000}\n"


async def populate(path: Path, calls: int) -> float:
    """Record ``calls`` calls over the last 7 days; returns the seconds it took."""
    rnd = random.Random(1)
    now = int(time.time() * 1000)
    start = now - 7 * DAY_MS
    step = 7 * DAY_MS / calls
    started = time.perf_counter()
    async with FileStore(path) as store:
        sink = StoreSink(store, writer="bench", rollup_ttl=None, persist_interval=5.0)
        batch: list[CallRecord] = []
        for i in range(calls):
            tool, layer, typical = TOOLS[rnd.randrange(len(TOOLS))]
            ok = rnd.random() > 0.04
            batch.append(
                CallRecord(
                    ts_ms=int(start + i * step), server="bench", tool=tool, layer=layer,
                    latency_ms=round(typical * rnd.lognormvariate(0, 0.7), 3), ok=ok,
                    error_type=None if ok else "tool_error",
                    error_message=None if ok else "simulated failure", request_id=str(i),
                )
            )  # fmt: skip
            if len(batch) == 20_000:
                await sink.write(batch)
                batch = []
        await sink.write(batch)
        await sink.close()
    return time.perf_counter() - started


async def naive_view(store: Any, since_ms: int, until_ms: int) -> int:
    """The peer: read the range's raw calls and aggregate them (count, errors, percentiles)."""
    entries = await store.query(CALLS_NAMESPACE, limit=2**62, since=since_ms, until=until_ms)
    latencies = sorted(e["latency_ms"] for e in entries)
    errors = sum(not e["ok"] for e in entries)
    by_tool: dict[str, list[float]] = {}
    for e in entries:
        by_tool.setdefault(e["tool"], []).append(e["latency_ms"])
    for values in by_tool.values():
        values.sort()
    if latencies:
        _ = latencies[len(latencies) // 2], latencies[int(len(latencies) * 0.99)]
    return len(entries) + errors * 0


def render(view: Any, *, steady: bool = False) -> int:
    """What the page's refresh callback does with a view: every output of the page (figures,
    tables, panels, badges) as the JSON Dash sends (its plotly encoder); returns its size.
    ``steady``: the page already shows the meter panels of this evaluation (most refreshes)."""
    from plotly.io.json import to_json_plotly  # what Dash encodes callback outputs with

    from dashboard.callbacks import page_values

    values = page_values(view, panels_stamp(view)) if steady else page_values(view)
    return len(to_json_plotly({k: v for k, v in values.items() if v is not no_update}))


def panels_stamp(view: Any) -> str:
    from dashboard.meter_panels import panels_stamp as stamp

    return stamp(view)


def timed(fn: Callable[[], Any], repeat: int) -> tuple[float, float]:
    """(median, max) milliseconds over ``repeat`` runs."""
    runs = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        runs.append((time.perf_counter() - t0) * 1000)
    return statistics.median(runs), max(runs)


WRITER = """
import asyncio, random, sys, time
from airmeter import CallRecord, Layer, StoreSink
from airstore import FileStore

async def main(path, rate):
    async with FileStore(path) as store:
        sink = StoreSink(store, writer="live")
        print("ready", flush=True)
        loop = asyncio.get_running_loop()
        stop = loop.run_in_executor(None, sys.stdin.readline)
        n = 0
        while not stop.done():
            batch = [CallRecord(ts_ms=int(time.time() * 1000), server="bench", tool="ping",
                                layer=Layer.L1, latency_ms=random.random(), ok=True,
                                request_id=f"live-{n + i}") for i in range(rate // 10)]
            n += len(batch)
            await sink.write(batch)
            await asyncio.sleep(0.1)
        await sink.close()

asyncio.run(main(sys.argv[1], int(sys.argv[2])))
"""


def live_refreshes(path: Path, seconds: float, rate: int) -> list[float]:
    """Time the default (1 h) refresh every 0.5 s while a writer process records ``rate``/s."""
    writer = subprocess.Popen(
        [sys.executable, "-c", WRITER, str(path), str(rate)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert writer.stdin is not None
    assert writer.stdout is not None
    try:
        assert writer.stdout.readline().strip() == "ready"
        reader = SyncReader.open(f"file://{path}", freeze_gc=True)
        runs = []
        try:
            deadline = time.monotonic() + seconds
            while time.monotonic() < deadline:
                t0 = time.perf_counter()
                reader.view("1h")
                runs.append((time.perf_counter() - t0) * 1000)
                time.sleep(0.5)
        finally:
            reader.close()
    finally:
        writer.stdin.close()
        writer.wait(timeout=60)
        writer.stdout.close()
    return runs


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=1_000_000)
    parser.add_argument("--dir", help="reuse/keep the data here (default: a temp dir, removed)")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--live-seconds", type=float, default=15.0)
    parser.add_argument("--live-rate", type=int, default=200)
    args = parser.parse_args()
    tmp = Path(args.dir) if args.dir else Path(tempfile.mkdtemp(prefix="air-dash-bench-"))
    path = tmp / "data"
    try:
        if not (path / f"{CALLS_NAMESPACE}.log.jsonl").exists():
            seconds = asyncio.run(populate(path, args.calls))
            print(
                f"recorded {args.calls:,} calls in {seconds:.1f}s ({args.calls / seconds:,.0f}/s)"
            )
        url = f"file://{path}"

        slo = tmp / "slo.yml"
        slo.write_text(SLO_YAML, encoding="utf-8")
        t0 = time.perf_counter()
        try:
            reader = SyncReader.open(url, freeze_gc=True, slo_config=str(slo))
        except TypeError:  # a dashboard before the meter panels (the bench's "before" runs)
            reader = SyncReader.open(url, freeze_gc=True)
        first = reader.view("1h")
        first_ms = (time.perf_counter() - t0) * 1000
        rows: list[tuple[str, float, float, float]] = []
        rows.append(("first page load (open + 1h view)", first_ms, first_ms, 3000.0))
        for key in ("15m", "1h", "24h", "7d"):
            reader.view(key)  # the first view of a range fills airmeter's bucket cache
            med, worst = timed(lambda key=key: reader.view(key), args.repeat)
            rows.append((f"refresh, {key} view", med, worst, 300.0))
        payload: dict[str, int] = {}
        for key in ("1h", "7d"):  # what the refresh callback adds: figures, tables, JSON
            med, worst = timed(lambda key=key: render(reader.view(key)), args.repeat)
            rows.append((f"refresh, {key} view + figures/tables", med, worst, 300.0))
            payload[key] = render(reader.view(key))
            if hasattr(reader.data, "meter"):
                payload[f"{key}, panels unchanged"] = render(reader.view(key), steady=True)
        flt = Filters(tool="fetch_url")
        reader.view("7d", flt)
        med, worst = timed(lambda: reader.view("7d", flt), args.repeat)
        rows.append(("refresh, 7d view, tool filter", med, worst, 300.0))
        med, worst = timed(lambda: reader.tool_detail("plan_trip", "7d"), args.repeat)
        rows.append(("tool detail (histogram + latest)", med, worst, 300.0))

        watch = getattr(reader.data, "meter", None)  # the meter panels (absent before them)
        if watch is not None:
            rng = reader.data.resolve("1h")
            reader.run(asyncio.wait_for(watch.updated.wait(), 120))
            try:  # a cold evaluator on the page's rollup reader, as DashboardData builds it
                fresh = type(watch)(reader.data._store, slo_config=slo, reader=reader.data._reader)
            except (TypeError, AttributeError):  # before the reader (the bench's "before" runs)
                fresh = type(watch)(reader.data._store, slo_config=slo)
            t0 = time.perf_counter()
            reader.run(fresh.evaluate_now(rng))
            cold = (time.perf_counter() - t0) * 1000
            rows.append(("meter panels, first (sparkline back-fill)", cold, cold, 5000.0))
            med, worst = timed(lambda: reader.run(fresh.evaluate_now(rng)), 3)
            rows.append(("meter panels, background evaluation", med, worst, 1000.0))

        store = reader.data._store
        naive: dict[str, float] = {}
        for key in ("1h", "24h", "7d"):
            rng = reader.data.resolve(key)
            try:
                med, _ = timed(
                    lambda rng=rng: reader.run(naive_view(store, rng.since_ms, rng.until_ms)), 1
                )
            except TimeoutError:  # the peer over the raw log took longer than the reader waits
                med = float("inf")
            naive[key] = med
        reader.close()

        live = live_refreshes(path, args.live_seconds, args.live_rate) if args.live_seconds else []

        print(f"\nDashboard data timings, {args.calls:,} calls in the store (server side, ms)")
        print(f"{'operation':<40} {'median':>9} {'max':>9} {'target':>8}  ok")
        for name, med, worst, target in rows:
            ok = "yes" if worst <= target else ("median" if med <= target else "NO")
            print(f"{name:<40} {med:>9.1f} {worst:>9.1f} {target:>8.0f}  {ok}")
        if live:
            med, worst = statistics.median(live), max(live)
            slow = sum(r > 300 for r in live)
            name = f"refresh 1h, writer at {args.live_rate}/s"
            ok = "yes" if worst <= 300 else ("median" if med <= 300 else "NO")
            print(f"{name:<40} {med:>9.1f} {worst:>9.1f} {300:>8.0f}  {ok}")
            print(f"  ({len(live)} refreshes, {slow} over 300 ms)")
        print(f"\n{'refresh payload (JSON bytes)':<40} {'bytes':>9}")
        for key, size in payload.items():
            print(f"{key + ' view':<40} {size:>9,}")
        print(f"\n{'view from':<40} {'rollups':>9} {'raw log':>9} {'ratio':>8}")
        for key, raw in naive.items():
            ours = next(m for n, m, _, _ in rows if n == f"refresh, {key} view")
            print(f"{key + ' view':<40} {ours:>9.1f} {raw:>9.1f} {raw / ours:>7.1f}x")
        print(f"\n(first view: {first.snapshot.total_calls:,} calls in the last hour)")
    finally:
        if not args.dir:
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
