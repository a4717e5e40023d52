"""Tool-definitions benchmark: what the standard costs at call time, at start and in the gate.

Workloads (each side by side with its baseline, ratios printed):

1. in-process ``tools/call`` (``server.call_tool``): a plain aircore tool vs the same tool
   bound to a definition (definitions plugin middleware, closed schema);
2. defining and starting a server with N tools: plain vs ``definitions=`` (reads, checks and
   binds N files, rebuilds the validators);
3. the gate on N definition files (``air check DIR``) vs only parsing the same YAML files with
   libyaml (the floor every YAML-based gate pays).

Run: ``python bench/definitions_bench.py [--quick]``.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import yaml

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from aircli.check import check_directory  # noqa: E402
from aircore import define_server, define_tool  # noqa: E402
from aircore.definitions import read_definition_files  # noqa: E402
from tests.aircore.definitions.fixtures import clean_definition, write_definition  # noqa: E402


def _handler(params: dict[str, Any]) -> str:
    return params["query"]


def _name(i: int) -> str:
    """A tool name the gate accepts: letters only (a number code looks like an interface id)."""
    letters = ""
    for _ in range(3):
        i, rest = divmod(i, 26)
        letters += chr(ord("a") + rest)
    return f"docs_tool{letters}_search"


def _tools(n: int) -> list[Any]:
    return [define_tool(_name(i), handler=_handler, params={"query": "string"})
            for i in range(n)]  # fmt: skip


def _write_defs(root: Path, n: int) -> None:
    """N definitions whose schema matches the plain tools' (one string argument)."""
    for i in range(n):
        data = clean_definition(_name(i))
        data["category_key"] = f"cat{i % 10}"  # the folder it is written to
        for part in ("function", "when_to_use", "io_limits"):  # distinct texts: no cache hits
            data["description"][part] += f" ({_name(i)})"
        data["example_queries"] = [f"{q} ({i})" for q in data["example_queries"]]
        del data["output_schema"]
        del data["parameters_schema"]["properties"]["limit"]
        write_definition(root, data, category=f"cat{i % 10}")


async def _calls_per_second(server: Any, seconds: float) -> float:
    async with server:
        args = {"query": "x"}
        for _ in range(200):  # warm up
            await server.call_tool(_name(0), args)
        n = 0
        start = time.perf_counter()
        while (elapsed := time.perf_counter() - start) < seconds:
            for _ in range(500):
                result = await server.call_tool(_name(0), args)
            n += 500
        assert not result.get("isError"), result
    return n / elapsed


async def _start_seconds(make: Any, repeat: int) -> float:
    """Best time to define the tools and the server and start it."""
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        server = make()
        await server.start()
        best = min(best, time.perf_counter() - t0)
        await server.stop()
    return best


def _best(fn: Any, repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    seconds = 0.5 if args.quick else 2.0
    n_tools = 100
    repeat = 2 if args.quick else 5
    rows: list[tuple[str, str, str, str]] = []
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "many"
        _write_defs(root, n_tools)

        plain = asyncio.run(_calls_per_second(define_server(name="p", tools=_tools(1)), seconds))
        one = Path(tmp) / "one"
        _write_defs(one, 1)
        defined = asyncio.run(
            _calls_per_second(define_server(name="d", tools=_tools(1), definitions=one), seconds)
        )
        rows.append(("tools/call in-process", f"{plain:,.0f} calls/s", f"{defined:,.0f} calls/s",
                     f"{defined / plain:.2f}x"))  # fmt: skip

        t_plain = asyncio.run(
            _start_seconds(lambda: define_server(name="p", tools=_tools(n_tools)), repeat)
        )
        t_defs = asyncio.run(
            _start_seconds(
                lambda: define_server(name="d", tools=_tools(n_tools), definitions=root), repeat
            )
        )
        rows.append((f"define + start, {n_tools} tools", f"{t_plain * 1e3:.1f} ms",
                     f"{t_defs * 1e3:.1f} ms", f"{t_defs / t_plain:.1f}x"))  # fmt: skip

        files = sorted(root.glob("cat*/*.yml"))
        loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
        t_yaml = _best(lambda: [yaml.load(p.read_text(), Loader=loader) for p in files], repeat)
        t_read = _best(lambda: read_definition_files(root), repeat)
        t_gate = _best(lambda: check_directory(root), repeat)
        assert check_directory(root).ok
        rows.append((f"YAML parse only, {len(files)} files (floor)", f"{t_yaml * 1e3:.1f} ms",
                     f"{t_read * 1e3:.1f} ms (read)", f"{t_read / t_yaml:.2f}x"))  # fmt: skip
        rows.append((f"air check, {len(files)} files", f"{t_yaml * 1e3:.1f} ms (floor)",
                     f"{t_gate * 1e3:.1f} ms", f"{t_gate / t_yaml:.2f}x"))  # fmt: skip

    head = ("workload", "baseline", "with definitions", "ratio")
    widths = [max(len(r[i]) for r in [head, *rows]) for i in range(4)]
    for row in [head, tuple("-" * w for w in widths), *rows]:
        print(" | ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)))


if __name__ == "__main__":
    main()
