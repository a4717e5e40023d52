"""Gateway benchmark: one aircore upstream called directly, through ``air gateway`` (without
and with metering), and through fastmcp's proxy (``create_proxy``), in one run.

Workloads (2026-07-28 stateless ``tools/call`` of a trivial ``echo``):

1. throughput and p50 at 16 keep-alive connections, driven by wrk (``make bench`` installs it)
   or, without wrk, by a built-in asyncio HTTP/1.1 driver;
2. p50 latency at one connection (the built-in driver), so the gateway's added time per hop is
   ``p50(gateway) - p50(direct)``;
   and, during the 16-connection runs, the CPU time each serving process spends per call
   (from ``/proc/<pid>/stat``): a figure a loaded machine disturbs far less than calls/s;
3. the upstream HTTP clients the gateway could use (httpx, aiohttp, and the small keep-alive
   client it ships, ``airgateway._http11``), each calling the upstream directly, sequentially
   and 16 at a time.

The load generator, the gateway and the upstream share the machine's cores. Reports medians of
``--runs`` runs. Run: ``python bench/gateway_bench.py [--quick]``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
PIDS: dict[str, int] = {}
"""The pid of each started process, by the URL it printed."""
ROOT = HERE.parent
MODERN = "2026-07-28"
PARAMS = {
    "name": "echo",
    "arguments": {"text": "hello"},
    "_meta": {
        "io.modelcontextprotocol/protocolVersion": MODERN,
        "io.modelcontextprotocol/clientCapabilities": {},
    },
}
BODY = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": PARAMS},
                  separators=(",", ":")).encode()  # fmt: skip
HEADERS = {
    "Content-Type": "application/json",
    "Accept": "application/json, text/event-stream",
    "MCP-Protocol-Version": MODERN,
    "Mcp-Method": "tools/call",
    "Mcp-Name": "echo",
}
TARGETS = {"throughput": 0.40, "added_p50_ms": 0.5, "vs_fastmcp": 50.0}


# ---- processes ---------------------------------------------------------------------------
def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextmanager
def _started(argv: list[str], timeout: float = 60.0) -> Iterator[str]:
    """Start ``argv`` and yield the first http URL it prints on stderr."""
    proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True, cwd=ROOT)  # fmt: skip
    assert proc.stderr is not None
    found: list[str] = []
    seen = threading.Event()

    def drain() -> None:
        assert proc.stderr is not None
        for line in proc.stderr:
            match = re.search(r"http://127\.0\.0\.1:\d+/\S*", line)
            if match and not found:
                found.append(match.group(0))
                seen.set()
        seen.set()

    threading.Thread(target=drain, daemon=True).start()
    try:
        if not seen.wait(timeout) or not found:
            raise RuntimeError(f"{argv} printed no URL")
        PIDS[found[0]] = proc.pid
        yield found[0]
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def _upstream() -> Any:
    port = _free_port()
    return _started([sys.executable, str(HERE / "_peers.py"), "aircore", "http", str(port)])


def _gateway(upstream: str, folder: Path, *, metered: bool) -> Any:
    config = folder / f"gateway-{int(metered)}.yml"
    config.write_text(f"servers:\n  - name: bench\n    url: {upstream}\n")
    argv = [sys.executable, "-m", "aircli", "gateway", "--config", str(config), "--port", "0",
            "--store", "memory://"]  # fmt: skip
    if not metered:
        argv.append("--no-meter")
    return _started(argv)


def _fastmcp_proxy(upstream: str) -> Any:
    port = _free_port()
    return _started([sys.executable, str(HERE / "_gateway_peers.py"), "fastmcp-proxy", upstream,
                     str(port)])  # fmt: skip


# ---- load generators -------------------------------------------------------------------------
def _request_bytes(url: str) -> tuple[str, int, bytes]:
    match = re.match(r"http://([^:/]+):(\d+)(/\S*)", url)
    assert match is not None
    host, port, path = match.group(1), int(match.group(2)), match.group(3)
    head = [f"POST {path} HTTP/1.1", f"Host: {host}:{port}", f"Content-Length: {len(BODY)}"]
    head += [f"{k}: {v}" for k, v in HEADERS.items()]
    return host, port, ("\r\n".join(head) + "\r\n\r\n").encode() + BODY


async def _one_connection(host: str, port: int, request: bytes, stop: float,
                          latencies: list[float]) -> int:  # fmt: skip
    reader, writer = await asyncio.open_connection(host, port)
    done = 0
    try:
        while time.perf_counter() < stop:
            t0 = time.perf_counter()
            writer.write(request)
            head = await reader.readuntil(b"\r\n\r\n")
            length = int(re.search(rb"(?i)content-length:\s*(\d+)", head).group(1))  # type: ignore[union-attr]
            body = await reader.readexactly(length)
            latencies.append(time.perf_counter() - t0)
            if not head.startswith(b"HTTP/1.1 200") or b'"result"' not in body:
                raise RuntimeError(f"bad answer: {head[:40]!r} {body[:200]!r}")
            done += 1
    finally:
        writer.close()
    return done


def drive(url: str, connections: int, seconds: float) -> tuple[float, float]:
    """The built-in driver: (calls/s, p50 ms) over ``connections`` keep-alive connections."""
    host, port, request = _request_bytes(url)
    latencies: list[float] = []

    async def main() -> int:
        stop = time.perf_counter() + seconds
        counts = await asyncio.gather(*(_one_connection(host, port, request, stop, latencies)
                                        for _ in range(connections)))  # fmt: skip
        return sum(counts)

    started = time.perf_counter()
    total = asyncio.run(main())
    elapsed = time.perf_counter() - started
    return total / elapsed, statistics.median(latencies) * 1000.0


_LUA = """wrk.method = "POST"
wrk.body = {body}
{headers}
"""


def _wrk(url: str, connections: int, seconds: float) -> tuple[float, float]:
    """wrk: (calls/s, p50 ms). Non-2xx answers make the run fail."""
    with tempfile.NamedTemporaryFile("w", suffix=".lua", delete=False) as f:
        headers = "\n".join(f'wrk.headers["{k}"] = "{v}"' for k, v in HEADERS.items())
        f.write(_LUA.format(body=json.dumps(BODY.decode()), headers=headers))
        script = f.name
    try:
        out = subprocess.run(["wrk", f"-t{min(2, connections)}", f"-c{connections}", f"-d{seconds:g}s", "--latency",
                              "-s", script, url], capture_output=True, text=True, check=True,
                             timeout=seconds + 60).stdout  # fmt: skip
    finally:
        os.unlink(script)
    if "Non-2xx" in out:
        raise RuntimeError(f"wrk saw errors:\n{out}")
    rps = float(re.search(r"Requests/sec:\s*([\d.]+)", out).group(1))  # type: ignore[union-attr]
    value, unit = re.search(r"\s50%\s+([\d.]+)(us|ms|s)", out).groups()  # type: ignore[union-attr]
    scale = {"us": 0.001, "ms": 1.0, "s": 1000.0}[unit]
    return rps, float(value) * scale


def _cpu_s(pid: int) -> float:
    """User + system CPU seconds of a process so far (Linux ``/proc``; 0 elsewhere)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _driver_cpu_s() -> float:
    """CPU seconds of the load generator so far: this process (the built-in driver) and the
    children it waited for (wrk); 0 where ``resource`` is missing."""
    try:
        import resource
    except ImportError:
        return 0.0
    me, kids = (
        resource.getrusage(resource.RUSAGE_SELF),
        resource.getrusage(resource.RUSAGE_CHILDREN),
    )
    return me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime


def load_cpu(url: str, upstream: str, connections: int, seconds: float) -> tuple[float, ...]:
    """``load`` plus the CPU µs per call of the process serving ``url``, of the upstream (the
    same process when ``url`` is the upstream) and of the load generator."""
    pid, up = PIDS[url], PIDS[upstream]
    before = (_cpu_s(pid), _cpu_s(up), _driver_cpu_s())
    rps, p50 = load(url, connections, seconds)
    calls = max(1.0, rps * seconds)
    return (rps, p50, (_cpu_s(pid) - before[0]) / calls * 1e6,
            (_cpu_s(up) - before[1]) / calls * 1e6,
            (_driver_cpu_s() - before[2]) / calls * 1e6)  # fmt: skip


def load(url: str, connections: int, seconds: float) -> tuple[float, float]:
    """wrk when installed, else the built-in driver."""
    if shutil.which("wrk"):
        return _wrk(url, connections, seconds)
    return drive(url, connections, seconds)


# ---- client libraries ------------------------------------------------------------------------
async def _httpx(url: str, conc: int, n: int) -> float:
    import httpx

    async with httpx.AsyncClient(limits=httpx.Limits(max_keepalive_connections=64)) as client:

        async def worker(k: int) -> None:
            for _ in range(k):
                resp = await client.post(url, content=BODY, headers=HEADERS)
                if resp.status_code != 200:
                    raise RuntimeError(resp.text)

        await worker(50)
        t0 = time.perf_counter()
        await asyncio.gather(*(worker(n // conc) for _ in range(conc)))
        return n / (time.perf_counter() - t0)


async def _aiohttp(url: str, conc: int, n: int) -> float:
    import aiohttp

    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=64)) as client:

        async def worker(k: int) -> None:
            for _ in range(k):
                async with client.post(url, data=BODY, headers=HEADERS) as resp:
                    await resp.read()
                    if resp.status != 200:
                        raise RuntimeError(str(resp.status))

        await worker(50)
        t0 = time.perf_counter()
        await asyncio.gather(*(worker(n // conc) for _ in range(conc)))
        return n / (time.perf_counter() - t0)


async def _own(url: str, conc: int, n: int) -> float:
    from airgateway._http11 import Http11Pool

    fixed = {k: v for k, v in HEADERS.items() if k in ("Content-Type", "Accept")}
    extra = {k: v for k, v in HEADERS.items() if k not in fixed}
    pool = Http11Pool(url, size=64, headers=fixed)

    async def worker(k: int) -> None:
        for _ in range(k):
            resp = await pool.request("POST", BODY, extra)
            if resp.status != 200:
                raise RuntimeError(str(resp.status))

    await worker(50)
    t0 = time.perf_counter()
    await asyncio.gather(*(worker(n // conc) for _ in range(conc)))
    await pool.close()
    return n / (time.perf_counter() - t0)


# ---- main ----------------------------------------------------------------------------------
def _median(runs: int, measure: Any) -> tuple[float, ...]:
    results = [measure() for _ in range(runs)]
    return tuple(statistics.median(r[i] for r in results) for i in range(len(results[0])))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="1 run of 2 s each")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--seconds", type=float, default=5.0)
    args = parser.parse_args()
    runs, seconds = (1, 2.0) if args.quick else (args.runs, args.seconds)
    driver = "wrk" if shutil.which("wrk") else "built-in asyncio driver (wrk not installed)"
    print(f"load generator: {driver}; {runs} run(s) of {seconds:g} s; median reported")
    rows: dict[str, tuple[float, ...]] = {}
    one: dict[str, float] = {}
    libs: dict[str, tuple[float, float]] = {}
    with tempfile.TemporaryDirectory() as tmp, _upstream() as upstream:
        with (
            _gateway(upstream, Path(tmp), metered=False) as gw,
            _gateway(upstream, Path(tmp), metered=True) as gw_meter,
        ):
            for name, url in (("direct", upstream), ("gateway", gw), ("gateway+meter", gw_meter)):
                load(url, 16, 1.0)  # warm up
                rows[name] = _median(runs, lambda u=url: load_cpu(u, upstream, 16, seconds))
                one[name] = _median(runs, lambda u=url: drive(u, 1, seconds))[1]
        with _fastmcp_proxy(upstream) as proxy:
            load(proxy, 1, 1.0)
            rows["fastmcp proxy"] = load_cpu(proxy, upstream, 16, max(seconds, 5.0))
            one["fastmcp proxy"] = drive(proxy, 1, max(seconds, 3.0))[1]
        n = 1000 if args.quick else 3000
        for lib, fn in (("httpx", _httpx), ("aiohttp", _aiohttp), ("airgateway._http11", _own)):
            libs[lib] = (asyncio.run(fn(upstream, 1, n)), asyncio.run(fn(upstream, 16, n)))
    direct_rps = rows["direct"][0]
    print()
    print("| path | calls/s (16 conns) | p50 ms (16 conns) | p50 ms (1 conn) | vs direct "
          "| CPU µs/call: proxy | CPU µs/call: upstream |")  # fmt: skip
    print("|---|---:|---:|---:|---:|---:|---:|")
    for name, (rps, p50, cpu, up_cpu, _driver_cpu) in rows.items():
        mine = "-" if name == "direct" else f"{cpu:.0f}"
        print(f"| {name} | {rps:,.0f} | {p50:.2f} | {one[name]:.3f} | {rps / direct_rps:.2f}x "
              f"| {mine} | {up_cpu:.0f} |")  # fmt: skip
    up_cpu = rows["direct"][3]
    gw_cpu = rows["gateway"][2]
    print(
        f"\nCPU per call: the gateway {gw_cpu:.0f} µs, the upstream {up_cpu:.0f} µs "
        f"({gw_cpu / up_cpu:.1f}x the server it fronts)"
    )
    gw_rps = rows["gateway"][0]
    added = one["gateway"] - one["direct"]
    added_meter = one["gateway+meter"] - one["direct"]
    print()
    print("| target | measured | goal | met |")
    print("|---|---:|---:|:---:|")
    ratio = gw_rps / direct_rps
    vs = gw_rps / rows["fastmcp proxy"][0]
    print(
        f"| throughput through the gateway / direct | {ratio:.2f} | >= {TARGETS['throughput']:.2f} | {'yes' if ratio >= TARGETS['throughput'] else 'no'} |"
    )
    print(
        f"| added p50 per hop at 1 connection (ms) | {added:.3f} (metered {added_meter:.3f}) | <= {TARGETS['added_p50_ms']} | {'yes' if added <= TARGETS['added_p50_ms'] else 'no'} |"
    )
    print(
        f"| gateway / fastmcp proxy throughput | {vs:.0f}x | >= {TARGETS['vs_fastmcp']:.0f}x | {'yes' if vs >= TARGETS['vs_fastmcp'] else 'no'} |"
    )
    print()
    print(
        "| upstream client library (direct to the upstream) | 1 at a time calls/s | 16 at a time calls/s |"
    )
    print("|---|---:|---:|")
    for lib, (seq, conc) in libs.items():
        print(f"| {lib} | {seq:,.0f} | {conc:,.0f} |")
    for lib in ("aiohttp", "airgateway._http11"):
        print(
            f"| {lib} / httpx | {libs[lib][0] / libs['httpx'][0]:.1f}x | {libs[lib][1] / libs['httpx'][1]:.1f}x |"
        )


if __name__ == "__main__":
    main()
