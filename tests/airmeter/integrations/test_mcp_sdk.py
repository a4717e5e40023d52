"""SdkMeterMiddleware end to end: the official client against a real MCPServer."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest
from mcp import Client, StdioServerParameters
from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.server.mcpserver import MCPServer
from mcp.shared import _otel as sdk_otel
from mcp.shared.exceptions import MCPError
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from pydantic import TypeAdapter

from airmeter import Classifier, Layer
from airmeter.integrations import SdkMeterMiddleware, instrument_mcp_server
from airmeter.otel import OtelSink
from airmeter.otel_settings import otel_settings
from airmeter.outcome import UNKNOWN_TOOL
from airmeter.prometheus import PrometheusSink
from tests.airmeter.integrations.conftest import ListRecorder

HERE = Path(__file__).parent


def _server() -> MCPServer[Any]:
    mcp: MCPServer[Any] = MCPServer("sdk-demo")

    @mcp.tool()
    def echo(text: str) -> str:
        return text

    @mcp.tool()
    def fetch_url(url: str) -> str:
        raise ConnectionError(f"cannot reach {url}")

    @mcp.tool()
    def rpc_error() -> str:
        raise MCPError(code=-32001, message="upstream refused")

    @mcp.tool()
    def parse_count(n: int) -> int:
        return TypeAdapter(int).validate_python(f"{n} items")  # the body's own pydantic error

    return mcp


async def _explode(ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> HandlerResult:
    if (
        ctx.params is not None
        and ctx.params.get("name") == "echo"
        and ctx.params.get("arguments", {}).get("text") == "explode"
    ):
        raise RuntimeError("inner middleware failed")
    return await call_next(ctx)


async def test_success_is_recorded_with_every_field(recorder: ListRecorder) -> None:
    mcp = _server()
    instrument_mcp_server(mcp, recorder)
    async with Client(mcp) as client:
        result = await client.call_tool("echo", {"text": "hello"})
    assert not result.is_error
    (rec,) = recorder.records
    assert rec.server == "sdk-demo"
    assert rec.tool == "echo"
    assert rec.layer is Layer.L1
    assert rec.ok
    assert rec.error_type is None
    assert rec.request_id is not None
    assert rec.request_id.isdigit()
    assert rec.protocol_version == "2026-07-28"
    assert rec.client_name == "mcp"
    assert rec.input_bytes == len(orjson.dumps({"text": "hello"}))
    assert rec.output_bytes is not None
    assert rec.output_bytes > len("hello")
    assert rec.latency_ms >= 0
    assert rec.ts_ms > 0


async def test_is_error_results_and_errors_are_recorded_and_raised_unchanged(
    recorder: ListRecorder,
) -> None:
    mcp = _server()
    instrument_mcp_server(mcp, recorder)
    mcp.middleware.append(_explode)  # inside ours: its exception travels through us
    async with Client(mcp) as client:
        failed = await client.call_tool("fetch_url", {"url": "https://example.com"})
        assert failed.is_error
        with pytest.raises(MCPError) as rpc:
            await client.call_tool("rpc_error", {})
        assert rpc.value.error.code == -32001
        with pytest.raises(MCPError):
            await client.call_tool("echo", {"text": "explode"})
        ok = await client.call_tool("echo", {"text": "still works"})
        assert not ok.is_error
    by_tool = recorder.by_tool()
    (fetch,) = by_tool["fetch_url"]
    assert (fetch.ok, fetch.error_type, fetch.layer) == (False, "tool_error", Layer.L5)
    (rpc_rec,) = by_tool["rpc_error"]
    assert (rpc_rec.ok, rpc_rec.error_type) == (False, "-32001")
    exploded, fine = by_tool["echo"]
    assert (exploded.ok, exploded.error_type) == (False, "RuntimeError")
    assert (fine.ok, fine.error_type) == (True, None)
    assert len({r.request_id for r in recorder.records}) == 4


async def test_arguments_the_tool_model_rejects_and_unknown_tools_are_refused_free(
    recorder: ListRecorder,
) -> None:
    mcp = _server()
    instrument_mcp_server(mcp, recorder)
    async with Client(mcp) as client:
        answers = [
            await client.call_tool("echo", {}),
            await client.call_tool("echo", {"text": 5}),
            await client.call_tool("no_such_tool", {}),
            await client.call_tool("parse_count", {"n": 3}),  # valid, then the body fails
            await client.call_tool("parse_count", {"n": "3"}),  # coerced by the model: valid
        ]
    assert all(a.is_error for a in answers)  # the SDK's own answers, unchanged
    got = [(r.tool, r.error_type, r.error_class, r.cost) for r in recorder.records]
    assert got == [
        ("echo", "-32602", "refused", 0.0),
        ("echo", "-32602", "refused", 0.0),
        (UNKNOWN_TOOL, "-32602", "refused", 0.0),
        ("parse_count", "tool_error", "tool_error", None),
        ("parse_count", "tool_error", "tool_error", None),
    ]
    messages = [r.error_message for r in recorder.records[:3]]
    assert messages == [
        "Invalid arguments for tool 'echo': text: Field required",
        "Invalid arguments for tool 'echo': text: Input should be a valid string",
        "Unknown tool: no_such_tool",
    ]


async def test_made_up_tool_names_are_one_series_not_one_each(recorder: ListRecorder) -> None:
    mcp = _server()
    instrument_mcp_server(mcp, recorder)
    async with Client(mcp) as client:
        for i in range(40):
            assert (await client.call_tool(f"made_up_{i}", {})).is_error
    assert {r.tool for r in recorder.records} == {UNKNOWN_TOOL}
    assert recorder.records[7].error_message == "Unknown tool: made_up_7"
    sink = PrometheusSink()
    await sink.write(recorder.records)
    assert "made_up" not in sink.render()
    assert sink.render().count("air_mcp_calls_total{") == 1


async def test_without_the_server_an_is_error_answer_to_bad_arguments_stays_a_tool_error(
    recorder: ListRecorder,
) -> None:
    mcp = _server()
    mcp.middleware.append(SdkMeterMiddleware(recorder))
    async with Client(mcp) as client:
        await client.call_tool("echo", {})
    assert [(r.error_type, r.error_class) for r in recorder.records] == [
        ("tool_error", "tool_error")
    ]


async def test_layer_of_and_options_are_honoured(recorder: ListRecorder) -> None:
    mcp = _server()
    mcp.middleware.append(
        SdkMeterMiddleware(
            recorder,
            server_name="named",
            layer_of=lambda tool: Layer.L7,
            transport="http",
            measure_sizes=False,
        )
    )
    async with Client(mcp) as client:
        await client.call_tool("echo", {"text": "x"})
        await client.list_tools()  # not a tool call: not recorded
    (rec,) = recorder.records
    assert (rec.server, rec.layer, rec.transport) == ("named", Layer.L7, "http")
    assert (rec.input_bytes, rec.output_bytes) == (None, None)


async def test_a_classifier_with_rules_decides_the_layer(recorder: ListRecorder) -> None:
    mcp = _server()
    classifier = Classifier()
    classifier.add_rule("echo", Layer.L6)
    instrument_mcp_server(mcp, recorder, classifier=classifier)
    async with Client(mcp) as client:
        await client.call_tool("echo", {"text": "x"})
    assert recorder.records[0].layer is Layer.L6


async def test_a_failing_recorder_never_breaks_the_call() -> None:
    class Broken:
        def record(self, record: object) -> None:
            raise RuntimeError("recorder down")

    mcp = _server()
    instrument_mcp_server(mcp, Broken())
    async with Client(mcp) as client:
        result = await client.call_tool("echo", {"text": "hi"})
    assert not result.is_error


@pytest.fixture
def sdk_spans(monkeypatch: pytest.MonkeyPatch) -> Iterator[InMemorySpanExporter]:
    """Make the SDK's own OpenTelemetryMiddleware trace, as it does once a user installs an
    OpenTelemetry SDK, without touching the process-global provider."""
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    monkeypatch.setattr(sdk_otel, "_tracer", provider.get_tracer("mcp-python-sdk"))
    yield exporter
    provider.shutdown()


async def test_the_sdk_span_gets_our_attributes_and_otel_sink_adds_no_duplicate(
    recorder: ListRecorder, sdk_spans: InMemorySpanExporter
) -> None:
    mcp = _server()
    instrument_mcp_server(mcp, recorder)
    async with Client(mcp) as client:
        await client.call_tool("echo", {"text": "hi"})
    call_spans = [s for s in sdk_spans.get_finished_spans() if s.name == "tools/call echo"]
    (span,) = call_spans
    assert span.attributes is not None
    assert span.attributes["air.layer"] == "L1"
    assert span.attributes["air.server"] == "sdk-demo"
    ours = InMemorySpanExporter()
    sink = OtelSink(settings=otel_settings({}, requested=True), span_exporter=ours)
    await sink.write(recorder.records)
    await sink.close()
    assert sink.spans_started == 0
    assert ours.get_finished_spans() == ()


async def test_records_over_real_stdio(tmp_path: Path) -> None:
    log = tmp_path / "records.jsonl"
    params = StdioServerParameters(
        command=sys.executable,
        args=[str(HERE / "sdk_stdio_server.py"), str(log)],
        cwd=str(HERE.parents[2]),
        env={"PYTHONPATH": str(HERE.parents[2])},
    )
    async with Client(params) as client:
        assert not (await client.call_tool("get_user", {"user_id": "42"})).is_error
        assert (await client.call_tool("divide", {"a": 1, "b": 0})).is_error
    lines = [orjson.loads(line) for line in log.read_bytes().splitlines()]
    by_tool = {line["tool"]: line for line in lines}
    assert set(by_tool) == {"get_user", "divide"}
    get_user = by_tool["get_user"]
    assert get_user["transport"] == "stdio"
    assert get_user["layer"] == "L2"
    assert get_user["ok"] is True
    assert get_user["server"] == "stdio-demo"
    assert get_user["client_name"] == "mcp"
    assert by_tool["divide"]["error_type"] == "tool_error"
    assert by_tool["divide"]["ok"] is False
