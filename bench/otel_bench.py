"""Cost of exporting one call record: OtelSink and PrometheusSink against bare OTel SDK calls,
and the adapters' added cost on the official SDK's MCPServer and on FastMCP (in-process).

Run: .venv/bin/python bench/otel_bench.py [--records N] [--calls N]
Exporters are no-ops (the network work happens on the SDK's background threads anyway), so
the figures are the CPU cost on the event loop's thread.
"""

from __future__ import annotations

import argparse
import asyncio
import time
from collections.abc import Callable, Sequence
from typing import Any

from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import (
    AggregationTemporality,
    MetricExporter,
    MetricExportResult,
    MetricsData,
    PeriodicExportingMetricReader,
)
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter, SpanExportResult
from opentelemetry.trace import SpanKind

from airmeter import CallRecord, Layer, OtelSink, PrometheusSink
from airmeter.otel_settings import otel_settings
from airmeter.semconv import DURATION_BUCKETS_S, metric_attributes, span_attributes


class NullSpanExporter(SpanExporter):
    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        return SpanExportResult.SUCCESS


class NullMetricExporter(MetricExporter):
    def __init__(self) -> None:
        super().__init__(preferred_temporality={}, preferred_aggregation={})

    def export(
        self, metrics_data: MetricsData, timeout_millis: float = 10_000, **kwargs: Any
    ) -> MetricExportResult:
        return MetricExportResult.SUCCESS

    def force_flush(self, timeout_millis: float = 10_000) -> bool:
        return True

    def shutdown(self, timeout_millis: float = 30_000, **kwargs: Any) -> None:
        pass


_ = AggregationTemporality  # re-exported name kept for readers comparing set-ups


def records(n: int) -> list[CallRecord]:
    tools = ["get_user", "search_notes", "fetch_url", "summarize", "echo"]
    return [
        CallRecord(
            ts_ms=1_760_000_000_000 + i,
            server="bench",
            tool=tools[i % len(tools)],
            layer=Layer((i % 7) + 1),
            latency_ms=float(i % 500) / 10,
            ok=i % 10 != 0,
            error_type=None if i % 10 else "tool_error",
            request_id=str(i),
            session_id="s",
            protocol_version="2025-11-25",
            transport="stdio",
        )
        for i in range(n)
    ]


def per_item_us(fn: Callable[[], None], n: int) -> float:
    start = time.perf_counter()
    fn()
    return (time.perf_counter() - start) / n * 1e6


def bare_span(recs: list[CallRecord]) -> float:
    provider = TracerProvider(shutdown_on_exit=False)
    provider.add_span_processor(BatchSpanProcessor(NullSpanExporter(), max_queue_size=1 << 20))
    tracer = provider.get_tracer("bench")

    def run() -> None:
        for r in recs:
            span = tracer.start_span("tools/call x", kind=SpanKind.SERVER, start_time=r.ts_ms)
            span.end(end_time=r.ts_ms + 1)

    us = per_item_us(run, len(recs))
    provider.shutdown()
    return us


def bare_histogram(recs: list[CallRecord]) -> float:
    reader = PeriodicExportingMetricReader(NullMetricExporter(), export_interval_millis=60_000)
    provider = MeterProvider(metric_readers=[reader], shutdown_on_exit=False)
    hist = provider.get_meter("bench").create_histogram(
        "d", unit="s", explicit_bucket_boundaries_advisory=DURATION_BUCKETS_S
    )
    attrs = {"a": "b"}

    def run() -> None:
        for r in recs:
            hist.record(r.latency_ms / 1000, attrs)

    us = per_item_us(run, len(recs))
    provider.shutdown()
    return us


def naive_per_record(recs: list[CallRecord]) -> float:
    """What a straightforward exporter does: span with the semconv attributes, histogram
    point and counter point, per record, attributes built each time."""
    provider = TracerProvider(shutdown_on_exit=False)
    provider.add_span_processor(BatchSpanProcessor(NullSpanExporter(), max_queue_size=1 << 20))
    tracer = provider.get_tracer("bench")
    reader = PeriodicExportingMetricReader(NullMetricExporter(), export_interval_millis=60_000)
    meters = MeterProvider(metric_readers=[reader], shutdown_on_exit=False)
    meter = meters.get_meter("bench")
    hist = meter.create_histogram(
        "d", unit="s", explicit_bucket_boundaries_advisory=DURATION_BUCKETS_S
    )
    counter = meter.create_counter("c")

    def run() -> None:
        for r in recs:
            span = tracer.start_span(
                "tools/call x", kind=SpanKind.SERVER, attributes=span_attributes(r)
            )
            span.end()
            attrs = metric_attributes(r)
            hist.record(r.latency_ms / 1000, attrs)
            counter.add(1, attrs)

    us = per_item_us(run, len(recs))
    provider.shutdown()
    meters.shutdown()
    return us


def attribute_mapping(recs: list[CallRecord]) -> float:
    def run() -> None:
        for r in recs:
            metric_attributes(r)
            span_attributes(r)

    return per_item_us(run, len(recs))


async def otel_sink(recs: list[CallRecord]) -> tuple[float, float]:
    """(µs per record spent in write() on the loop, µs per record until the worker drained)."""
    sink = OtelSink(
        settings=otel_settings({"OTEL_BSP_MAX_QUEUE_SIZE": str(1 << 20)}, requested=True),
        span_exporter=NullSpanExporter(),
        metric_exporter=NullMetricExporter(),
        max_pending_batches=1 << 16,
    )
    on_loop = 0.0
    start = time.perf_counter()
    for i in range(0, len(recs), 256):
        t = time.perf_counter()
        await sink.write(recs[i : i + 256])
        on_loop += time.perf_counter() - t
    await asyncio.to_thread(sink._queue.join)  # the worker converted everything
    total = time.perf_counter() - start
    await sink.close()
    return on_loop / len(recs) * 1e6, total / len(recs) * 1e6


async def prometheus_sink(recs: list[CallRecord]) -> float:
    sink = PrometheusSink()
    start = time.perf_counter()
    for i in range(0, len(recs), 256):
        await sink.write(recs[i : i + 256])
    return (time.perf_counter() - start) / len(recs) * 1e6


class NullRecorder:
    def record(self, record: CallRecord) -> None:
        pass


async def adapters_direct(n: int) -> list[tuple[str, float]]:
    """Each adapter called directly with a minimal context and an instant call_next: the
    adapter's own cost per call, free of the servers' noise."""
    from types import SimpleNamespace

    import mcp_types as mt
    from fastmcp.server.middleware import MiddlewareContext
    from fastmcp.tools.base import ToolResult

    from airmeter.integrations import FastMCPMeterMiddleware, SdkMeterMiddleware

    sdk = SdkMeterMiddleware(NullRecorder())
    ctx: Any = SimpleNamespace(
        method="tools/call",
        params={"name": "get_user", "arguments": {"user_id": "42"}},
        request=None,
        request_id=7,
        protocol_version="2025-11-25",
        session=SimpleNamespace(client_params=None),
    )
    wire = {"content": [{"type": "text", "text": "user 42"}], "isError": False}

    async def sdk_next(_: Any) -> dict[str, Any]:
        return wire

    async def plain_next(_: Any) -> Any:
        return await sdk_next(_)

    fast = FastMCPMeterMiddleware(NullRecorder())
    fctx: Any = MiddlewareContext(
        message=mt.CallToolRequestParams(name="get_user", arguments={"user_id": "42"})
    )
    result = ToolResult(content="user 42")

    async def fast_next(_: Any) -> ToolResult:
        return result

    async def timed(call: Callable[[], Any]) -> float:
        await call()
        start = time.perf_counter()
        for _ in range(n):
            await call()
        return (time.perf_counter() - start) / n * 1e6

    base = await timed(lambda: plain_next(ctx))
    return [
        ("bare await of call_next (floor)", base),
        ("SdkMeterMiddleware, per call", await timed(lambda: sdk(ctx, sdk_next))),
        (
            "FastMCPMeterMiddleware, per call",
            await timed(lambda: fast.on_call_tool(fctx, fast_next)),
        ),
    ]


async def mcpserver_calls(n: int, metered: bool) -> float:
    from mcp import Client
    from mcp.server.mcpserver import MCPServer

    from airmeter.integrations import instrument_mcp_server

    mcp: MCPServer[Any] = MCPServer("bench")

    @mcp.tool()
    def echo(text: str) -> str:
        return text

    if metered:
        instrument_mcp_server(mcp, NullRecorder())
    async with Client(mcp) as client:
        await client.call_tool("echo", {"text": "warm"})
        start = time.perf_counter()
        for _ in range(n):
            await client.call_tool("echo", {"text": "hi"})
        return (time.perf_counter() - start) / n * 1e6


async def fastmcp_calls(n: int, metered: bool, empty: bool = False) -> float:
    from fastmcp import FastMCP
    from fastmcp.server.middleware import Middleware
    from mcp import Client

    from airmeter.integrations import FastMCPMeterMiddleware

    mcp = FastMCP("bench")

    @mcp.tool
    def echo(text: str) -> str:
        return text

    if metered:
        mcp.add_middleware(FastMCPMeterMiddleware(NullRecorder()))
    elif empty:
        mcp.add_middleware(Middleware())  # what any middleware costs in FastMCP
    async with Client(mcp._mcp_server) as client:
        await client.call_tool("echo", {"text": "warm"})
        start = time.perf_counter()
        for _ in range(n):
            await client.call_tool("echo", {"text": "hi"})
        return (time.perf_counter() - start) / n * 1e6


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--records", type=int, default=50_000)
    parser.add_argument("--calls", type=int, default=500)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    recs = records(args.records)

    span_us = bare_span(recs)
    loop_us, total_us = await otel_sink(recs)
    hist_us = bare_histogram(recs)
    rows = [
        ("bare SDK span (start+end, batch processor)", span_us),
        ("bare SDK histogram point", hist_us),
        ("semconv attribute mapping (ours)", attribute_mapping(recs)),
        ("naive: span+attrs, histogram, counter each", naive_per_record(recs)),
        ("OtelSink.write on the event loop", loop_us),
        ("OtelSink end to end (worker thread)", total_us),
        ("PrometheusSink.write, per record", await prometheus_sink(recs)),
    ]
    print(f"\nper record ({args.records} records)")
    print(f"{'workload':<46}{'µs/record':>12}{'vs bare span':>14}")
    for name, us in rows:
        print(f"{name:<46}{us:>12.2f}{us / span_us:>13.2f}x")

    print(f"\nadapters called directly ({args.records} calls, sizes measured)")
    print(f"{'workload':<46}{'µs/call':>12}{'vs bare span':>14}")
    for name, us in await adapters_direct(args.records):
        print(f"{name:<46}{us:>12.2f}{us / span_us:>13.2f}x")

    print(
        f"\nadapter overhead, in-process tools/call ({args.calls} calls x {args.rounds} rounds, best)"
    )
    print(f"{'server':<30}{'plain µs/call':>15}{'metered µs/call':>17}{'added µs':>10}{'ratio':>8}")
    for name, fn in (("MCPServer (mcp 2.x)", mcpserver_calls), ("FastMCP 4.x", fastmcp_calls)):
        plain, metered = float("inf"), float("inf")
        for _ in range(args.rounds):  # interleaved, best of: the machine is shared
            plain = min(plain, await fn(args.calls, False))
            metered = min(metered, await fn(args.calls, True))
        print(
            f"{name:<30}{plain:>15.1f}{metered:>17.1f}{metered - plain:>10.1f}"
            f"{metered / plain:>7.2f}x"
        )
    empty = float("inf")
    metered = float("inf")
    for _ in range(args.rounds):
        empty = min(empty, await fastmcp_calls(args.calls, False, empty=True))
        metered = min(metered, await fastmcp_calls(args.calls, True))
    name = "FastMCP, vs empty Middleware"
    print(
        f"{name:<30}{empty:>15.1f}{metered:>17.1f}{metered - empty:>10.1f}{metered / empty:>7.2f}x"
    )


if __name__ == "__main__":
    asyncio.run(main())
