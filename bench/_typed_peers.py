"""A model-typed tool (``place(order: Order) -> Order``) on aircore and the peers that type
tools (the SDK's ``MCPServer``, FastMCP). Used by ``bench/mcp_bench.py``.

The arguments arrive as an ``Order`` instance; the returned ``Order`` becomes
``structuredContent``. (No ``from __future__ import annotations`` here: the servers resolve
the hints of these module-level functions.)
"""

from typing import Any

from pydantic import BaseModel, Field


class Order(BaseModel):
    sku: str = Field(min_length=1)
    quantity: int = Field(1, ge=1)


def place(order: Order) -> Order:
    return order


def aircore_server() -> Any:
    from aircore import define_server

    app = define_server(name="bench", storage="memory://")
    app.tool(place)
    return app


def mcpserver_server() -> Any:
    from mcp.server.mcpserver import MCPServer

    app = MCPServer("bench")
    app.tool()(place)
    return app


def fastmcp_server() -> Any:
    from fastmcp import FastMCP

    app = FastMCP("bench")
    app.tool(place)
    return app


FACTORIES = {"aircore": aircore_server, "mcpserver": mcpserver_server, "fastmcp": fastmcp_server}
