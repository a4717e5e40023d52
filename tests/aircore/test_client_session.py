"""The SDK's lower-level ``ClientSession`` over ``stdio_client`` and ``streamable_http_client``
(legacy ``initialize`` handshake, then the 2026-07-28 probe via ``negotiate_auto``)."""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import mcp.types as mt
import pytest
from mcp import ClientSession, StdioServerParameters, stdio_client
from mcp.client._probe import negotiate_auto
from mcp.client.streamable_http import streamable_http_client

from tests.aircore.conftest import DEMO, HttpServer


@asynccontextmanager
async def _streams(transport: str, http: HttpServer) -> AsyncIterator[Any]:
    if transport == "stdio":
        params = StdioServerParameters(
            command=sys.executable,
            args=["-m", "aircli", "serve", DEMO, "--store", "memory://"],
        )
        async with stdio_client(params) as streams:
            yield streams
    else:
        async with streamable_http_client(http.url) as streams:
            yield streams


@pytest.mark.parametrize("transport", ["stdio", "http"])
async def test_client_session_legacy_handshake(transport: str, demo_http: HttpServer) -> None:
    async with _streams(transport, demo_http) as (read, write), ClientSession(read, write) as s:
        init = await s.initialize()
        assert init.protocol_version == "2025-11-25"
        assert init.server_info.name == "air-demo"
        assert init.capabilities.tools is not None
        await s.send_ping()
        tools = await s.list_tools()
        assert "convert_units" in {t.name for t in tools.tools}
        result = await s.call_tool("convert_units",
                                   {"value": 10, "from_unit": "km", "to_unit": "mi"})  # fmt: skip
        assert isinstance(result.content[0], mt.TextContent)
        assert '"value": 6.21371' in result.content[0].text
        bad = await s.call_tool("convert_units", {"value": 10})
        assert bad.is_error is True
        prompt = await s.get_prompt("review_code", {"code": "pass"})
        assert prompt.messages[0].role == "user"


@pytest.mark.parametrize("transport", ["stdio", "http"])
async def test_client_session_auto_negotiates_the_modern_era(
    transport: str, demo_http: HttpServer
) -> None:
    async with _streams(transport, demo_http) as (read, write), ClientSession(read, write) as s:
        await negotiate_auto(s)
        assert s.discover_result is not None
        assert "2026-07-28" in s.discover_result.supported_versions
        result = await s.call_tool("get_user", {"user_id": "u2"})
        assert result.structured_content == {"name": "Bob", "email": "bob@example.com"}
