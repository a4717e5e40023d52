"""MCP server benchmark: the same trivial tool on aircore and the peers, side by side.

Peers: the official SDK's low-level ``Server`` and ``MCPServer`` (mcp 2.x) and FastMCP (4.x).
Workloads:

1. pipelined ``tools/call`` over stdio from one raw JSON-lines driver (server capacity);
2. sequential round trips with the official ``mcp.Client`` over stdio and Streamable HTTP;
3. in-process dispatch (aircore: ``server.handle_message``; peers: ``Client(server)`` in-process,
   the SDK's own in-process path), for the echo tool, aircore's decorated echo, and a tool typed
   with a pydantic model (``place(order: Order) -> Order``) beside MCPServer's and FastMCP's.
4. HTTP capacity (``--workload 7``): 2026-07-28 stateless ``tools/call`` from 16 keep-alive connections (wrk, one
   thread, when installed; else a built-in keep-alive driver), with the physical floor as a row:
   a raw ASGI app on uvicorn + httptools + uvloop that parses the same body with orjson and
   answers. Peers run on uvicorn with httptools + uvloop too. Medians of ``--repeat`` runs.

Run: ``python bench/mcp_bench.py [--quick]``. Prints tables with aircore/peer ratios.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import socket
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

KINDS = ("aircore", "lowlevel", "mcpserver", "fastmcp")
LABELS = {"aircore": "aircore", "lowlevel": "SDK Server", "mcpserver": "MCPServer",
          "fastmcp": "FastMCP", "floor": "raw ASGI floor"}  # fmt: skip
HTTP_KINDS = ("floor", "mcpserver", "fastmcp", "aircore")
HTTP_CONNECTIONS = 16
HTTP_SECONDS = 5


_CLOCKS: dict[str, Callable[[], float]] = {"wall": time.perf_counter, "cpu": time.process_time}
_clock = time.perf_counter
"""The clock of the timed loops in this process (``--clock cpu``: CPU seconds of this process,
all its threads; meaningful for the in-process rows only, whose server runs here)."""


def _frame(obj: Any) -> bytes:
    return json.dumps(obj, separators=(",", ":")).encode() + b"\n"


INIT = {"jsonrpc": "2.0", "id": "init", "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                   "clientInfo": {"name": "bench", "version": "1"}}}  # fmt: skip


async def pipelined_stdio(kind: str, n: int) -> float:
    """Calls/s: n tools/call written back to back, answers read concurrently."""
    proc = await asyncio.create_subprocess_exec(
        sys.executable, str(HERE / "_peers.py"), kind, "stdio",
        stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.DEVNULL, limit=1 << 24,
    )  # fmt: skip
    assert proc.stdin is not None
    assert proc.stdout is not None
    stdin, stdout = proc.stdin, proc.stdout
    stdin.write(_frame(INIT))
    await stdin.drain()
    await stdout.readline()
    stdin.write(_frame({"jsonrpc": "2.0", "method": "notifications/initialized"}))
    payload = b"".join(
        _frame({"jsonrpc": "2.0", "id": i, "method": "tools/call",
                "params": {"name": "echo", "arguments": {"text": f"m{i}"}}})
        for i in range(n)
    )  # fmt: skip

    async def write() -> None:
        step = 64 * 1024
        for pos in range(0, len(payload), step):
            stdin.write(payload[pos : pos + step])
            await stdin.drain()

    async def read() -> None:
        got = 0
        while got < n:
            line = await stdout.readline()
            if not line:
                raise RuntimeError(f"{kind} closed stdout after {got} answers")
            if b'"result"' in line or b'"error"' in line:
                got += 1

    start = time.perf_counter()
    await asyncio.gather(write(), read())
    elapsed = time.perf_counter() - start
    stdin.close()
    try:
        await asyncio.wait_for(proc.wait(), 10)
    except TimeoutError:
        proc.kill()
        await proc.wait()
    return n / elapsed


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


async def _timed_calls(client: Any, n: int, tool: str = "echo", arguments: Any = None) -> float:
    if arguments is None:  # the echo tool: a different text each call
        await client.call_tool("echo", {"text": "warm"})
        start = _clock()
        for i in range(n):
            await client.call_tool("echo", {"text": f"m{i}"})
        return n / (_clock() - start)
    await client.call_tool(tool, arguments)
    start = _clock()
    for _ in range(n):
        await client.call_tool(tool, arguments)
    return n / (_clock() - start)


async def client_stdio(kind: str, n: int) -> float:
    """Calls/s: sequential round trips, official client, stdio."""
    from mcp import Client, StdioServerParameters

    params = StdioServerParameters(command=sys.executable,
                                   args=[str(HERE / "_peers.py"), kind, "stdio"])  # fmt: skip
    async with Client(params) as client:
        return await _timed_calls(client, n)


async def client_http(kind: str, n: int) -> float:
    """Calls/s: sequential round trips, official client, Streamable HTTP."""
    from mcp import Client

    port = _free_port()
    proc = subprocess.Popen(  # noqa: ASYNC220 - started once, outside the timed part
        [sys.executable, str(HERE / "_peers.py"), kind, "http", str(port)],
                            stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True)  # fmt: skip
    try:
        assert proc.stderr is not None
        line = await asyncio.to_thread(proc.stderr.readline)
        if "http://" not in line:
            raise RuntimeError(f"{kind} http server did not start: {line!r}")
        async with Client(f"http://127.0.0.1:{port}/mcp") as client:
            return await _timed_calls(client, n)
    finally:
        proc.terminate()
        proc.wait(timeout=10)
        if proc.stderr is not None:
            proc.stderr.close()


MODERN_CALL = {
    "jsonrpc": "2.0", "id": 1, "method": "tools/call",
    "params": {"name": "echo", "arguments": {"text": "hi"},
               "_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                         "io.modelcontextprotocol/clientCapabilities": {}}},
}  # fmt: skip
MODERN_HEADERS = {
    "Content-Type": "application/json", "Accept": "application/json, text/event-stream",
    "MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call", "Mcp-Name": "echo",
}  # fmt: skip


def _wrk_script() -> str:
    body = json.dumps(MODERN_CALL, separators=(",", ":"))
    lines = ['wrk.method = "POST"', f"wrk.body = '{body}'"]
    lines += [f'wrk.headers["{k}"] = "{v}"' for k, v in MODERN_HEADERS.items()]
    return "\n".join(lines) + "\n"


def _cpu_seconds(pid: int) -> float:
    """User + system CPU seconds a process has used (Linux /proc; 0.0 elsewhere)."""
    import os

    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _wrk(url: str, seconds: int) -> tuple[float, int]:
    import re
    import shutil
    import tempfile

    wrk = shutil.which("wrk")
    assert wrk is not None
    with tempfile.NamedTemporaryFile("w", suffix=".lua", delete=False) as fh:
        fh.write(_wrk_script())
    out = subprocess.run(
        [wrk, "-t1", f"-c{HTTP_CONNECTIONS}", f"-d{seconds}s", "-s", fh.name, url],
        capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    Path(fh.name).unlink()
    bad = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
    if bad:
        raise RuntimeError(f"{bad.group(1)} error answers: {out}")
    found = re.search(r"Requests/sec:\s+([\d.]+)", out)
    total = re.search(r"(\d+) requests in", out)
    if not found or not total:
        raise RuntimeError(f"cannot read wrk's output: {out}")
    return float(found.group(1)), int(total.group(1))


async def _keepalive_driver(port: int, seconds: float) -> tuple[float, int]:
    """The built-in driver when wrk is missing: HTTP_CONNECTIONS keep-alive connections, each
    sending the next request as soon as its answer is in (what wrk does)."""
    body = json.dumps(MODERN_CALL, separators=(",", ":")).encode()
    head = "".join(f"{k}: {v}\r\n" for k, v in MODERN_HEADERS.items())
    request = (
        f"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n{head}Content-Length: {len(body)}\r\n\r\n"
    ).encode() + body
    done = 0
    stop = time.perf_counter() + seconds

    async def one() -> None:
        nonlocal done
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        try:
            while time.perf_counter() < stop:
                writer.write(request)
                status = await reader.readuntil(b"\r\n\r\n")
                if not status.startswith(b"HTTP/1.1 200"):
                    raise RuntimeError(f"error answer: {status[:80]!r}")
                length = int(status.lower().split(b"content-length:")[1].split(b"\r\n")[0])
                await reader.readexactly(length)
                done += 1
        finally:
            writer.close()

    start = time.perf_counter()
    await asyncio.gather(*(one() for _ in range(HTTP_CONNECTIONS)))
    return done / (time.perf_counter() - start), done


async def http_capacity(kind: str, seconds: int) -> tuple[float, float]:
    """Calls/s and the server's CPU µs per call: 2026-07-28 tools/call from 16 keep-alive
    connections (wrk or built-in). CPU per call does not depend on what else the machine
    runs; calls/s does."""
    import shutil

    port = _free_port()
    proc = subprocess.Popen(  # noqa: ASYNC220 - started once, outside the timed part
        [sys.executable, str(HERE / "_peers.py"), kind, "http", str(port)],
        stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True,
    )  # fmt: skip
    try:
        assert proc.stderr is not None
        line = await asyncio.to_thread(proc.stderr.readline)
        if "http://" not in line:
            raise RuntimeError(f"{kind} http server did not start: {line!r}")
        url = f"http://127.0.0.1:{port}/mcp"
        if shutil.which("wrk"):
            await asyncio.to_thread(_wrk, url, 1)  # warm-up
            before = _cpu_seconds(proc.pid)
            rate, count = await asyncio.to_thread(_wrk, url, seconds)
        else:
            await _keepalive_driver(port, 1)
            before = _cpu_seconds(proc.pid)
            rate, count = await _keepalive_driver(port, seconds)
        return rate, (_cpu_seconds(proc.pid) - before) / max(1, count) * 1e6
    finally:
        proc.terminate()
        proc.wait(timeout=10)
        if proc.stderr is not None:
            proc.stderr.close()


async def http_table(repeat: int, seconds: int, kinds: list[str]) -> None:
    """The HTTP capacity table: medians of ``repeat`` interleaved runs, ratios vs each peer."""
    import shutil
    import statistics

    runs: dict[str, list[float]] = {k: [] for k in kinds}
    cpus: dict[str, list[float]] = {k: [] for k in kinds}
    for _rep in range(repeat):
        for kind in kinds:
            try:
                rate, cpu = await http_capacity(kind, seconds)
            except Exception as exc:
                print(f"  HTTP capacity / {kind}: failed: {exc}", file=sys.stderr)
                continue
            runs[kind].append(rate)
            cpus[kind].append(cpu)
            print(
                f"  {'HTTP capacity':42s} {LABELS[kind]:14s} {_fmt(rate)} ({cpu:.0f} µs CPU/call)",
                file=sys.stderr,
            )
    med = {k: statistics.median(v) if v else None for k, v in runs.items()}
    cpu_med = {k: statistics.median(v) if v else None for k, v in cpus.items()}
    driver = "wrk -t1 -c16" if shutil.which("wrk") else "built-in keep-alive driver, 16 conns"
    print(f"\nHTTP tools/call capacity (2026-07-28 stateless, {driver}, median of {repeat})\n")
    print(
        "| server | calls/s | aircore / it | server CPU per call | calls/s per CPU core "
        "| aircore / it (per core) |"
    )
    print("|---|---|---|---|---|---|")
    air, air_cpu = med.get("aircore"), cpu_med.get("aircore")
    for kind in kinds:
        rate, cpu = med[kind], cpu_med[kind]
        ratio = "-" if not air or not rate or kind == "aircore" else f"{air / rate:.2f}x"
        core = "-" if not cpu else f"{1e6 / cpu:,.0f}/s"
        core_ratio = "-" if not air_cpu or not cpu or kind == "aircore" else f"{cpu / air_cpu:.2f}x"
        cpu_text = "-" if cpu is None else f"{cpu:.0f} µs"
        print(f"| {LABELS[kind]} | {_fmt(rate)} | {ratio} | {cpu_text} | {core} | {core_ratio} |")


async def in_process(kind: str, n: int) -> float:
    """Calls/s: in-process dispatch."""
    import _peers

    return await _in_process(_peers.FACTORIES[kind](), kind, n, "echo", {"text": "x"})


async def in_process_decorated(kind: str, n: int) -> float:
    """Calls/s: in-process dispatch, ``@server.tool def echo(text: str) -> str`` (aircore only:
    the peers' echo rows are decorated tools already)."""
    import _peers

    factory = _peers.DECORATED_FACTORIES.get(kind)
    if factory is None:
        raise LookupError("the peers' echo row above is their decorated tool")
    return await _in_process(factory(), kind, n, "echo", {"text": "x"})


async def in_process_model(kind: str, n: int) -> float:
    """Calls/s: in-process dispatch of ``place(order: Order) -> Order`` (a pydantic model in,
    the same model out as structuredContent)."""
    import _typed_peers

    factory = _typed_peers.FACTORIES.get(kind)
    if factory is None:
        raise LookupError(f"{kind} has no typed tools")
    return await _in_process(factory(), kind, n, "place", {"order": {"sku": "A1", "quantity": 2}})


async def _in_process(server: Any, kind: str, n: int, tool: str, arguments: Any) -> float:
    if kind == "aircore":
        await server.start()
        msg = {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
               "params": {"name": tool, "arguments": arguments}}  # fmt: skip
        handle = server.handle_message
        await handle(msg)
        start = _clock()
        for _ in range(n):
            await handle(msg)
        rate = n / (_clock() - start)
        await server.stop()
        return rate
    if kind == "fastmcp":
        from fastmcp import Client as FastClient

        async with FastClient(server) as client:
            return await _timed_calls(client, n, tool, arguments)
    from mcp import Client

    async with Client(server) as client:
        return await _timed_calls(client, n, tool, arguments)


WORKLOADS: list[tuple[str, Callable[[str, int], Coroutine[Any, Any, float]], dict[str, int]]] = [
    ("tools/call pipelined, stdio, raw driver", pipelined_stdio,
     {"aircore": 20000, "default": 2000}),
    ("round trips, official client, stdio", client_stdio, {"aircore": 400, "default": 400}),
    ("round trips, official client, HTTP", client_http, {"aircore": 300, "default": 300}),
    ("in-process dispatch", in_process, {"aircore": 50000, "default": 2000}),
    ("in-process, @server.tool echo(text: str) -> str", in_process_decorated,
     {"aircore": 50000, "default": 2000}),
    ("in-process, model-typed tool (Order in, Order out)", in_process_model,
     {"aircore": 50000, "default": 2000}),
]  # fmt: skip


def _fmt(rate: float | None) -> str:
    return "-" if rate is None else f"{rate:,.0f}/s"


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--quick", action="store_true", help="a fifth of the calls")
    parser.add_argument("--repeat", type=int, default=3, help="runs per cell; the best is kept")
    parser.add_argument("--median", action="store_true", help="keep the median, not the best")
    parser.add_argument(
        "--clock",
        choices=sorted(_CLOCKS),
        default="wall",
        help="cpu: calls per CPU-second of this process (in-process rows; a loaded machine)",
    )
    parser.add_argument("--only", choices=KINDS, action="append", help="run only these servers")
    parser.add_argument(
        "--workload",
        type=int,
        action="append",
        help="run only these workloads (1-7; the last is HTTP capacity)",
    )
    parser.add_argument("--seconds", type=int, default=HTTP_SECONDS, help="HTTP run length")
    parser.add_argument(
        "--http-only", choices=HTTP_KINDS, action="append", help="HTTP capacity: only these"
    )
    args = parser.parse_args()
    global _clock
    _clock = _CLOCKS[args.clock]
    kinds = args.only or list(KINDS)
    rows: list[tuple[str, dict[str, float | None]]] = []
    for index, (title, fn, sizes) in enumerate(WORKLOADS, 1):
        if args.workload and index not in args.workload:
            continue
        rates: dict[str, float | None] = dict.fromkeys(kinds)
        runs: dict[str, list[float]] = {k: [] for k in kinds}
        for _rep in range(args.repeat):  # interleaved repeats, best kept: the machine is shared
            for kind in kinds:
                n = sizes.get(kind, sizes["default"])
                if args.quick:
                    n = max(50, n // 5)
                try:
                    rate = await fn(kind, n)
                except Exception as exc:  # a peer that fails is reported, not fatal
                    print(f"  {title} / {kind}: failed: {exc}", file=sys.stderr)
                    continue
                runs[kind].append(rate)
                rates[kind] = statistics.median(runs[kind]) if args.median else max(runs[kind])
                print(f"  {title:42s} {LABELS[kind]:11s} {_fmt(rate)}", file=sys.stderr)
        rows.append((title, rates))
    peers = [k for k in kinds if k != "aircore"]
    if rows:
        _print_rows(rows, kinds, peers)
    if not args.workload or len(WORKLOADS) + 1 in args.workload:
        seconds = max(1, args.seconds // 5) if args.quick else args.seconds
        await http_table(args.repeat, seconds, args.http_only or list(HTTP_KINDS))


def _print_rows(
    rows: list[tuple[str, dict[str, float | None]]], kinds: list[str], peers: list[str]
) -> None:
    header = ["workload", *(LABELS[k] for k in kinds),
              *(f"aircore / {LABELS[k]}" for k in peers if "aircore" in kinds)]  # fmt: skip
    print("| " + " | ".join(header) + " |")
    print("|" + "---|" * len(header))
    for title, rates in rows:
        cells = [title, *(_fmt(rates[k]) for k in kinds)]
        if "aircore" in kinds:
            for k in peers:
                a, b = rates.get("aircore"), rates.get(k)
                cells.append("-" if not a or not b else f"{a / b:.1f}x")
        print("| " + " | ".join(cells) + " |")


if __name__ == "__main__":
    asyncio.run(main())
