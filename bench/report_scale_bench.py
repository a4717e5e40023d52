"""A cold read of a large, sparse rollup history: `air meter report` and a dashboard's first view.

A busy user's history: several writer processes, many servers, instances and tools, so most
rollup rows of a minute hold one or two calls (rows ~ calls). Records N calls over D days from
W writer processes into one FileStore (as `air serve` processes do through StoreSink), then
times, each in a fresh process (cold, as the command runs):

- ``report``: ``air meter report --since all`` (and ``--since 7d``), peak RSS;
- ``first view``: the dashboard's data module, first 7 d view (a fresh reader);
- ``air store stats`` (baseline: keys counted through ``list``, every namespace kept);

with the rollup read as it is now (cyclic GC paused while reading; the report command keeps it
off for its one report) against the baseline, the same code with the pause defeated and the
collector on (what ran before), in the same run. Prints ratios.

    python bench/report_scale_bench.py [--calls 1500000] [--days 30] [--writers 4] [--dir DIR]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

DAY_MS = 86_400_000
VERBS = (("ping", 1, 0.3), ("get", 2, 3.0), ("search", 2, 8.0), ("convert", 3, 4.0),
         ("summarize", 4, 25.0), ("fetch", 5, 120.0), ("generate", 6, 600.0), ("plan", 7, 1500.0))  # fmt: skip
NOUNS = ("user", "notes", "repo", "issue", "file", "page")
SERVERS = ("shop", "github", "slack", "files", "search", "agent")
ERRORS = (("tool_error", "failed"), ("RuntimeError", "boom"), ("-32602", "invalid"),
          ("timeout", "slow"), ("cancelled", "cancelled"))  # fmt: skip

BASELINE = """
import contextlib, gc, sys
import airmeter.rollup_reader as s
s.gc_paused = contextlib.nullcontext  # the read as before: the collector runs throughout
gc.disable = lambda: None  # and the report command cannot turn it off
from airstore._inspect import Inspection
async def _count_keys(self, ns):  # stats as before: count through list(), keeping the namespace
    return len(await self._keys.list(ns))
Inspection._count_keys = _count_keys
"""


async def _write(path: str, writer: int, calls: int, days: int) -> None:
    from airmeter import CallRecord, Layer, StoreSink
    from airstore import FileStore

    rnd = random.Random(writer)
    tools = [(f"{v}_{n}", Layer(layer), t) for v, layer, t in VERBS for n in NOUNS]
    now = int(time.time() * 1000)
    start, step = now - days * DAY_MS, days * DAY_MS / calls
    async with FileStore(path) as store:
        sink = StoreSink(store, writer=f"w{writer}", rollup_ttl=None, persist_interval=5.0)
        batch: list[CallRecord] = []
        for i in range(calls):
            tool, layer, typical = tools[rnd.randrange(len(tools))]
            server = SERVERS[rnd.randrange(len(SERVERS))]
            ok = rnd.random() > 0.05
            etype, message = (None, None) if ok else ERRORS[rnd.randrange(len(ERRORS))]
            batch.append(CallRecord(
                ts_ms=int(start + i * step), server=server, instance_id=f"{server}-{writer}",
                tool=tool, layer=layer, latency_ms=round(typical * rnd.lognormvariate(0, 0.7), 3),
                ok=ok, error_type=etype, error_message=message, request_id=f"{writer}-{i}",
            ))  # fmt: skip
            if len(batch) == 20_000:
                await sink.write(batch)
                batch = []
        await sink.write(batch)
        await sink.close()


def _timed(code: str) -> tuple[float, float]:
    """Seconds and peak RSS (MB) of ``python -c code`` in a fresh process."""
    code += "\nimport resource, sys; print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, file=sys.stderr)"
    started = time.perf_counter()
    done = subprocess.run([sys.executable, "-c", code], check=True, stdout=subprocess.DEVNULL,
                          stderr=subprocess.PIPE, text=True)  # fmt: skip
    seconds = time.perf_counter() - started
    return seconds, int(done.stderr.split()[-1]) / 1024


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--calls", type=int, default=1_500_000)
    parser.add_argument("--days", type=int, default=30)
    parser.add_argument("--writers", type=int, default=4)
    parser.add_argument("--dir", help="keep (or reuse) the generated data dir here")
    parser.add_argument("--write-one", nargs=2, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.write_one:
        asyncio.run(_write(args.write_one[0], int(args.write_one[1]), args.calls, args.days))
        return
    root = Path(args.dir) if args.dir else Path(tempfile.mkdtemp(prefix="air-report-scale-"))
    data = root / "data"
    try:
        if not data.exists():
            started = time.perf_counter()
            procs = [
                subprocess.Popen([sys.executable, __file__, "--calls", str(args.calls // args.writers),
                                  "--days", str(args.days), "--write-one", str(data), str(w)])
                for w in range(args.writers)
            ]  # fmt: skip
            for p in procs:
                if p.wait() != 0:
                    raise SystemExit("a writer failed")
            print(f"recorded {args.calls:,} calls over {args.days} days from {args.writers} "
                  f"writers in {time.perf_counter() - started:.0f} s")  # fmt: skip
        url = f"file://{data}"
        report = (
            "from aircli import main; main(['meter', 'report', '--store', {!r}, '--since', {!r}])"
        )
        view = ("from dashboard.reader import SyncReader; r = SyncReader.open({!r}, freeze_gc=True); "
                "r.view('7d'); r.close()")  # fmt: skip
        rows = [
            ("air meter report --since all", report.format(url, "all")),
            ("air meter report --since 7d", report.format(url, "7d")),
            ("dashboard first 7 d view", view.format(url)),
            (
                "air store stats",
                f"from aircli import main; main(['store', 'stats', '--store', {url!r}])",
            ),
        ]
        print(f"\n| cold, fresh process ({args.calls:,} calls) | baseline s | now s | now / baseline "
              "| peak RSS now (MB) |")  # fmt: skip
        print("|---|---:|---:|---:|---:|")
        for name, code in rows:
            now_s, now_rss = _timed(code)
            base_s, _ = _timed(BASELINE + code)
            print(
                f"| {name} | {base_s:.2f} | {now_s:.2f} | {now_s / base_s:.2f}x | {now_rss:.0f} |"
            )
    finally:
        if not args.dir:
            shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
