"""ASGI plumbing the gateway's endpoints share: replies, bodies, and one SSE response."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, MutableMapping, Sequence
from typing import Any

from aircore.errors import (
    HEADER_MISMATCH,
    INVALID_PARAMS,
    INVALID_REQUEST,
    METHOD_NOT_FOUND,
    MISSING_REQUIRED_CLIENT_CAPABILITY,
    PARSE_ERROR,
    UNSUPPORTED_PROTOCOL_VERSION,
)
from aircore.protocol.framing import encode

__all__ = [
    "HOP_HEADER",
    "Receive",
    "Scope",
    "Send",
    "SseResponse",
    "read_body",
    "reply",
    "reply_json",
    "status_of",
]

HOP_HEADER = "air-gateway-hop"
"""Sent on every upstream request with the sending gateway's id: a gateway refuses a request
carrying its own id (it would be calling itself: a loop)."""

Scope = MutableMapping[str, Any]
Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]
Receive = Callable[[], Awaitable[MutableMapping[str, Any]]]

_STATUS = {
    PARSE_ERROR: 400,
    INVALID_REQUEST: 400,
    INVALID_PARAMS: 400,
    HEADER_MISMATCH: 400,
    MISSING_REQUIRED_CLIENT_CAPABILITY: 400,
    UNSUPPORTED_PROTOCOL_VERSION: 400,
    METHOD_NOT_FOUND: 404,
}
_ENVELOPE_CODES = frozenset(_STATUS)


def status_of(response: Mapping[str, Any], *, modern: bool) -> int:
    """The HTTP status of a JSON-RPC response: 200, or 4xx for envelope errors (aircore's map).

    A tool's own errors (from an upstream) stay 200 in the legacy era.
    """
    error = response.get("error")
    code = error.get("code") if isinstance(error, Mapping) else None
    if not isinstance(code, int) or (not modern and code not in _ENVELOPE_CODES):
        return 200
    return _STATUS.get(code, 200)


async def reply(
    send: Send, status: int, body: bytes | None = None, headers: Sequence[tuple[bytes, bytes]] = ()
) -> None:
    """A whole response (JSON when there is a body)."""
    hdrs = list(headers)
    if body is not None:
        hdrs.append((b"content-type", b"application/json"))
    hdrs.append((b"content-length", str(len(body or b"")).encode()))
    await send({"type": "http.response.start", "status": status, "headers": hdrs})
    await send({"type": "http.response.body", "body": body or b""})


async def reply_json(
    send: Send, message: Mapping[str, Any], status: int, headers: Sequence[tuple[bytes, bytes]] = ()
) -> None:
    """A JSON response."""
    await reply(send, status, encode(dict(message)), headers)


async def read_body(headers: Mapping[str, str], receive: Receive, limit: int) -> bytes | None:
    """The request body, or ``None`` when it is larger than ``limit`` bytes."""
    length = headers.get("content-length")
    if length is not None and length.isascii() and length.isdigit() and int(length) > limit:
        return None
    chunks = bytearray()
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            return b""
        chunks += message.get("body", b"")
        if len(chunks) > limit:
            return None
        if not message.get("more_body"):
            return bytes(chunks)


class SseResponse:
    """An SSE response opened on the first event."""

    __slots__ = ("extra", "send", "started")

    def __init__(self, send: Send, extra: Sequence[tuple[bytes, bytes]] = ()) -> None:
        self.send = send
        self.extra = list(extra)
        self.started = False

    async def event(self, message: Mapping[str, Any]) -> None:
        """Send one message as a ``message`` event."""
        if not self.started:
            self.started = True
            hdrs = [(b"content-type", b"text/event-stream"), (b"cache-control", b"no-cache")]
            await self.send(
                {"type": "http.response.start", "status": 200, "headers": hdrs + self.extra}
            )
        data = b"event: message\ndata: " + encode(dict(message)) + b"\n\n"
        await self.send({"type": "http.response.body", "body": data, "more_body": True})

    async def close(self) -> None:
        """End the stream (if it started)."""
        if self.started:
            await self.send({"type": "http.response.body", "body": b""})
