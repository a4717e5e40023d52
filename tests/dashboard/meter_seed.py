"""A store filled through the real meter: a metered aircore server whose calls end in every
error class, an SLO file, and a second meter process that drops records and has a hung sink."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from pathlib import Path
from typing import Any

from aircore import define_server, define_tool, timeout_plugin
from airmeter import MeterMiddleware
from airmeter.context_cost import context_report
from airstore import FileStore

SERVER = "shop"
FLAKY_CALLS = 40  # every odd one returns isError
SLO_YAML = """\
objectives:
  - tool: flaky
    server: shop
    availability: 0.99
  - tool: "ok_*"
    latency_p95_ms: 5000
"""

DROPPING_METER = """
import asyncio, sys, time
from airmeter import CallRecord, Layer, MemorySink, Meter
from airstore import FileStore

async def main(path):
    async with FileStore(path) as store:
        hung = MemorySink(block=asyncio.Event())  # a sink that never returns
        meter = Meter(store=store, sinks=[hung], server="shop", instance_id="shop-2",
                      max_pending=5, flush_interval=3600, sink_timeout=0.2)
        for i in range(20):  # nothing is delivered meanwhile: 15 are dropped
            meter.record(CallRecord(ts_ms=int(time.time() * 1000), server="shop", tool="ok_ping",
                                    layer=Layer.L1, latency_ms=1.0, ok=True, request_id=str(i)))
        await meter.start()
        await meter.flush()
        await meter.stop()
        print(meter.health.dropped, meter.health.sink_timeouts, flush=True)

asyncio.run(main(sys.argv[1]))
"""


def shop_tools() -> list[Any]:
    """Tools whose calls end as success, ``tool_error``, ``exception``, ``timeout``, ``refused``."""

    async def slow(params: dict[str, Any]) -> str:
        await asyncio.sleep(30)
        return "late"

    def boom(params: dict[str, Any]) -> str:
        raise RuntimeError("boom")

    def flaky(params: dict[str, Any]) -> Any:
        if params["n"] % 2:
            return {"content": [{"type": "text", "text": "out of stock"}], "isError": True}
        return f"item {params['n']} in stock"

    def ok_ping(params: dict[str, Any]) -> str:
        return "pong"

    return [
        define_tool("flaky", params={"n": "integer"}, handler=flaky,
                    description="Check the stock of an item; fails half of the time."),
        define_tool("boom", handler=boom, description="Always raises."),
        define_tool("slow", handler=slow, description="Never finishes in time."),
        define_tool("ok_ping", handler=ok_ping, description="Answers pong."),
    ]  # fmt: skip


EXPECTED_CLASSES = {"tool_error": FLAKY_CALLS // 2, "exception": 2, "timeout": 1, "refused": 3}
"""What :func:`record_shop` records, by error class."""


async def record_shop(data: Path) -> None:
    """Record calls through a metered aircore server into the FileStore at ``data``."""
    hook = MeterMiddleware(count_tokens="estimate")
    server = define_server(name=SERVER, tools=shop_tools(), storage=f"file://{data}",
                           meter=hook, use=[timeout_plugin(0.2)])  # fmt: skip
    async with server:
        for n in range(FLAKY_CALLS):
            await server.call_tool("flaky", {"n": n})
        for _ in range(3):
            await server.call_tool("flaky", {})  # refused: n is required
        for _ in range(2):
            await server.call_tool("boom", {})
        await server.call_tool("slow", {})
        for _ in range(5):
            await server.call_tool("ok_ping", {})
    async with FileStore(data, read_only=True) as store:  # definitions are counted off the path
        async with asyncio.timeout(30):
            while True:
                if (await context_report(store)).definition_tokens_total:
                    return
                await asyncio.sleep(0.05)


def run_dropping_meter(data: Path) -> tuple[int, int]:
    """Run a meter in another process that drops records and times out on a hung sink;
    returns its (dropped, sink_timeouts)."""
    out = subprocess.run(
        [sys.executable, "-c", DROPPING_METER, str(data)],
        capture_output=True, text=True, timeout=120, check=True,
    )  # fmt: skip
    dropped, timeouts = out.stdout.split()
    return int(dropped), int(timeouts)


def fill(tmp: Path) -> tuple[Path, Path]:
    """The store (``tmp/data``) and the SLO file (``tmp/slo.yml``)."""
    data = tmp / "data"
    asyncio.run(record_shop(data))
    dropped, timeouts = run_dropping_meter(data)
    assert dropped == 15
    assert timeouts >= 1
    slo = tmp / "slo.yml"
    slo.write_text(SLO_YAML, encoding="utf-8")
    return data, slo
