"""HTTP/1.1 bytes on the wire: status lines, the ``Date`` header, response heads and the
server's own canned answers (408, 431, 400, 500, 503)."""

from __future__ import annotations

import email.utils
import http
from collections.abc import Iterable

__all__ = [
    "BAD_REQUEST",
    "BUSY",
    "CONTINUE",
    "HUGE",
    "SERVER_ERROR",
    "SLOW",
    "HeadError",
    "ResponseHead",
    "date_header",
    "encode_head",
    "status_line",
]

CONTINUE = b"HTTP/1.1 100 Continue\r\n\r\n"
"""The interim answer to ``Expect: 100-continue`` (sent when the app first reads the body)."""


def _canned(status: int, text: str, *extra: bytes) -> bytes:
    body = text.encode() + b"\n"
    lines = [
        status_line(status),
        b"content-type: text/plain; charset=utf-8",
        *extra,
        b"connection: close",
        b"content-length: %d" % len(body),
    ]
    return b"\r\n".join(lines) + b"\r\n\r\n" + body


_LINES: dict[int, bytes] = {
    s.value: b"HTTP/1.1 %d %s" % (s.value, s.phrase.encode()) for s in http.HTTPStatus
}


def status_line(status: int) -> bytes:
    """``HTTP/1.1 <status> <reason>`` (no line end).

    Raises:
        ValueError: ``status`` is not a three-digit code.
    """
    line = _LINES.get(status)
    if line is None:
        if type(status) is not int or not 100 <= status <= 999:
            raise ValueError(f"invalid HTTP status {status!r}")
        line = b"HTTP/1.1 %d " % status
    return line


BUSY = _canned(503, "too many connections", b"retry-after: 1")
"""Sent to a connection beyond the cap when no idle one can be closed."""
SLOW = _canned(408, "request too slow")
"""Sent when a request head (or a started body) does not arrive within the header timeout."""
HUGE = _canned(431, "request headers too big")
"""Sent when a request head is over the size cap."""
BAD_REQUEST = _canned(400, "malformed HTTP request")
"""Sent when the parser refuses the bytes."""
SERVER_ERROR = _canned(500, "internal server error")
"""Sent when the app fails (or returns) before it starts its answer."""

_date = b""
_date_second = -1


def date_header(now: float) -> bytes:
    """``date: <IMF-fixdate>`` for the wall-clock second ``now`` (cached per second)."""
    global _date, _date_second
    second = int(now)
    if second != _date_second:
        _date = b"date: " + email.utils.formatdate(second, usegmt=True).encode()
        _date_second = second
    return _date


class HeadError(ValueError):
    """An app gave a response header that cannot be sent (a CR or LF in it)."""


class ResponseHead:
    """What the server learned from an app's response headers while encoding them.

    Attributes:
        head: the encoded head, blank line included.
        chunked: the body goes out in chunked transfer coding.
        close: the connection closes after this response.
    """

    __slots__ = ("chunked", "close", "head")

    def __init__(self, head: bytes, chunked: bool, close: bool) -> None:
        self.head = head
        self.chunked = chunked
        self.close = close


def encode_head(
    status: int,
    headers: Iterable[tuple[bytes, bytes]],
    *,
    length: int | None,
    http11: bool,
    keep_alive: bool,
    date: bytes,
) -> ResponseHead:
    """Encode a response head.

    Args:
        status: the status code.
        headers: the app's headers (any case; ``content-length``, ``transfer-encoding`` and
            ``connection`` are honoured).
        length: the body's length when the whole body is known now (``None``: streamed).
        http11: the request was HTTP/1.1 (else 1.0: no chunked coding).
        keep_alive: the request allows the connection to stay open.
        date: the ``date`` header line (:func:`date_header`).

    Returns:
        The head and how the body goes out.

    Raises:
        HeadError: a header name or value with CR or LF (response splitting).
        ValueError: an invalid status.
    """
    parts = [status_line(status)]
    has_length = chunked = False
    close = not keep_alive
    for name, value in headers:
        lower = name.lower()
        if lower == b"content-length":
            has_length = True
        elif lower == b"transfer-encoding":
            chunked = b"chunked" in value.lower()
        elif lower == b"connection" and b"close" in value.lower():
            close = True
        parts.append(name + b": " + value)
    if status >= 200 and status not in (204, 304) and not has_length and not chunked:
        if length is not None:
            parts.append(b"content-length: %d" % length)
        elif http11:
            parts.append(b"transfer-encoding: chunked")
            chunked = True
        else:
            close = True  # an HTTP/1.0 body of unknown length ends with the connection
    if close:
        parts.append(b"connection: close")
    elif not http11:
        parts.append(b"connection: keep-alive")
    parts.append(date)
    head = b"\r\n".join(parts)
    lines = len(parts) - 1
    if head.count(b"\n") != lines or head.count(b"\r") != lines:
        raise HeadError("a response header contains CR or LF")
    return ResponseHead(head + b"\r\n\r\n", chunked, close)
