"""FastMCPMeterMiddleware end to end: the official client against a real FastMCP server."""

from __future__ import annotations

import anyio
import orjson
from fastmcp import FastMCP
from fastmcp.exceptions import ToolError, ValidationError
from fastmcp.tools.base import ToolResult
from mcp import Client
from mcp.shared.exceptions import MCPError

from airmeter import Layer
from airmeter.integrations import FastMCPMeterMiddleware
from airmeter.outcome import UNKNOWN_TOOL
from airmeter.prometheus import PrometheusSink
from tests.airmeter.integrations.conftest import ListRecorder


def _server(recorder: ListRecorder, **options: object) -> FastMCP:
    mcp = FastMCP("fast-demo")

    @mcp.tool
    def get_user(user_id: str) -> str:
        return f"user {user_id}"

    @mcp.tool
    def summarize(text: str) -> str:
        raise ZeroDivisionError("no words")

    @mcp.tool
    def refuse() -> str:
        raise ToolError("not allowed")

    @mcp.tool
    def generate_text() -> ToolResult:
        return ToolResult(content="model unavailable", is_error=True)

    @mcp.tool
    def upstream() -> str:
        raise MCPError(code=-32042, message="upstream said no")

    @mcp.tool
    def check(value: str) -> str:
        raise ValidationError(f"{value!r} is not a known code")  # the tool's own finding

    mcp.add_middleware(FastMCPMeterMiddleware(recorder, server_name=mcp.name, **options))  # type: ignore[arg-type]
    return mcp


async def test_success_is_recorded_with_every_field(recorder: ListRecorder) -> None:
    mcp = _server(recorder)
    async with Client(mcp._mcp_server) as client:
        result = await client.call_tool("get_user", {"user_id": "42"})
    assert not result.is_error
    (rec,) = recorder.records
    assert (rec.server, rec.tool, rec.layer) == ("fast-demo", "get_user", Layer.L2)
    assert (rec.ok, rec.error_type) == (True, None)
    assert rec.request_id is not None
    assert rec.request_id.isdigit()
    assert rec.protocol_version == "2026-07-28"
    assert rec.client_name == "mcp"
    assert rec.session_id
    assert rec.input_bytes == len(orjson.dumps({"user_id": "42"}))
    assert rec.output_bytes is not None
    assert rec.output_bytes > len("user 42")


async def test_errors_and_is_error_results_carry_their_type(recorder: ListRecorder) -> None:
    mcp = _server(recorder)
    async with Client(mcp._mcp_server) as client:
        crashed = await client.call_tool("summarize", {"text": "abc"})
        refused = await client.call_tool("refuse", {})
        model = await client.call_tool("generate_text", {})
        missing = await client.call_tool("no_such_tool", {})
        invalid = await client.call_tool("get_user", {"user_id": 5})
        ok = await client.call_tool("get_user", {"user_id": "7"})
    assert [crashed.is_error, refused.is_error, model.is_error, missing.is_error] == [True] * 4
    assert invalid.is_error
    assert not ok.is_error
    seen = [(r.tool, r.ok, r.error_type, r.layer) for r in recorder.records]
    assert [r.error_class for r in recorder.records] == [
        "exception", "tool_error", "tool_error", "refused", "refused", None,
    ]  # fmt: skip
    assert [r.cost for r in recorder.records if r.error_class == "refused"] == [0.0, 0.0]
    assert seen == [
        ("summarize", False, "ZeroDivisionError", Layer.L4),
        ("refuse", False, "tool_error", Layer.L4),
        ("generate_text", False, "tool_error", Layer.L6),
        (UNKNOWN_TOOL, False, "-32602", Layer.L4),  # refused, as in aircore; one series
        ("get_user", False, "-32602", Layer.L2),
        ("get_user", True, None, Layer.L2),
    ]


async def test_made_up_tool_names_are_one_series_not_one_each(recorder: ListRecorder) -> None:
    mcp = _server(recorder)
    async with Client(mcp._mcp_server) as client:
        for i in range(40):
            assert (await client.call_tool(f"made_up_{i}", {})).is_error
    assert {(r.tool, r.error_class) for r in recorder.records} == {(UNKNOWN_TOOL, "refused")}
    message = recorder.records[7].error_message
    assert message is not None
    assert "made_up_7" in message
    sink = PrometheusSink()
    await sink.write(recorder.records)
    assert "made_up" not in sink.render()
    assert sink.render().count("air_mcp_calls_total{") == 1


async def test_an_mcp_error_is_recorded_with_its_code_and_still_raised(
    recorder: ListRecorder,
) -> None:
    mcp = _server(recorder)
    async with Client(mcp._mcp_server) as client:
        result = await client.call_tool("upstream", {})
    # FastMCP masks it into an isError result; the record keeps the JSON-RPC code.
    assert result.is_error
    (rec,) = recorder.records
    assert (rec.ok, rec.error_type) == (False, "-32042")


async def test_options_are_honoured(recorder: ListRecorder) -> None:
    mcp = _server(recorder, layer_of=lambda tool: Layer.L3, transport="stdio", measure_sizes=False)
    async with Client(mcp._mcp_server) as client:
        await client.call_tool("get_user", {"user_id": "1"})
        await client.list_tools()
    (rec,) = recorder.records
    assert (rec.layer, rec.transport, rec.input_bytes, rec.output_bytes) == (
        Layer.L3,
        "stdio",
        None,
        None,
    )


async def test_a_validation_error_the_tool_raises_itself_is_not_a_refused_call(
    recorder: ListRecorder,
) -> None:
    """Only FastMCP's own argument check (a ValidationError made from pydantic's) is refused:
    a tool that ran and raised one is charged and counted as failed."""
    mcp = _server(recorder)
    async with Client(mcp._mcp_server) as client:
        ran = await client.call_tool("check", {"value": "x"})
        refused = await client.call_tool("check", {"value": 5})
    assert ran.is_error
    assert refused.is_error
    ran_rec, refused_rec = recorder.records
    assert ran_rec.error_class != "refused"
    assert ran_rec.cost != 0.0
    assert (refused_rec.error_type, refused_rec.error_class) == ("-32602", "refused")


async def test_a_tool_past_its_fastmcp_timeout_is_recorded_as_a_timeout(
    recorder: ListRecorder,
) -> None:
    """FastMCP turns a tool that outlives ``timeout=`` into ``MCPError(-32000, "… timed out …")``
    raised ``from None`` over the ``TimeoutError``: the record says ``TimeoutError``, class
    ``timeout`` (it read as the generic server-error code, class ``protocol``)."""
    mcp = _server(recorder)

    @mcp.tool(timeout=0.05)
    async def slow() -> str:
        await anyio.sleep(5)
        return "late"

    async with Client(mcp._mcp_server) as client:
        result = await client.call_tool("slow", {})
        quick = await client.call_tool("upstream", {})  # a -32000-range code of its own
    assert result.is_error
    assert "timed out" in str(result.content)
    timed_out, upstream = recorder.records
    assert (timed_out.ok, timed_out.error_type, timed_out.error_class) == (
        False,
        "TimeoutError",
        "timeout",
    )
    assert (upstream.error_type, quick.is_error) == ("-32042", True)
