"""The manifest and a live ``tools/list`` (official ``mcp`` client, real stdio and HTTP, both
protocol eras) expose identical information for every tool of the demo server."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest
from mcp import Client, StdioServerParameters

from aircli._server_check import server_manifest
from tests.aircore.conftest import DEMO, HttpServer


@pytest.fixture(scope="module")
def demo_http_server() -> Any:
    server = HttpServer(DEMO)
    try:
        yield server
    finally:
        assert server.close() == 0


async def _live_tools(target: Any, mode: str) -> list[dict[str, Any]]:
    tools: list[dict[str, Any]] = []
    async with Client(target, mode=mode) as client:
        cursor = None
        while True:
            page = await client.list_tools(cursor=cursor)
            tools += [
                t.model_dump(by_alias=True, exclude_none=True, mode="json") for t in page.tools
            ]
            cursor = page.next_cursor
            if cursor is None:
                return tools


@pytest.mark.parametrize("mode", ["auto", "legacy"])
@pytest.mark.parametrize("transport", ["stdio", "http"])
async def test_manifest_equals_live_tools_list(
    transport: str, mode: str, demo_http_server: HttpServer
) -> None:
    manifest = server_manifest(DEMO)
    expected = {e["name"]: e for e in manifest["tools"] if e["_meta"]["enabled"]}
    target: Any = demo_http_server.url
    if transport == "stdio":
        target = StdioServerParameters(
            command=sys.executable,
            args=["-m", "aircli", "serve", DEMO, "--store", "memory://"],
            cwd=str(Path(DEMO).parent.parent),
        )

    live = {t["name"]: t for t in await _live_tools(target, mode)}

    assert sorted(live) == sorted(expected)
    for name, tool in live.items():
        assert tool == expected[name], name
        # the definition's metadata made it through the wire, under the standard's names
        assert tool["_meta"]["categoryKey"]
        assert tool["_meta"]["version"] == "1.0.0"
        assert len(tool["_meta"]["exampleQueries"]) >= 3
        assert tool["_meta"]["displayDescription"]
        assert tool["_meta"]["register"] is True
        assert tool["annotations"]["title"] == tool["title"]
        assert tool["inputSchema"]["additionalProperties"] is False
