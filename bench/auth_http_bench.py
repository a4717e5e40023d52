"""OAuth end to end over HTTP: what JWT authorization costs ``air serve`` and ``air gateway``.

Two comparisons, each measured in one run, the variants interleaved (2026-07-28 stateless
``tools/call`` of a trivial ``echo``, 16 keep-alive connections from wrk, or the built-in
driver without it; the server's CPU per call from ``/proc``):

1. ``air serve`` capacity with ``--auth-config`` (a JWT in every request, key and verified
   token cached) against the same server without authorization. Target: ≥ 0.8.
2. ``air gateway`` with client authorization (``auth:``) in front of an upstream ``air serve
   --auth-config`` that requires its own tokens, which the gateway gets with its own client
   credentials (``oauth:``), against calling that upstream directly with a token for it.
   Target: ≥ 0.5.

The authorization server is the tests' local issuer (``tests/airhttp/issuer.py``: metadata,
JWKS, a client-credentials token endpoint) in a thread of this process; it is asked for keys
once per process and for the gateway's token once (tokens live an hour). The load generator,
the servers and the issuer share the machine's cores.

Run: ``.venv/bin/python bench/auth_http_bench.py [--quick] [--runs 3] [--seconds 5]``.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import statistics
import sys
import tempfile
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

import gateway_bench as gb  # noqa: E402 - the drivers and process helpers of the gateway bench

from tests.airhttp.issuer import Issuer, running_issuer  # noqa: E402

TARGETS = {"serve": 0.8, "gateway": 0.5}
ECHO = """
from aircore import define_server, define_tool

server = define_server(
    name="bench",
    tools=[define_tool(name="echo", params={"text": "string"}, handler=lambda p: p["text"])],
)
"""


@contextmanager
def issuer_thread() -> Iterator[Issuer]:
    """The local issuer, served by an event loop in a thread of its own."""
    ready = threading.Event()
    stop: list[asyncio.Event] = []
    found: list[Issuer] = []
    loop = asyncio.new_event_loop()

    async def serve() -> None:
        async with running_issuer() as issuer:
            found.append(issuer)
            stop.append(asyncio.Event())
            ready.set()
            await stop[0].wait()

    thread = threading.Thread(target=loop.run_until_complete, args=(serve(),), daemon=True)
    thread.start()
    if not ready.wait(30):
        raise RuntimeError("the issuer did not start")
    try:
        yield found[0]
    finally:
        loop.call_soon_threadsafe(stop[0].set)
        thread.join(30)
        loop.close()


@contextmanager
def bearer(token: str | None) -> Iterator[None]:
    """Every request the gateway bench's drivers send carries ``token`` meanwhile."""
    if token is not None:
        gb.HEADERS["Authorization"] = f"Bearer {token}"
    try:
        yield
    finally:
        gb.HEADERS.pop("Authorization", None)


def serve(folder: Path, name: str, *, auth: str | None, port: int | None = None) -> Any:
    """``air serve`` of the echo server on ``port`` (any free one), with ``auth`` as its
    ``--auth-config`` when given."""
    (folder / "echo.py").write_text(ECHO)
    argv = [sys.executable, "-m", "aircli", "serve", str(folder / "echo.py"), "--transport",
            "http", "--port", str(port or 0), "--store", "memory://"]  # fmt: skip
    if auth is not None:
        (folder / f"{name}.yml").write_text(auth)
        argv += ["--auth-config", str(folder / f"{name}.yml")]
    return gb._started(argv)


def measure(
    url: str, upstream: str, token: str | None, runs: int, seconds: float
) -> list[tuple[float, ...]]:
    with bearer(token):
        gb.load(url, 16, 1.0)  # warm up: keys fetched, the token verified and cached
        return [gb.load_cpu(url, upstream, 16, seconds) for _ in range(runs)]


def _gateway_argv(config: Path, port: int) -> list[str]:
    return [sys.executable, "-m", "aircli", "gateway", "--config", str(config), "--port",
            str(port), "--store", "memory://", "--no-meter"]  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="1 run of 2 s each")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--seconds", type=float, default=5.0)
    args = parser.parse_args()
    runs, seconds = (1, 2.0) if args.quick else (args.runs, args.seconds)
    driver = "wrk, 16 connections" if shutil.which("wrk") else "built-in driver, 16 connections"
    print(f"load generator: {driver}; {runs} interleaved run(s) of {seconds:g} s; median")
    rows: dict[str, list[tuple[float, ...]]] = {}
    with issuer_thread() as issuer, tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        os.environ["BENCH_GATEWAY_SECRET"] = "air-gateway-secret"  # the issuer's rule: <id>-secret
        port, up_port, gw_port = gb._free_port(), gb._free_port(), gb._free_port()
        resource = f"http://127.0.0.1:{port}/mcp"
        up_resource = f"http://127.0.0.1:{up_port}/mcp"
        gw_resource = f"http://127.0.0.1:{gw_port}/mcp"

        def auth(res: str) -> str:
            return f"issuer: {issuer.url}\nresource: {res}\nscopes: [mcp:tools]\n"

        with (
            serve(folder, "plain", auth=None) as plain,
            serve(folder, "jwt", auth=auth(resource), port=port) as jwt,
            serve(folder, "upstream", auth=auth(up_resource), port=up_port) as upstream,
        ):
            (folder / "gw-plain.yml").write_text(f"servers:\n  - name: bench\n    url: {plain}\n")
            (folder / "gw-auth.yml").write_text(
                "servers:\n"
                f"  - name: bench\n    url: {up_resource}\n    oauth:\n"
                f"      issuer: {issuer.url}\n      client_id: air-gateway\n"
                "      client_secret: {env: BENCH_GATEWAY_SECRET}\n      scope: mcp:tools\n"
                f"auth:\n  issuer: {issuer.url}\n  resource: {gw_resource}\n"
                "  scopes: [mcp:tools]\n"
            )
            with (
                gb._started(_gateway_argv(folder / "gw-plain.yml", 0)) as gw_plain,
                gb._started(_gateway_argv(folder / "gw-auth.yml", gw_port)) as gw_auth,
            ):
                runs_of = {
                    "air serve, no auth": (plain, plain, None),
                    "air serve, JWT auth": (jwt, jwt, issuer.token(resource=resource)),
                    "air gateway, no auth (upstream: no auth)": (gw_plain, plain, None),
                    "upstream direct, JWT auth": (
                        upstream, upstream, issuer.token(resource=up_resource)
                    ),
                    "air gateway, client JWT + upstream client credentials": (
                        gw_auth, upstream, issuer.token(resource=gw_resource)
                    ),
                }  # fmt: skip
                for _ in range(runs):
                    for name, (url, up, token) in runs_of.items():
                        rows.setdefault(name, []).extend(measure(url, up, token, 1, seconds))
        token_requests = issuer.token_requests
    med = {
        name: tuple(statistics.median(r[i] for r in v) for i in range(5))
        for name, v in rows.items()
    }
    print()
    print("| run | calls/s | p50 ms | CPU µs/call (serving process) | CPU µs/call (upstream) "
          "| CPU µs/call (load generator) |")  # fmt: skip
    print("|---|---:|---:|---:|---:|---:|")
    for name, (rps, p50, cpu, up_cpu, driver_cpu) in med.items():
        up = "-" if "gateway" not in name else f"{up_cpu:.0f}"
        print(f"| {name} | {rps:,.0f} | {p50:.2f} | {cpu:.0f} | {up} | {driver_cpu:.0f} |")
    serve_ratio = med["air serve, JWT auth"][0] / med["air serve, no auth"][0]
    gw_ratio = (
        med["air gateway, client JWT + upstream client credentials"][0]
        / med["upstream direct, JWT auth"][0]
    )
    added = med["air serve, JWT auth"][2] - med["air serve, no auth"][2]
    plain_ratio = med["air gateway, no auth (upstream: no auth)"][0] / med["air serve, no auth"][0]
    print()
    print("| ratio | measured | target | met |")
    print("|---|---:|---:|:---:|")
    for label, value, target in (
        ("air serve capacity, JWT auth / no auth", serve_ratio, TARGETS["serve"]),
        ("air gateway (client auth + upstream credentials) / direct", gw_ratio, TARGETS["gateway"]),
    ):
        print(f"| {label} | {value:.2f} | >= {target} | {'yes' if value >= target else 'no'} |")
    print(f"| (the same run without any auth: air gateway / direct) | {plain_ratio:.2f} | - | - |")
    direct = med["upstream direct, JWT auth"]
    via = med["air gateway, client JWT + upstream client credentials"]
    # every process here is one thread: a path runs at most as fast as its busiest process,
    # and all of them together at most as fast as the cores allow
    cores = os.cpu_count() or 1
    direct_cap = min(1e6 / max(direct[2], direct[4]), cores * 1e6 / (direct[2] + direct[4]))
    via_cap = min(1e6 / max(via[2], via[3], via[4]), cores * 1e6 / (via[2] + via[3] + via[4]))
    print(
        f"\nCPU per call in every process (serving + upstream + load generator): direct "
        f"{direct[2] + direct[4]:.0f} µs, through the gateway {via[2] + via[3] + via[4]:.0f} µs; "
        f"on {cores} cores at most {direct_cap:,.0f} and {via_cap:,.0f} calls/s: a ratio of at "
        f"most {via_cap / direct_cap:.2f} with these CPU costs (measured: {gw_ratio:.2f})"
    )
    print(f"\nCPU the JWT check adds per call in air serve: {added:.1f} µs (target <= 30); the "
          f"gateway asked the issuer for {token_requests} token(s) in all")  # fmt: skip


if __name__ == "__main__":
    main()
