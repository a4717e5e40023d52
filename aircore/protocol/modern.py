"""The 2026-07-28 era: per-request envelope, ``server/discover``, result decoration.

Every request carries ``params._meta["io.modelcontextprotocol/protocolVersion"]`` and
``…/clientCapabilities``. On HTTP the ``MCP-Protocol-Version``, ``Mcp-Method`` and ``Mcp-Name``
headers must agree with the body (-32020). An unsupported version gets -32022 with the
supported list. Every result carries ``resultType``; list results carry ``ttlMs``/``cacheScope``.
"""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Mapping
from typing import Any

from aircore.errors import (
    HEADER_MISMATCH,
    INVALID_PARAMS,
    UNSUPPORTED_PROTOCOL_VERSION,
    AirError,
)

__all__ = [
    "CACHEABLE_METHODS",
    "CLIENT_CAPABILITIES_KEY",
    "CLIENT_INFO_KEY",
    "LOG_LEVEL_KEY",
    "MODERN_VERSIONS",
    "PROTOCOL_VERSION_KEY",
    "REMOVED_METHODS",
    "SERVER_INFO_KEY",
    "check_envelope",
    "decode_header",
    "decorate",
    "header_value",
    "is_modern",
    "is_modern_request",
]

MODERN_VERSIONS: tuple[str, ...] = ("2026-07-28",)
PROTOCOL_VERSION_KEY = "io.modelcontextprotocol/protocolVersion"
CLIENT_CAPABILITIES_KEY = "io.modelcontextprotocol/clientCapabilities"
CLIENT_INFO_KEY = "io.modelcontextprotocol/clientInfo"
SERVER_INFO_KEY = "io.modelcontextprotocol/serverInfo"
LOG_LEVEL_KEY = "io.modelcontextprotocol/logLevel"

CACHEABLE_METHODS = frozenset(
    {
        "server/discover",
        "tools/list",
        "resources/list",
        "resources/templates/list",
        "resources/read",
        "prompts/list",
    }
)
"""Methods whose complete results carry ``ttlMs``/``cacheScope`` (spec: caching)."""
REMOVED_METHODS = frozenset(
    {
        "initialize",
        "ping",
        "logging/setLevel",
        "resources/subscribe",
        "resources/unsubscribe",
        "tasks/result",
        "tasks/list",
    }
)
"""Requests of the handshake era (and of the 2025-11-25 tasks) that 2026-07-28 removed: they
get -32601, which the HTTP transport answers with 404."""
NAME_BEARING = {
    "tools/call": "name",
    "prompts/get": "name",
    "resources/read": "uri",
    "tasks/get": "taskId",
    "tasks/update": "taskId",
    "tasks/cancel": "taskId",
}
_B64 = re.compile(r"^=\?base64\?(.*)\?=$")
_VISIBLE = re.compile(r"^[\x20-\x7e\t]*$")


def is_modern_request(params: Mapping[str, Any] | None) -> bool:
    """Whether a request carries the 2026-07-28 envelope (its protocol-version key)."""
    if not params:
        return False
    meta = params.get("_meta")
    return meta.__class__ is dict and PROTOCOL_VERSION_KEY in meta


def is_modern(method: str, params: Mapping[str, Any] | None) -> bool:
    """Whether a request is served in the 2026-07-28 era: it carries the envelope, or it is
    ``server/discover`` (which only that era has)."""
    return is_modern_request(params) or method == "server/discover"


def header_value(headers: Mapping[str, str], name: str) -> str | None:
    """A request header's value with surrounding whitespace removed (RFC 9110 §5.5: optional
    whitespace around a field value is not part of it); ``name`` is lower case."""
    value = headers.get(name)
    return None if value is None else value.strip(" \t")


def decode_header(value: str | None) -> str | None:
    """A ``Mcp-Name``/``Mcp-Param-*`` value as text: the ``=?base64?…?=`` sentinel decoded
    (strict Base64, UTF-8), any other value taken literally. ``None`` when the value is
    missing, badly encoded, or holds characters a header value may not carry."""
    if value is None:
        return None
    m = _B64.fullmatch(value)
    if m is None:
        return value if _VISIBLE.fullmatch(value) else None
    try:
        return base64.b64decode(m.group(1), validate=True).decode("utf-8")
    except (binascii.Error, UnicodeDecodeError):
        return None


def check_envelope(
    method: str, params: Mapping[str, Any] | None, headers: Mapping[str, str] | None
) -> tuple[str, Mapping[str, Any], Mapping[str, Any] | None]:
    """Validate the per-request envelope; return ``(version, capabilities, client_info)``.

    Raises:
        AirError: -32602 for a missing/malformed envelope, -32020 when HTTP headers disagree
            with the body, -32022 for an unsupported version (``data.supported`` lists ours).
    """
    meta = (params or {}).get("_meta")
    if not isinstance(meta, Mapping):
        raise AirError(
            INVALID_PARAMS,
            "params._meta must be an object carrying "
            f"{PROTOCOL_VERSION_KEY!r} and {CLIENT_CAPABILITIES_KEY!r}",
        )
    missing = [k for k in (PROTOCOL_VERSION_KEY, CLIENT_CAPABILITIES_KEY) if k not in meta]
    if missing:
        raise AirError(
            INVALID_PARAMS, f"params._meta is missing the required key(s): {', '.join(missing)}"
        )
    version = meta[PROTOCOL_VERSION_KEY]
    if headers is not None:
        if header_value(headers, "mcp-protocol-version") != version:
            raise AirError(
                HEADER_MISMATCH,
                "MCP-Protocol-Version header does not match the request's protocol version",
            )
        if header_value(headers, "mcp-method") != method:
            raise AirError(HEADER_MISMATCH, "Mcp-Method header does not match the method")
        key = NAME_BEARING.get(method)
        if key is not None and params is not None:
            body_value = params.get(key)
            named = decode_header(header_value(headers, "mcp-name"))
            if isinstance(body_value, str) and named != body_value:  # else params are bad
                raise AirError(HEADER_MISMATCH, f"Mcp-Name header does not match params.{key}")
    if not isinstance(version, str):
        raise AirError(INVALID_PARAMS, "the protocol version in params._meta must be a string")
    if version not in MODERN_VERSIONS:
        raise AirError(
            UNSUPPORTED_PROTOCOL_VERSION,
            "Unsupported protocol version",
            data={"supported": list(MODERN_VERSIONS), "requested": version},
        )
    caps = meta[CLIENT_CAPABILITIES_KEY]
    if not isinstance(caps, Mapping):
        raise AirError(
            INVALID_PARAMS, f"params._meta[{CLIENT_CAPABILITIES_KEY!r}] must be an object"
        )
    info = meta.get(CLIENT_INFO_KEY)
    return version, caps, info if isinstance(info, Mapping) else None


def decorate(method: str, result: dict[str, Any], server_info: Mapping[str, Any]) -> dict[str, Any]:
    """Add ``resultType``, cache hints on list results and the ``serverInfo`` stamp."""
    if "resultType" not in result:
        result["resultType"] = "complete"
    if method in CACHEABLE_METHODS and result["resultType"] == "complete":
        result.setdefault("ttlMs", 0)
        result.setdefault("cacheScope", "private")
    meta = result.get("_meta")
    if isinstance(meta, dict):
        meta.setdefault(SERVER_INFO_KEY, server_info)
    else:
        result["_meta"] = {SERVER_INFO_KEY: server_info}
    return result
