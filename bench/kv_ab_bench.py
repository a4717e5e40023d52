"""The kv set workload on this checkout's airstore and on an earlier revision's, side by side.

``bench/store_bench.py`` runs one version of the code per process; on a shared VM whose speed
changes by up to 2x between runs, a before/after comparison across processes says little. This
program loads both versions side by side (the earlier one exported with ``git archive`` and
renamed ``airstore_at_<rev>``), then runs the store bench's kv set row — N awaited
``set(ns, f"k{i}", {"v": i})`` and ``flush()`` — on each in turn, alternating the order every
round, and the async floor right after each (CPU time: the kv set CPU ÷ the floor's, as the
store bench's "beside it" row). Each round's two runs are close in time, so the speed-up is
taken per round (this checkout's rate ÷ the earlier one's) and its median reported with the
quartiles and the number of rounds this checkout was faster in.

``--fresh`` runs every set loop in a new process instead, as ``bench/store_bench.py``'s kv set
row does (the first thing its process does): in one long process a version's flush reuses the
memory the runs before it freed, so what a first run pays in page faults (~3 µs each on this
VM) does not show. The page faults of the timed loop and flush are reported either way.

Run: ``python bench/kv_ab_bench.py --before REV`` (a commit whose airstore differs), ``--rounds 20``,
``--fresh``.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import importlib
import io
import os
import re
import resource
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from types import ModuleType

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from store_bench import _async_floor_cpu  # the store bench's own floor, beside each store

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

N = 100_000


def _export(rev: str, dest: str) -> str:
    """airstore/ at ``rev`` as a package named ``airstore_at_<rev>`` under ``dest``."""
    name = "airstore_at_" + re.sub(r"\W", "_", rev)
    data = subprocess.run(
        ["git", "-C", ROOT, "archive", rev, "airstore"], capture_output=True, check=True
    ).stdout
    with tarfile.open(fileobj=io.BytesIO(data)) as tar:
        tar.extractall(dest, filter="data")
    os.rename(os.path.join(dest, "airstore"), os.path.join(dest, name))
    imports = re.compile(r"\b(from|import)(\s+)airstore\b")
    for folder, _dirs, files in os.walk(os.path.join(dest, name)):
        for file in files:
            if file.endswith(".py"):
                path = os.path.join(folder, file)
                with open(path, encoding="utf-8") as fh:
                    text = imports.sub(rf"\1\2{name}", fh.read())
                with open(path, "w", encoding="utf-8") as fh:
                    fh.write(text)
    return name


def _faults() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt


async def _one(mod: ModuleType, kind: str) -> tuple[float, float, float, float]:
    """(kv set rate by CPU time, that ÷ the async floor's beside it, page faults, the flush's
    CPU time per key in ns)."""
    with tempfile.TemporaryDirectory(prefix="airbench-ab-") as tmp:
        store = (
            mod.FileStore(tmp, handle_sigterm=False) if kind == "FileStore" else mod.MemoryStore()
        )
        await store.init()
        gc.collect()
        f0, c0 = _faults(), time.process_time()
        for i in range(N):
            await store.set("kv", f"k{i}", {"v": i})
        c1 = time.process_time()
        await store.flush()
        c2 = time.process_time()
        rate = N / (c2 - c0)
        faults = _faults() - f0
        ratio = rate / await _async_floor_cpu(N)
        await store.close()
        return rate, ratio, faults, (c2 - c1) / N * 1e9


def _spawn(path: str, name: str, kind: str) -> tuple[float, float, float, float]:
    """:func:`_one` of the package ``name`` (under ``path``) in a new process."""
    done = subprocess.run(
        [sys.executable, os.path.abspath(__file__), "--worker", path, name, kind],
        capture_output=True,
        text=True,
    )
    if done.returncode:
        sys.exit(f"the {kind} run of {name} failed:\n{done.stderr}")
    out = done.stdout.split()
    return float(out[0]), float(out[1]), float(out[2]), float(out[3])


async def _worker(path: str, name: str, kind: str) -> None:
    sys.path.insert(0, path)
    print(*await _one(importlib.import_module(name), kind))


async def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "--worker":
        await _worker(*sys.argv[2:5])
        return
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--before", required=True, help="the earlier revision (git), e.g. the last release's tag"
    )
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--fresh", action="store_true", help="every run in a new process")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="airbench-rev-") as tmp:
        versions = {
            args.before: (tmp, _export(args.before, tmp)),
            "this checkout": (ROOT, "airstore"),
        }
        sys.path.insert(0, tmp)
        results: dict[tuple[str, str], list[tuple[float, float, float, float]]] = {}
        for r in range(args.rounds):
            print(f"round {r + 1}/{args.rounds} …", file=sys.stderr, flush=True)
            for kind in ("FileStore", "MemoryStore"):
                order = list(versions.items())
                if r % 2:
                    order.reverse()
                for label, (path, name) in order:
                    if args.fresh:
                        run = _spawn(path, name, kind)
                    else:
                        run = await _one(importlib.import_module(name), kind)
                    results.setdefault((kind, label), []).append(run)
    where = "each run in a new process" if args.fresh else "all in one process"
    print(
        f"\nkv set (k{{i}}, {{v: i}}) + flush(), {N:,} sets, CPU time, {args.rounds} rounds, "
        f"{where}; "
        "speed-up = this checkout's rate ÷ the earlier one's in the same round (median, quartiles)"
    )
    print(f"| store | {args.before} | this checkout | speed-up | faster in |")
    print("|---|---:|---:|---:|---:|")
    for kind in ("FileStore", "MemoryStore"):
        before = results[(kind, args.before)]
        after = results[(kind, "this checkout")]
        ups = sorted(a[0] / b[0] for a, b in zip(after, before, strict=True))
        q1, q3 = ups[len(ups) // 4], ups[(3 * len(ups)) // 4]
        wins = sum(u > 1 for u in ups)
        rb = statistics.median(v[0] for v in before)
        ra = statistics.median(v[0] for v in after)
        print(
            f"| {kind} | {rb / 1e3:,.0f} k/s | {ra / 1e3:,.0f} k/s | "
            f"{statistics.median(ups):.2f}× ({q1:.2f}-{q3:.2f}) | {wins}/{len(ups)} |"
        )
        fb = statistics.median(v[1] for v in before)
        fa = statistics.median(v[1] for v in after)
        print(f"| {kind} ÷ async floor beside it | {fb:.2f} | {fa:.2f} | | |")
        pb = statistics.median(v[2] for v in before)
        pa = statistics.median(v[2] for v in after)
        print(f"| {kind} page faults (loop and flush) | {pb:,.0f} | {pa:,.0f} | | |")
        nb = statistics.median(v[3] for v in before)
        na = statistics.median(v[3] for v in after)
        print(f"| {kind} flush, CPU ns per key | {nb:.0f} | {na:.0f} | | |")


if __name__ == "__main__":
    asyncio.run(main())
