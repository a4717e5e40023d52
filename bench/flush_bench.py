"""What a FileStore flush costs after one changed key, beside the two ways to persist it.

Each row: a namespace of N keys (``{"v": i, "name": "item i"}``) is written and flushed once,
then ROUNDS times one key is changed and ``flush()`` timed; the bytes the process wrote come
from ``/proc/self/io`` (``wchar``). Beside it, on the same N keys:

* "rewrite the snapshot" — the seed's way, and FileStore's until this change: the whole
  snapshot encoded and written to a temp file, fsynced and renamed over the old one;
* "append + fdatasync (floor)" — the physical floor of persisting one change: one journal line
  appended and ``os.fdatasync``.

Run: ``python bench/flush_bench.py`` (N = 1 k, 100 k, 1 M; ``--quick``: 1 k and 100 k).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import statistics
import sys
import tempfile
import time

import orjson

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from airstore import FileStore

ROUNDS = 20


def _written() -> int:
    try:
        with open(f"/proc/{os.getpid()}/io") as fh:
            for line in fh:
                if line.startswith("wchar:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def _size(path: str) -> int:
    return os.stat(path).st_size


def _value(i: int) -> dict[str, object]:
    return {"v": i, "name": f"item {i}"}


async def _ours(root: str, n: int, rounds: int) -> tuple[float, float, int]:
    async with FileStore(root, flush_interval=3600) as store:
        for i in range(n):
            await store.set("ns", f"k{i}", _value(i))
        await store.flush()
        size = _size(os.path.join(root, "ns.json"))
        times, written = [], []
        for r in range(rounds):
            await store.set("ns", "k1", {"v": -r})
            before, start = _written(), time.perf_counter()
            await store.flush()
            times.append(time.perf_counter() - start)
            written.append(_written() - before)
    return statistics.median(times), statistics.median(written), size


def _rewrite(root: str, n: int, rounds: int) -> tuple[float, float]:
    items = {f"k{i}": _value(i) for i in range(n)}
    path = os.path.join(root, "seed.json")
    times, written = [], []
    for r in range(rounds):
        items["k1"] = {"v": -r}
        before, start = _written(), time.perf_counter()
        tmp = path + ".tmp"
        with open(tmp, "wb") as fh:
            fh.write(orjson.dumps(items))
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
        times.append(time.perf_counter() - start)
        written.append(_written() - before)
    return statistics.median(times), statistics.median(written)


def _floor(root: str, rounds: int) -> tuple[float, float]:
    fd = os.open(os.path.join(root, "floor.jsonl"), os.O_WRONLY | os.O_CREAT | os.O_APPEND)
    times, written = [], []
    try:
        for r in range(rounds):
            line = orjson.dumps(["k1", {"v": -r}]) + b"\n"
            before, start = _written(), time.perf_counter()
            os.write(fd, line)
            os.fdatasync(fd)
            times.append(time.perf_counter() - start)
            written.append(_written() - before)
    finally:
        os.close(fd)
    return statistics.median(times), statistics.median(written)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="1 k and 100 k keys only")
    args = parser.parse_args()
    sizes = [1_000, 100_000] if args.quick else [1_000, 100_000, 1_000_000]
    print(f"flush after one changed key, median of {ROUNDS}")
    print(
        "| keys | snapshot | FileStore flush | rewrite the snapshot | append + fdatasync (floor) |"
    )
    print("|---:|---:|---:|---:|---:|")
    for n in sizes:
        print(f"running {n:,} keys …", file=sys.stderr, flush=True)
        root = tempfile.mkdtemp(prefix="airbench-flush-")
        try:
            ours, ours_b, size = asyncio.run(_ours(os.path.join(root, "store"), n, ROUNDS))
            seed, seed_b = _rewrite(root, n, ROUNDS)
            floor, floor_b = _floor(root, ROUNDS)
        finally:
            shutil.rmtree(root, ignore_errors=True)
        print(
            f"| {n:,} | {size / 1e6:.2f} MB | {ours * 1e3:.2f} ms, {ours_b / 1e3:,.1f} kB "
            f"| {seed * 1e3:.2f} ms, {seed_b / 1e3:,.1f} kB ({seed / ours:.1f}×) "
            f"| {floor * 1e3:.2f} ms, {floor_b:,.0f} B ({ours / floor:.1f}× ours) |"
        )


if __name__ == "__main__":
    main()
