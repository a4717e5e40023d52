"""The same trivial tool (``echo(text) -> text``) on each server under test.

Run as ``python bench/_peers.py KIND stdio`` or ``python bench/_peers.py KIND http PORT`` where
KIND is ``aircore``, ``lowlevel`` (the SDK's low-level ``Server``), ``mcpserver`` (the SDK's
``MCPServer``) or ``fastmcp``. Used by ``bench/mcp_bench.py``.
"""

from __future__ import annotations

import logging
import sys
from typing import Any

logging.basicConfig(level=logging.ERROR, stream=sys.stderr)


def aircore_server() -> Any:
    from aircore import define_server, define_tool

    return define_server(
        name="bench",
        storage="memory://",
        tools=[define_tool("echo", params={"text": "string"}, handler=lambda p: p["text"])],
    )


def lowlevel_server() -> Any:
    import mcp_types as types
    from mcp.server.lowlevel import Server

    tool = types.Tool(
        name="echo",
        input_schema={"type": "object", "properties": {"text": {"type": "string"}},
                      "required": ["text"]},
    )  # fmt: skip

    async def list_tools(ctx: Any, params: Any) -> types.ListToolsResult:
        return types.ListToolsResult(tools=[tool])

    async def call_tool(ctx: Any, params: Any) -> types.CallToolResult:
        text = (params.arguments or {}).get("text", "")
        return types.CallToolResult(content=[types.TextContent(type="text", text=text)])

    return Server("bench", on_list_tools=list_tools, on_call_tool=call_tool)


def mcpserver_server() -> Any:
    from mcp.server.mcpserver import MCPServer

    app = MCPServer("bench")

    @app.tool()
    def echo(text: str) -> str:
        return text

    return app


def fastmcp_server() -> Any:
    from fastmcp import FastMCP

    app = FastMCP("bench")

    @app.tool
    def echo(text: str) -> str:
        return text

    return app


def aircore_decorated_server() -> Any:
    from aircore import define_server

    app = define_server(name="bench", storage="memory://")

    @app.tool
    def echo(text: str) -> str:
        return text

    return app


DECORATED_FACTORIES = {"aircore": aircore_decorated_server}

FACTORIES = {
    "aircore": aircore_server,
    "lowlevel": lowlevel_server,
    "mcpserver": mcpserver_server,
    "fastmcp": fastmcp_server,
}


def _serve_stdio(kind: str, server: Any) -> None:
    import anyio

    if kind == "aircore":
        import asyncio

        asyncio.run(server.serve_stdio())
    elif kind == "lowlevel":
        from mcp.server.stdio import stdio_server

        async def main() -> None:
            async with stdio_server() as (read, write):
                await server.run(read, write, server.create_initialization_options())

        anyio.run(main)
    elif kind == "mcpserver":
        server.run("stdio")
    else:
        server.run(transport="stdio", show_banner=False)


def _serve_http(kind: str, server: Any, port: int) -> None:
    import asyncio

    import uvicorn

    if kind == "aircore":
        asyncio.run(
            server.serve_http(port=port, ready=lambda url: print(url, file=sys.stderr, flush=True))
        )
        return
    if kind in ("lowlevel", "mcpserver"):
        app = server.streamable_http_app(json_response=True)
    else:
        app = server.http_app(json_response=True)
    config = uvicorn.Config(app, host="127.0.0.1", port=port, log_level="error")
    userver = uvicorn.Server(config)

    async def main() -> None:
        task = asyncio.ensure_future(userver.serve())
        while not userver.started:  # noqa: ASYNC110 - uvicorn exposes no started event
            await asyncio.sleep(0.02)
        print(f"http://127.0.0.1:{port}/mcp", file=sys.stderr, flush=True)
        await task

    asyncio.run(main())


if __name__ == "__main__":
    kind, transport = sys.argv[1], sys.argv[2]
    srv = FACTORIES[kind]()
    if transport == "stdio":
        _serve_stdio(kind, srv)
    else:
        _serve_http(kind, srv, int(sys.argv[3]))
