"""The tool manifest: every tool's MCP metadata, as ``tools/list`` exposes it, in one JSON file.

Each entry is exactly the ``Tool`` object of ``tools/list`` (``name``, ``title``, ``description``,
``inputSchema``, ``outputSchema``, ``annotations``, ``_meta``) plus two operational keys beside
it, ``timeoutMillis`` and ``enabled``, which are not part of the MCP ``Tool``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import orjson

from aircore.definitions.model import ToolDefinition
from aircore.definitions.render import render_tool
from aircore.definitions.types import JSONObject

__all__ = [
    "MANIFEST_FORMAT",
    "OPERATIONAL_KEYS",
    "build_manifest",
    "dump_manifest",
    "manifest_entry",
    "manifest_from_definitions",
]

MANIFEST_FORMAT = 1
"""Version of the manifest layout (``manifestFormat``)."""

OPERATIONAL_KEYS: tuple[str, ...] = ("timeoutMillis", "enabled")
"""Keys of a manifest entry that are not part of the MCP ``Tool`` object."""


def manifest_entry(tool: Mapping[str, Any], *, timeout_ms: int | None, enabled: bool) -> JSONObject:
    """One manifest entry: the MCP ``Tool`` object plus ``timeoutMillis`` and ``enabled``.

    Args:
        tool: the tool as ``tools/list`` sends it.
        timeout_ms: the tool's timeout in milliseconds, ``None`` when it has none.
        enabled: whether the tool is offered.

    Returns:
        A new mapping; ``tool`` is not modified.
    """
    entry: JSONObject = dict(tool)
    entry["timeoutMillis"] = timeout_ms
    entry["enabled"] = enabled
    return entry


def build_manifest(
    entries: Iterable[Mapping[str, Any]], *, server: Mapping[str, Any] | None = None
) -> JSONObject:
    """Assemble a manifest from entries, sorted by tool name.

    Args:
        entries: manifest entries (see :func:`manifest_entry`).
        server: ``{"name", "version"}`` of the server, when the manifest describes one.

    Returns:
        ``{"manifestFormat": 1, "server": …, "tools": [...]}``.
    """
    tools = sorted((dict(e) for e in entries), key=lambda e: str(e["name"]))
    return {
        "manifestFormat": MANIFEST_FORMAT,
        "server": dict(server) if server else None,
        "tools": tools,
    }


def manifest_from_definitions(definitions: Iterable[ToolDefinition]) -> JSONObject:
    """A manifest straight from definition files (no server): each tool rendered by the mapping.

    Args:
        definitions: the definitions (every one must have a ``parameters_schema``).

    Returns:
        The manifest, with ``server`` set to ``None``.

    Raises:
        ValueError: a definition has ``parameters_schema: null`` (only a server can derive it).
    """
    return build_manifest(
        manifest_entry(render_tool(d), timeout_ms=d.timeout_ms, enabled=d.enabled)
        for d in definitions
    )


def dump_manifest(manifest: Mapping[str, Any]) -> bytes:
    """Serialize a manifest: UTF-8 JSON, two-space indent, trailing newline, stable key order."""
    return orjson.dumps(manifest, option=orjson.OPT_INDENT_2) + b"\n"
