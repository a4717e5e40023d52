"""The same trivial tool (``echo(text) -> text``) on each server under test.

Run as ``python bench/_peers.py KIND stdio`` or ``python bench/_peers.py KIND http PORT`` where
KIND is ``aircore``, ``lowlevel`` (the SDK's low-level ``Server``), ``mcpserver`` (the SDK's
``MCPServer``), ``fastmcp`` or ``floor`` (a raw ASGI app that parses and answers the same body:
the physical floor of HTTP). Used by ``bench/mcp_bench.py``.
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


def floor_app() -> Any:
    """The physical floor of HTTP ``tools/call``: a raw ASGI app that parses the body with
    orjson and answers the echo, no MCP machinery at all."""
    import orjson

    async def app(scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return
        body = b""
        more = True
        while more:
            message = await receive()
            body += message.get("body", b"")
            more = message.get("more_body", False)
        request = orjson.loads(body)
        text = request["params"]["arguments"]["text"]
        result = {"content": [{"type": "text", "text": text}], "resultType": "complete"}
        out = orjson.dumps({"jsonrpc": "2.0", "id": request["id"], "result": result})
        headers = [
            (b"content-type", b"application/json"),
            (b"content-length", str(len(out)).encode()),
        ]
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        await send({"type": "http.response.body", "body": out})

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
    "floor": floor_app,
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


def _serve_http(kind: str, server: Any, port: int, *, fast: bool = True) -> None:
    """Serve ``server`` on ``port``. ``fast``: peers get uvicorn with httptools + uvloop (what
    aircore uses where it exists); else h11 + asyncio."""
    import asyncio

    import uvicorn

    if kind == "aircore":
        server.run("http", port=port, ready=lambda url: print(url, file=sys.stderr, flush=True))
        return
    if kind == "floor" and len(sys.argv) > 4 and sys.argv[4] == "airhttp":
        # the floor app behind airhttp's guard and server (isolates their cost)
        from airhttp import AccessPolicy, GuardedApp, HttpServer, listen_socket

        async def guarded() -> None:
            http = HttpServer(GuardedApp(server, policy=AccessPolicy()))
            task = asyncio.ensure_future(http.serve(listen_socket("127.0.0.1", port)))
            await http.ready.wait()
            print(f"http://127.0.0.1:{port}/mcp", file=sys.stderr, flush=True)
            await task

        import uvloop

        uvloop.run(guarded())
        return
    if kind == "floor":
        app = server
    elif kind in ("lowlevel", "mcpserver"):
        app = server.streamable_http_app(json_response=True, stateless_http=True)
    else:
        app = server.http_app(json_response=True, stateless_http=True)
    config = uvicorn.Config(
        app,
        host="127.0.0.1",
        port=port,
        log_level="error",
        access_log=False,
        http="httptools" if fast else "h11",
        loop="uvloop" if fast else "asyncio",
        lifespan="off" if kind == "floor" else "auto",
    )
    userver = uvicorn.Server(config)

    async def main() -> None:
        task = asyncio.ensure_future(userver.serve())
        while not userver.started:  # noqa: ASYNC110 - uvicorn exposes no started event
            await asyncio.sleep(0.02)
        print(f"http://127.0.0.1:{port}/mcp", file=sys.stderr, flush=True)
        await task

    if fast:
        import uvloop

        uvloop.run(main())
    else:
        asyncio.run(main())


if __name__ == "__main__":
    kind, transport = sys.argv[1], sys.argv[2]
    srv = FACTORIES[kind]()
    if transport == "stdio":
        _serve_stdio(kind, srv)
    else:
        _serve_http(kind, srv, int(sys.argv[3]))
