"""The tool manifest: every tool's MCP metadata, as ``tools/list`` exposes it, in one JSON file.

Each entry is exactly the ``Tool`` object of ``tools/list`` (``name``, ``title``,
``description``, ``inputSchema``, ``outputSchema``, ``annotations``, ``_meta``). Operational
metadata (``timeoutMillis``, ``enabled``, ``register``, ``displayDescription``…) lives inside
``_meta`` (see :mod:`aircore.definitions.meta`); a disabled tool is in the manifest with
``"enabled": false`` although ``tools/list`` leaves it out. Every entry's ``_meta`` carries
``timeoutMillis`` (the effective timeout in milliseconds, ``null`` when nothing limits the call)
and ``enabled``, as the standard lists them, whether or not the tool has a definition.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import orjson

from aircore.definitions.meta import META_ENABLED, META_TIMEOUT_MILLIS
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
    entries: Iterable[Mapping[str, Any]],
    *,
    server: Mapping[str, Any] | None = None,
    timeout_ms: int | None = None,
) -> JSONObject:
    """Assemble a manifest from MCP ``Tool`` objects, sorted by tool name.

    Args:
        entries: the tools, as ``tools/list`` sends them (copied, not modified).
        server: ``{"name", "version"}`` of the server, when the manifest describes one.
        timeout_ms: the server-wide timeout (its ``timeout_plugin``), when one cancels calls:
            a tool's effective ``timeoutMillis`` is the smaller of it and the tool's own.

    Returns:
        ``{"manifestFormat": 2, "server": …, "tools": [...]}``.
    """
    tools = sorted((_entry(e, timeout_ms) for e in entries), key=lambda e: str(e["name"]))
    return {
        "manifestFormat": MANIFEST_FORMAT,
        "server": dict(server) if server else None,
        "tools": tools,
    }


def _entry(tool: Mapping[str, Any], server_timeout_ms: int | None) -> JSONObject:
    """A copy of ``tool`` whose ``_meta`` has ``timeoutMillis`` (effective) and ``enabled``."""
    entry = dict(tool)
    meta = dict(entry.get("_meta") or {})
    own = meta.get(META_TIMEOUT_MILLIS)
    limits = [t for t in (own, server_timeout_ms) if isinstance(t, int) and t > 0]
    meta[META_TIMEOUT_MILLIS] = min(limits) if limits else None
    meta.setdefault(META_ENABLED, True)
    entry["_meta"] = meta
    return entry


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
