"""Both adapters count a result's context tokens as ``$AIR_TOKENS`` says, like aircore's meter:
the estimate at once, none when off."""

from __future__ import annotations

from typing import Any

import pytest
from fastmcp import FastMCP
from mcp import Client
from mcp.server.mcpserver import MCPServer

from airmeter.integrations import FastMCPMeterMiddleware, instrument_mcp_server
from airmeter.tokens import EstimateCounter
from tests.airmeter.integrations.conftest import ListRecorder

TEXT = "It is sunny in Oslo and 21 degrees."


async def _call(kind: str, recorder: ListRecorder) -> None:
    if kind == "mcpserver":
        sdk: MCPServer[Any] = MCPServer("tokens")
        sdk.tool()(get_weather)
        instrument_mcp_server(sdk, recorder)
        async with Client(sdk) as client:
            await client.call_tool("get_weather", {"city": "Oslo"})
    else:
        fast = FastMCP("tokens")
        fast.tool(get_weather)
        fast.add_middleware(FastMCPMeterMiddleware(recorder))
        async with Client(fast._mcp_server) as client:
            await client.call_tool("get_weather", {"city": "Oslo"})


def get_weather(city: str) -> str:
    return f"It is sunny in {city} and 21 degrees."


@pytest.mark.parametrize("kind", ["mcpserver", "fastmcp"])
@pytest.mark.parametrize(("mode", "expected"), [("estimate", EstimateCounter().count(TEXT)),
                                                ("off", None)])  # fmt: skip
async def test_the_adapters_count_result_tokens_as_air_tokens_says(
    monkeypatch: pytest.MonkeyPatch, recorder: ListRecorder, kind: str, mode: str,
    expected: int | None,
) -> None:  # fmt: skip
    monkeypatch.setenv("AIR_TOKENS", mode)
    await _call(kind, recorder)
    (rec,) = recorder.records
    assert rec.ok
    assert rec.result_tokens == expected
