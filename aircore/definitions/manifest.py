"""The tool manifest: every tool's MCP metadata, as ``tools/list`` exposes it, in one JSON file.

Each entry is exactly the ``Tool`` object of ``tools/list`` (``name``, ``title``,
``description``, ``inputSchema``, ``outputSchema``, ``annotations``, ``_meta``). Operational
metadata (``timeoutMillis``, ``enabled``, ``register``, ``displayDescription``…) lives inside
``_meta`` (see :mod:`aircore.definitions.meta`); a disabled tool is in the manifest with
``"enabled": false`` although ``tools/list`` leaves it out.
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
    "build_manifest",
    "dump_manifest",
    "manifest_from_definitions",
]

MANIFEST_FORMAT = 2
"""Version of the manifest layout (``manifestFormat``). 2: ``timeoutMillis`` and ``enabled``
moved from beside the tool into its ``_meta``; ``_meta`` keys are camelCase."""


def build_manifest(
    entries: Iterable[Mapping[str, Any]], *, server: Mapping[str, Any] | None = None
) -> JSONObject:
    """Assemble a manifest from MCP ``Tool`` objects, sorted by tool name.

    Args:
        entries: the tools, as ``tools/list`` sends them (copied, not modified).
        server: ``{"name", "version"}`` of the server, when the manifest describes one.

    Returns:
        ``{"manifestFormat": 2, "server": …, "tools": [...]}``.
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
    return build_manifest(render_tool(d) for d in definitions)


def dump_manifest(manifest: Mapping[str, Any]) -> bytes:
    """Serialize a manifest: UTF-8 JSON, two-space indent, trailing newline, stable key order."""
    return orjson.dumps(manifest, option=orjson.OPT_INDENT_2) + b"\n"
