"""The README's quick-start servers: the official SDK's ``MCPServer`` or FastMCP, metered by
air's adapter into a store, served over real stdio by the tests.

Usage: ``quickstart_server.py mcpserver|fastmcp STORE_URL``.
"""

from __future__ import annotations

import asyncio
import sys

from airmeter import Meter
from airstore import create_storage


def add_note(text: str) -> str:
    return f"saved: {text}"


async def main(kind: str, url: str) -> None:
    store = await create_storage(url)
    if kind == "mcpserver":
        from mcp.server.mcpserver import MCPServer

        from airmeter.integrations import instrument_mcp_server

        sdk: MCPServer = MCPServer("notes")
        sdk.tool()(add_note)
        async with Meter(store=store, server=sdk.name) as meter:
            instrument_mcp_server(sdk, meter)
            await sdk.run_stdio_async()
    else:
        from fastmcp import FastMCP

        from airmeter.integrations import FastMCPMeterMiddleware

        fast = FastMCP("notes")
        fast.tool(add_note)
        async with Meter(store=store, server=fast.name) as meter:
            fast.add_middleware(FastMCPMeterMiddleware(meter))
            await fast.run_stdio_async(show_banner=False)
    await store.close()  # after the meter delivered every call


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2]))
