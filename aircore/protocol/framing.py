"""JSON-RPC 2.0 envelopes: decode, check and encode frames (orjson).

Every malformed frame gets an error response: ``-32700`` (id ``null``) for bytes that are not
JSON, ``-32600`` for anything that is not a request/notification/response object (batches
included: MCP removed JSON-RPC batching), ``-32602`` for params that are not an object.
"""

from __future__ import annotations

from typing import Any

import orjson

from aircore import wide_json
from aircore.errors import (
    INTERNAL_ERROR,
    INVALID_PARAMS,
    INVALID_REQUEST,
    PARSE_ERROR,
    REQUEST_CANCELLED,
    error_object,
)

__all__ = [
    "KIND_NOTIFICATION",
    "KIND_REQUEST",
    "KIND_RESPONSE",
    "cancelled_response",
    "check",
    "decode",
    "encode",
    "error_response",
    "parse_error",
]

KIND_REQUEST = 1
KIND_NOTIFICATION = 2
KIND_RESPONSE = 3

_dumps = orjson.dumps


def error_response(msg_id: Any, code: int, message: str, data: Any = None) -> dict[str, Any]:
    """A JSON-RPC error response object."""
    return {"jsonrpc": "2.0", "id": msg_id, "error": error_object(code, message, data)}


def cancelled_response(msg_id: Any) -> dict[str, Any]:
    """The ``-32800`` answer to a 2025-era request its client cancelled with
    ``notifications/cancelled`` while its HTTP POST is still open: that wire ends a request
    only with a response (the official SDK's server answers so)."""
    return error_response(msg_id, REQUEST_CANCELLED, "Request cancelled")


def parse_error(detail: str = "") -> dict[str, Any]:
    """The ``-32700`` answer to bytes that are not JSON (id is ``null``)."""
    return error_response(None, PARSE_ERROR, f"Parse error{': ' + detail if detail else ''}")


def decode(data: bytes | str) -> Any:
    """Parse one frame, integers beyond 64 bits exactly; raises ``orjson.JSONDecodeError`` (a
    ``ValueError``)."""
    message = orjson.loads(data)
    if wide_json.may_round(data):  # orjson reads a long integer as a float
        return wide_json.loads(data)
    return message


def encode(message: dict[str, Any]) -> bytes:
    """Serialize one message (no trailing newline); non-JSON values become strings.

    What orjson cannot write (an integer beyond 64 bits, a lone surrogate, a key that is not a
    string) goes through :mod:`~aircore.wide_json`; a response that still cannot be
    written (a circular reference) is answered with a -32603 error for its id, so the caller
    is never left waiting.

    Raises:
        ValueError: a request or notification that cannot be JSON.
    """
    try:
        return _dumps(message, default=str)
    except orjson.JSONEncodeError:
        pass
    try:
        return wide_json.dumps_any(message)
    except ValueError as exc:
        if "id" not in message or "method" in message:
            raise
        problem = f"Internal error: the response could not be encoded as JSON: {exc}"
        return wide_json.dumps_any(error_response(message["id"], INTERNAL_ERROR, problem))


def _valid_id(value: Any) -> bool:
    return isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool))


def check(obj: Any) -> tuple[int, dict[str, Any] | None]:
    """Classify a decoded frame.

    Returns:
        ``(kind, None)`` for a well-formed request, notification or response, or
        ``(0, error_response)`` for a malformed one (the error echoes the id when it is valid).
    """
    if not isinstance(obj, dict):
        if isinstance(obj, list):
            return 0, error_response(
                None, INVALID_REQUEST, "Invalid Request: JSON-RPC batches are not supported"
            )
        return 0, error_response(None, INVALID_REQUEST, "Invalid Request: expected a JSON object")
    has_id = "id" in obj
    msg_id = obj.get("id")
    if has_id and not _valid_id(msg_id):
        if msg_id is None and ("result" in obj or "error" in obj):
            return KIND_RESPONSE, None  # an error response to an unparseable frame of ours
        return 0, error_response(
            None, INVALID_REQUEST, "Invalid Request: id must be a string or an integer"
        )
    echo = msg_id if has_id else None
    if obj.get("jsonrpc") != "2.0":
        return 0, error_response(echo, INVALID_REQUEST, 'Invalid Request: jsonrpc must be "2.0"')
    if "method" in obj:
        method = obj["method"]
        if not isinstance(method, str) or not method:
            return 0, error_response(
                echo, INVALID_REQUEST, "Invalid Request: method must be a non-empty string"
            )
        params = obj.get("params")
        if params is not None and not isinstance(params, dict):
            return 0, error_response(
                echo, INVALID_PARAMS, "Invalid params: params must be an object"
            )
        return (KIND_REQUEST if has_id else KIND_NOTIFICATION), None
    if has_id and (("result" in obj) != ("error" in obj)):
        return KIND_RESPONSE, None
    return 0, error_response(echo, INVALID_REQUEST, "Invalid Request: a request needs a method")
