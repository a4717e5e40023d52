"""The kv set workload on this checkout's airstore and on an earlier revision's, in one process.

``bench/store_bench.py`` runs one version of the code per process; on a shared VM whose speed
changes by up to 2x between runs, a before/after comparison across processes says little. This
program loads both versions side by side (the earlier one exported with ``git archive`` and
renamed ``airstore_at_<rev>``), then runs the store bench's kv set row — N awaited
``set(ns, f"k{i}", {"v": i})`` and ``flush()`` — on each in turn, alternating the order every
round, and the async floor right after each (CPU time: the kv set CPU ÷ the floor's, as the
store bench's "beside it" row). Each round's two runs are close in time, so the speed-up is
taken per round (this checkout's rate ÷ the earlier one's) and its median reported with the
quartiles and the number of rounds this checkout was faster in.

Run: ``python bench/kv_ab_bench.py --before REV`` (a commit whose airstore differs), ``--rounds 20``.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import importlib
import io
import os
import re
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


async def _one(mod: ModuleType, kind: str) -> tuple[float, float]:
    with tempfile.TemporaryDirectory(prefix="airbench-ab-") as tmp:
        store = (
            mod.FileStore(tmp, handle_sigterm=False) if kind == "FileStore" else mod.MemoryStore()
        )
        await store.init()
        gc.collect()
        c0 = time.process_time()
        for i in range(N):
            await store.set("kv", f"k{i}", {"v": i})
        await store.flush()
        rate = N / (time.process_time() - c0)
        ratio = rate / await _async_floor_cpu(N)
        await store.close()
        return rate, ratio


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--before", required=True, help="the earlier revision (git), e.g. the last release's tag"
    )
    parser.add_argument("--rounds", type=int, default=20)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="airbench-rev-") as tmp:
        name = _export(args.before, tmp)
        sys.path.insert(0, tmp)
        versions = {
            args.before: importlib.import_module(name),
            "this checkout": importlib.import_module("airstore"),
        }
        results: dict[tuple[str, str], list[tuple[float, float]]] = {}
        for r in range(args.rounds):
            print(f"round {r + 1}/{args.rounds} …", file=sys.stderr, flush=True)
            for kind in ("FileStore", "MemoryStore"):
                order = list(versions.items())
                if r % 2:
                    order.reverse()
                for label, mod in order:
                    results.setdefault((kind, label), []).append(await _one(mod, kind))
    print(
        f"\nkv set (k{{i}}, {{v: i}}) + flush(), {N:,} sets, CPU time, {args.rounds} rounds; "
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


if __name__ == "__main__":
    asyncio.run(main())
