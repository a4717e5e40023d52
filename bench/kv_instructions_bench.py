"""Instructions per KV set, counted by callgrind: the store bench's kv set workload without the
noise of a shared machine.

Wall-clock and CPU-time rates of ``bench/store_bench.py`` move by up to 2x between runs of the
same code on a shared 2-core VM; an instruction count does not (callgrind counts the same total
for the same binary, input and environment whatever else the machine does). Each row runs, in a
fresh process under ``valgrind --tool=callgrind``, N awaited ``set(ns, f"k{i}", {"v": i})`` and
then ``flush()`` (the store bench's "kv set" row), once with N = 1 and once with N = 1 + COUNT;
the difference divided by COUNT is what one set costs, start-up and import excluded. The async
floor is an awaited coroutine that stores into a dict; "÷ floor" is the floor's count divided
by the store's (the fraction of the floor's rate the store would reach if time followed
instructions: it does not quite, a store also touches more memory). The "(pure Python)" rows
run with airstore's C speedups off (``AIR_SPEEDUPS=off``), the others require them.

Run: ``python bench/kv_instructions_bench.py`` (COUNT = 20 000; ``--count`` to change). Needs
``valgrind`` (Debian's package). ``PYTHONHASHSEED`` is fixed so that dict probing is the same
in both runs of a row.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

_PROGRAM = """
import asyncio, sys, tempfile
sys.path.insert(0, sys.argv[3])
from airstore import FileStore, MemoryStore
kind, n = sys.argv[1], int(sys.argv[2])
async def main():
    if kind == "async floor":
        kv = {}
        async def put(ns, key, value):
            kv[key] = value
        for i in range(n):
            await put("kv", f"k{i}", {"v": i})
        return
    with tempfile.TemporaryDirectory() as tmp:
        store = FileStore(tmp) if kind.startswith("FileStore") else MemoryStore()
        await store.init()
        for i in range(n):
            await store.set("kv", f"k{i}", {"v": i})
        await store.flush()
        await store.close()
asyncio.run(main())
"""

PURE = " (pure Python)"
KINDS = ["FileStore", "MemoryStore", "FileStore" + PURE, "MemoryStore" + PURE, "async floor"]


def _instructions(kind: str, n: int, out_dir: str) -> int:
    env = {**os.environ, "PYTHONHASHSEED": "0"}
    env["AIR_SPEEDUPS"] = "off" if kind.endswith(PURE) else "require"
    argv = [
        "valgrind",
        "--tool=callgrind",
        f"--callgrind-out-file={os.path.join(out_dir, 'callgrind.out')}",
        sys.executable,
        "-c",
        _PROGRAM,
        kind,
        str(n),
        ROOT,
    ]
    done = subprocess.run(argv, env=env, capture_output=True, text=True, check=True)
    match = re.search(r"Collected : (\d+)", done.stderr)
    if match is None:
        raise RuntimeError(f"callgrind printed no count for {kind}: {done.stderr[-500:]}")
    return int(match.group(1))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=20_000, help="sets counted per row")
    args = parser.parse_args()
    if shutil.which("valgrind") is None:
        print("valgrind is not installed (apt-get install valgrind): nothing measured")
        return
    per_set: dict[str, float] = {}
    with tempfile.TemporaryDirectory(prefix="airbench-cg-") as out:
        for kind in KINDS:
            print(f"counting {kind} …", file=sys.stderr, flush=True)
            base = _instructions(kind, 1, out)
            full = _instructions(kind, 1 + args.count, out)
            per_set[kind] = (full - base) / args.count
    floor = per_set["async floor"]
    print(f"\nkv set (k{{i}}, {{v: i}}) then flush(), {args.count:,} sets, callgrind")
    print("| store | instructions per set | ÷ floor |")
    print("|---|---:|---:|")
    for kind in KINDS:
        ratio = "—" if kind == "async floor" else f"{floor / per_set[kind]:.2f}"
        print(f"| {kind} | {per_set[kind]:,.0f} | {ratio} |")


if __name__ == "__main__":
    main()
