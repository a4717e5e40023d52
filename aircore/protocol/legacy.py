"""The handshake era (2024-11-05 … 2025-11-25): ``initialize``, ``ping``."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import orjson

from aircore import wide_json
from aircore.errors import InvalidParamsError

__all__ = [
    "HANDSHAKE_VERSIONS",
    "LATEST_HANDSHAKE_VERSION",
    "MAX_DECLARATION_BYTES",
    "check_declaration",
    "initialize_result",
    "negotiate",
]

HANDSHAKE_VERSIONS: tuple[str, ...] = ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25")
LATEST_HANDSHAKE_VERSION = HANDSHAKE_VERSIONS[-1]
MAX_DECLARATION_BYTES = 16 * 1024
"""The JSON size of what an ``initialize`` declares and its session keeps for its whole life
(``capabilities`` and ``clientInfo``): real clients send a few hundred bytes; without a bound
each of a server's sessions could hold a whole request body."""


def check_declaration(capabilities: Any, client_info: Any) -> None:
    """Refuse an ``initialize`` declaring more than :data:`MAX_DECLARATION_BYTES`.

    Raises:
        InvalidParamsError: the capabilities and clientInfo are too large.
    """
    try:
        size = len(wide_json.dumps_any([capabilities, client_info], option=orjson.OPT_NON_STR_KEYS))
    except ValueError as exc:
        raise InvalidParamsError(f"initialize: capabilities or clientInfo: {exc}") from None
    if size > MAX_DECLARATION_BYTES:
        raise InvalidParamsError(
            f"initialize: capabilities and clientInfo of {size} bytes "
            f"(at most {MAX_DECLARATION_BYTES})"
        )


def negotiate(requested: Any) -> str:
    """The version to answer ``initialize`` with: the client's if we speak it, else our latest.

    Raises:
        InvalidParamsError: ``protocolVersion`` is missing or not a string.
    """
    if not isinstance(requested, str):
        raise InvalidParamsError("initialize: params.protocolVersion must be a string")
    return requested if requested in HANDSHAKE_VERSIONS else LATEST_HANDSHAKE_VERSION


def initialize_result(
    *,
    version: str,
    capabilities: Mapping[str, Any],
    server_info: Mapping[str, Any],
    instructions: str | None,
) -> dict[str, Any]:
    """The ``InitializeResult``."""
    out: dict[str, Any] = {
        "protocolVersion": version,
        "capabilities": dict(capabilities),
        "serverInfo": dict(server_info),
    }
    if instructions:
        out["instructions"] = instructions
    return out
