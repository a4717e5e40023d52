"""Start-up benchmark: process spawn → ``initialize`` answer over stdio, aircore beside the peers.

Servers:

- ``air serve`` of a plain-typed server (``str``/``int``/``bool`` parameters: pydantic must not be
  imported; the target is under 300 ms);
- ``air serve`` of a model-typed server (a pydantic model, an ``Enum`` and a ``Literal``: pydantic
  is imported because the signature needs it);
- ``air serve`` of the packaged demo server (15 tools, metered with exact token counts: its CPU
  column shows what loading the tokenizer costs every metered server process);
- the official SDK's ``MCPServer`` and FastMCP serving the same echo tool (``bench/_peers.py``).

Each cell is the median of ``--runs`` spawns (interleaved, so load spikes hit every server).
Run: ``python bench/startup_bench.py [--runs N]``.
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent

PLAIN = '''
from aircore import define_server, define_tool

server = define_server(name="plain", tools=[
    define_tool("echo", params={"text": "string"}, handler=lambda p: p["text"]),
])


@server.tool
def add(a: int, b: float = 1.0, loud: bool = False, note: str | None = None) -> float:
    """Add two numbers."""
    return a + b
'''

MODEL = '''
from enum import Enum
from typing import Literal

from pydantic import BaseModel, Field

from aircore import define_server

server = define_server(name="model")


class Color(Enum):
    RED = "red"
    BLUE = "blue"


class Point(BaseModel):
    x: float
    y: float = Field(0.0, ge=0)


@server.tool
def paint(at: Point, color: Color, mode: Literal["fill", "stroke"] = "fill") -> Point:
    """Paint a point."""
    return at
'''

INIT = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                   "clientInfo": {"name": "bench", "version": "1"}}}  # fmt: skip


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def time_to_initialize(argv: list[str], cwd: Path) -> tuple[float, float]:
    """``(wall ms from spawning argv to its initialize answer, CPU ms of the whole child)``.

    The CPU time (user + system, start to exit) does not grow with the machine's load the way
    the wall time does; a shared, busy machine is the normal case here.
    """
    frame = (json.dumps(INIT) + "\n").encode()
    cpu0 = _children_cpu()
    start = time.perf_counter()
    proc = subprocess.Popen(argv, cwd=cwd, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL)  # fmt: skip
    assert proc.stdin is not None
    assert proc.stdout is not None
    proc.stdin.write(frame)
    proc.stdin.flush()
    line = proc.stdout.readline()
    elapsed = (time.perf_counter() - start) * 1000.0
    proc.stdin.close()
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
    proc.stdout.close()
    if b'"result"' not in line:
        raise RuntimeError(f"{argv}: no initialize answer: {line[:200]!r}")
    return elapsed, (_children_cpu() - cpu0) * 1000.0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--runs", type=int, default=7, help="spawns per server (median kept)")
    parser.add_argument("--no-peers", action="store_true", help="only the aircore servers")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        cwd = Path(tmp)  # not the checkout: ``-m`` puts the working directory first on sys.path
        (cwd / "plain_server.py").write_text(PLAIN)
        (cwd / "model_server.py").write_text(MODEL)
        serve = [sys.executable, "-m", "aircli", "serve", "--transport", "stdio",
                 "--store", "memory://"]  # fmt: skip
        servers: dict[str, list[str]] = {
            "air serve, plain-typed tools": [*serve, "plain_server.py"],
            "air serve, model-typed tool": [*serve, "model_server.py"],
            # metered, with exact token counts: the tokenizer loads on a thread at start
            "air serve, the demo server (metered, exact tokens)": [*serve, "aircli.demo_server"],
        }
        if not args.no_peers:
            for kind, label in (("mcpserver", "MCPServer"), ("fastmcp", "FastMCP")):
                servers[f"{label}, echo tool"] = [sys.executable, str(HERE / "_peers.py"),
                                                   kind, "stdio"]  # fmt: skip
        times: dict[str, list[float]] = {name: [] for name in servers}
        cpus: dict[str, list[float]] = {name: [] for name in servers}
        for _ in range(args.runs):
            for name, argv in servers.items():
                try:
                    wall, cpu = time_to_initialize(argv, cwd)
                    times[name].append(wall)
                    cpus[name].append(cpu)
                except RuntimeError as exc:  # reported, not fatal (an older aircore refuses models)
                    print(f"  {name}: failed: {exc}", file=sys.stderr)
    print(f"| server (median of {args.runs}) | spawn → initialize answer, ms | min | max "
          "| CPU of the process (start to exit), ms |")  # fmt: skip
    print("|---|---|---|---|---|")
    for name, values in times.items():
        if not values:
            print(f"| {name} | failed | - | - | - |")
            continue
        print(f"| {name} | {statistics.median(values):.0f} | {min(values):.0f} | "
              f"{max(values):.0f} | {statistics.median(cpus[name]):.0f} |")  # fmt: skip


if __name__ == "__main__":
    main()
