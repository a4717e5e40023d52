"""Speaking both protocol eras to upstreams: the handshake and the per-request envelope.

The gateway speaks 2026-07-28 to an upstream that answers ``server/discover`` (stateless: every
request carries the envelope in ``params._meta``), else opens one ``initialize`` session per
connection and strips the 2026-07-28 keys from what it forwards.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from aircore.protocol.legacy import LATEST_HANDSHAKE_VERSION
from aircore.protocol.modern import (
    CLIENT_CAPABILITIES_KEY,
    CLIENT_INFO_KEY,
    MODERN_VERSIONS,
    PROTOCOL_VERSION_KEY,
)
from airgateway.errors import UpstreamError

__all__ = [
    "GATEWAY_CAPABILITIES",
    "GATEWAY_INFO",
    "LEGACY",
    "MODERN",
    "MODERN_VERSION",
    "for_era",
    "handshake",
    "initialize_params",
    "modern_meta",
]

MODERN = "modern"
LEGACY = "legacy"
MODERN_VERSION = MODERN_VERSIONS[-1]
GATEWAY_INFO = {"name": "air-gateway", "version": "0.1.0"}
GATEWAY_CAPABILITIES: dict[str, Any] = {"elicitation": {}, "sampling": {}, "roots": {}}
"""What the gateway tells upstreams it can do: it passes these requests on to its clients."""

_ERA_PREFIX = "io.modelcontextprotocol/"

Send = Callable[[str, dict[str, Any]], Awaitable[dict[str, Any]]]


def modern_meta(meta: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """``_meta`` with the 2026-07-28 envelope keys (kept when the client sent them)."""
    out = dict(meta or {})
    out.setdefault(PROTOCOL_VERSION_KEY, MODERN_VERSION)
    out.setdefault(CLIENT_CAPABILITIES_KEY, GATEWAY_CAPABILITIES)
    out.setdefault(CLIENT_INFO_KEY, GATEWAY_INFO)
    return out


def for_era(params: Mapping[str, Any], era: str | None) -> dict[str, Any]:
    """``params`` ready to send to an upstream of ``era``.

    2026-07-28: ``_meta`` gets the envelope. Legacy: the envelope keys are removed (a server
    that serves both eras would take them for a 2026-07-28 request).
    """
    out = dict(params)
    meta = out.get("_meta")
    if era == MODERN:
        out["_meta"] = modern_meta(meta if isinstance(meta, Mapping) else None)
    elif isinstance(meta, Mapping) and any(str(k).startswith(_ERA_PREFIX) for k in meta):
        kept = {k: v for k, v in meta.items() if not str(k).startswith(_ERA_PREFIX)}
        if kept:
            out["_meta"] = kept
        else:
            del out["_meta"]
    return out


def initialize_params(version: str = LATEST_HANDSHAKE_VERSION) -> dict[str, Any]:
    """The gateway's ``initialize`` params."""
    return {
        "protocolVersion": version,
        "capabilities": GATEWAY_CAPABILITIES,
        "clientInfo": GATEWAY_INFO,
    }


async def handshake(send: Send, notify: Callable[[str, dict[str, Any]], Awaitable[None]]) -> str:
    """Find the upstream's era: ``server/discover`` first, else ``initialize``.

    Args:
        send: sends one request and returns its result (raises :class:`UpstreamError`).
        notify: sends one notification.

    Returns:
        :data:`MODERN` or :data:`LEGACY`.

    Raises:
        UpstreamError: the upstream refused ``initialize`` too.
    """
    try:
        found = await send("server/discover", {"_meta": modern_meta()})
    except UpstreamError:
        found = None
    versions = found.get("supportedVersions") if isinstance(found, dict) else None
    if isinstance(versions, list) and MODERN_VERSION in versions:
        return MODERN
    await send("initialize", initialize_params())
    await notify("notifications/initialized", {})
    return LEGACY
