"""Who may call a tool that asked for scopes: the per-tool check ``tools/call`` and
``tools/list`` share.

- The scopes a tool needs are its own ``required_scopes`` plus the configured ``auth.tools``
  globs matching its name **or any of its old names** (deprecated aliases after
  ``air migrate --rename``): a glob written for the old name keeps protecting the tool.
- A request that reached an HTTP server with no authorization at all (no OAuth, no static
  token: :data:`OPEN_HTTP`) may not call a tool with ``required_scopes`` (one added after start;
  ``air serve`` refuses to start with one already there).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from contextvars import ContextVar

from airhttp.identity import Identity

__all__ = ["OPEN_HTTP", "missing_scopes", "old_names"]

OPEN_HTTP: ContextVar[bool] = ContextVar("air_open_http", default=False)
"""True while a request that reached an HTTP server with neither OAuth nor a static token is
handled (set by :class:`~aircore.transports.http_app.HttpApp`; tasks it starts inherit it)."""


def old_names(aliases: Mapping[str, str], name: str) -> list[str]:
    """The deprecated aliases of the tool called ``name``."""
    return [old for old, new in aliases.items() if new == name] if aliases else []


def missing_scopes(
    identity: Identity, name: str, required: Iterable[str], aliases: Mapping[str, str]
) -> frozenset[str]:
    """The scopes ``identity`` lacks to call the tool ``name``: its ``required`` ones and the
    configured globs matching its name or one of its old names (empty when it may)."""
    missing = identity.missing_for(name, required)
    if identity.auth != "oauth" or not identity.tool_scopes:
        return missing
    for old in old_names(aliases, name):
        missing |= identity.missing_for(old)
    return missing
