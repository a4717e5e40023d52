"""The limits every HTTP surface shares, as named defaults and one frozen record."""

from __future__ import annotations

import math
from dataclasses import dataclass

from airhttp.errors import LimitsError

__all__ = [
    "DEFAULT_HEADER_TIMEOUT",
    "DEFAULT_IDLE_TIMEOUT",
    "DEFAULT_MAX_BODY",
    "DEFAULT_MAX_CONNECTIONS",
    "DEFAULT_MAX_HEADER_BYTES",
    "DEFAULT_MAX_INFLIGHT",
    "DEFAULT_MAX_RECEIVING",
    "Limits",
]

DEFAULT_HEADER_TIMEOUT = 10.0
"""Seconds a client has to send a request's complete headers, from its first byte (or from
the connection's opening): a slow header ("slowloris") is cut off after it."""

DEFAULT_IDLE_TIMEOUT = 5.0
"""Seconds a keep-alive connection may sit idle between requests."""

DEFAULT_MAX_CONNECTIONS = 512
"""Open connections at once; a connection beyond it is answered 503 and closed at once."""

DEFAULT_MAX_INFLIGHT = 256
"""Requests being handled at once; beyond it a request is answered 503 (``Retry-After``)."""

DEFAULT_MAX_RECEIVING = 64
"""Request bodies being received at once (a body counts from the end of its head until its
last byte; one that arrived whole with its head never counts). A body beyond it closes the
connection of the one received longest (``408``): slow or endless bodies cannot hold every
connection or in-flight slot, while connections themselves are not capped per peer."""

DEFAULT_MAX_BODY = 4 * 1024 * 1024
"""Largest request body in bytes; a larger one is answered 413."""

DEFAULT_MAX_HEADER_BYTES = 64 * 1024
"""Largest request head (request line and headers) in bytes; beyond it the connection is
answered 431 and closed."""


def _positive(option: str, value: float, *, integer: bool) -> None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise LimitsError(option, value, "must be a number")
    if integer and not isinstance(value, int):
        raise LimitsError(option, value, "must be a whole number")
    if not math.isfinite(value) or value <= 0:
        raise LimitsError(option, value, "must be positive and finite")


@dataclass(frozen=True, slots=True, kw_only=True)
class Limits:
    """What one client may hold of an HTTP server.

    Attributes:
        header_timeout: seconds to receive a request's headers.
        idle_timeout: seconds a keep-alive connection may idle between requests.
        max_connections: open connections at once.
        max_inflight: requests handled at once.
        max_body: largest request body in bytes.
        max_header_bytes: largest request head in bytes.
        max_receiving: request bodies being received at once (beyond: the oldest is cut).

    Raises:
        LimitsError: a value that is not a positive finite number (whole for counts).
    """

    header_timeout: float = DEFAULT_HEADER_TIMEOUT
    idle_timeout: float = DEFAULT_IDLE_TIMEOUT
    max_connections: int = DEFAULT_MAX_CONNECTIONS
    max_inflight: int = DEFAULT_MAX_INFLIGHT
    max_body: int = DEFAULT_MAX_BODY
    max_header_bytes: int = DEFAULT_MAX_HEADER_BYTES
    max_receiving: int = DEFAULT_MAX_RECEIVING

    def __post_init__(self) -> None:
        _positive("header_timeout", self.header_timeout, integer=False)
        _positive("idle_timeout", self.idle_timeout, integer=False)
        _positive("max_connections", self.max_connections, integer=True)
        _positive("max_inflight", self.max_inflight, integer=True)
        _positive("max_body", self.max_body, integer=True)
        _positive("max_header_bytes", self.max_header_bytes, integer=True)
        _positive("max_receiving", self.max_receiving, integer=True)
