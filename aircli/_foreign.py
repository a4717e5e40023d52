"""The tools of a server built on another MCP library, read for ``air migrate``.

Servers people already run are often the official SDK's ``MCPServer`` or FastMCP. Their
decorators keep the same metadata air's ``define_tool`` does; each library lists it in the
``tools/list`` shape, which is read here without starting the server (no transport, no store).
Both libraries are optional: a module is only checked against the ones that are installed.
"""

from __future__ import annotations

import asyncio
import importlib.metadata
from dataclasses import dataclass
from types import ModuleType
from typing import Any

__all__ = ["FOREIGN_KINDS", "ForeignServer", "ListedTool", "find_foreign_server"]

FOREIGN_KINDS = "the official SDK's MCPServer or FastMCP"
"""The other servers ``air migrate`` reads, as a phrase for messages."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ListedTool:
    """What a foreign server's ``tools/list`` says about one tool (the fields a draft takes)."""

    name: str
    title: str | None
    description: str | None
    input_schema: dict[str, Any]
    output_schema: dict[str, Any] | None
    annotations: dict[str, Any] | None
    tags: tuple[str, ...]
    layer: int | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class ForeignServer:
    """A foreign server found in a module: its name, version and tools."""

    name: str
    version: str | None
    tools: tuple[ListedTool, ...]


def _kinds() -> tuple[type, ...]:
    kinds: list[type] = []
    try:
        from mcp.server.mcpserver import MCPServer

        kinds.append(MCPServer)
    except ImportError:
        pass
    try:
        from fastmcp import FastMCP

        kinds.append(FastMCP)
    except ImportError:
        pass
    return tuple(kinds)


def _library_version(server: object) -> str | None:
    """The version of the library ``server`` is built on (what FastMCP reports as a server's
    version when the server sets none)."""
    package = type(server).__module__.split(".", 1)[0]
    try:
        return importlib.metadata.version(package)
    except (importlib.metadata.PackageNotFoundError, ValueError):
        return None


def _tags(tool: dict[str, Any]) -> tuple[str, ...]:
    meta = tool.get("_meta") or {}
    found = meta.get("tags") or (meta.get("fastmcp") or {}).get("tags") or ()
    return tuple(sorted(str(tag) for tag in found))


def _listed(tool: dict[str, Any]) -> ListedTool:
    return ListedTool(
        name=str(tool["name"]),
        title=tool.get("title"),
        description=tool.get("description"),
        input_schema=dict(tool.get("inputSchema") or {}),
        output_schema=tool.get("outputSchema"),
        annotations=tool.get("annotations"),
        tags=_tags(tool),
    )


async def _list_tools(server: Any) -> list[dict[str, Any]]:
    listed: list[dict[str, Any]] = []
    for tool in await server.list_tools():
        wire = tool.to_mcp_tool() if hasattr(tool, "to_mcp_tool") else tool  # FastMCP's own type
        listed.append(wire.model_dump(by_alias=True, exclude_none=True, mode="json"))
    return listed


def find_foreign_server(module: ModuleType, attr: str) -> ForeignServer | None:
    """The ``MCPServer``/FastMCP server of an imported module, with its tools listed.

    Args:
        module: the imported target.
        attr: the attribute the target named (``""``: the only such server in the module).

    Returns:
        The server, or ``None`` when the module has none (or several and none was named).
    """
    kinds = _kinds()
    if not kinds:
        return None
    if attr:
        candidates = [getattr(module, attr, None)]
    else:
        candidates = list({id(v): v for v in vars(module).values()}.values())
    found = [value for value in candidates if isinstance(value, kinds)]
    if len(found) != 1:
        return None
    server: Any = found[0]
    tools = asyncio.run(_list_tools(server))
    version = getattr(server, "version", None)
    if version and str(version) == _library_version(server):
        version = None  # FastMCP fills in its own version when the server sets none
    return ForeignServer(
        name=str(server.name),
        version=str(version) if version else None,
        tools=tuple(_listed(tool) for tool in tools),
    )
