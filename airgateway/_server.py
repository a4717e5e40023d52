"""The gateway's HTTP/1.1 server: httptools on asyncio (uvloop where present), one write per
answer, and a fast path that skips ASGI for the calls that make up the traffic.

Measured (docs/gateway.md, Performance): the gateway's time went mostly into socket writes and
the ASGI machinery around a request, not into routing. So each connection parses with
``httptools``; a request the fast path takes (a 2026-07-28 ``tools/call``, see
:meth:`~airgateway.endpoint.GatewayEndpoint.fast`) is answered with one ``write`` of head and
body; every other request goes through the ASGI app (``airhttp.GuardedApp`` around the
endpoint) over a small bridge, whose answers are also written in one piece when their length
is known. Connection limits come from :class:`airhttp.Limits`: the header-read timeout (408),
the head size cap (431), the body cap (413), the keep-alive idle time, and the connection
cap (an idle connection is closed to make room; with none idle the new one gets 503).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections import deque
from collections.abc import Awaitable, Callable
from typing import Any, cast

import httptools

from airhttp import Limits

__all__ = ["FastHandler", "HttpServer", "Request"]

logger = logging.getLogger(__name__)

TICK_S = 0.5
"""How often overdue heads and idle keep-alive connections are looked for."""
LINGER_S = 2.0
"""A connection cut off with an error answer drains input this long before it closes."""
_MAX_QUEUED = 8
"""Pipelined requests queued on one connection before reading pauses."""


def _plain(status: int, reason: str, text: str, extra: bytes = b"") -> bytes:
    body = text.encode() + b"\n"
    return (
        f"HTTP/1.1 {status} {reason}\r\ncontent-type: text/plain; charset=utf-8\r\n".encode()
        + extra
        + b"connection: close\r\ncontent-length: "
        + str(len(body)).encode()
        + b"\r\n\r\n"
        + body
    )


_BUSY = _plain(503, "Service Unavailable", "too many connections", b"retry-after: 1\r\n")
_SLOW = _plain(408, "Request Timeout", "request headers too slow")
_HUGE = _plain(431, "Request Header Fields Too Large", "request headers too big")
_BAD = _plain(400, "Bad Request", "malformed HTTP request")
_TOO_LARGE = _plain(413, "Payload Too Large", "request body too large")
_STATUS = {
    200: b"OK", 202: b"Accepted", 400: b"Bad Request", 401: b"Unauthorized",
    403: b"Forbidden", 404: b"Not Found", 405: b"Method Not Allowed", 406: b"Not Acceptable",
    408: b"Request Timeout", 413: b"Payload Too Large", 415: b"Unsupported Media Type",
    421: b"Misdirected Request", 500: b"Internal Server Error", 503: b"Service Unavailable",
}  # fmt: skip


def status_line(status: int) -> bytes:
    """``HTTP/1.1 <status> <reason>\\r\\n``."""
    return b"HTTP/1.1 %d %s\r\n" % (status, _STATUS.get(status, b"Status"))


class Request:
    """One parsed request: method, path, lower-case header names, the whole body."""

    __slots__ = ("body", "headers", "keep_alive", "method", "path", "query")

    def __init__(
        self, method: bytes, path: bytes, query: bytes, headers: list[tuple[bytes, bytes]],
        body: bytes, keep_alive: bool,
    ) -> None:  # fmt: skip
        self.method = method
        self.path = path
        self.query = query
        self.headers = headers
        self.body = body
        self.keep_alive = keep_alive

    def header(self, name: bytes) -> bytes | None:
        """The first value of a header (``name`` lower-case)."""
        for key, value in self.headers:
            if key == name:
                return value
        return None


FastHandler = Callable[[Request], Awaitable[bytes] | None]
"""Takes a request and returns the coroutine that makes its whole HTTP answer (status line,
headers without ``connection``, blank line, body), or ``None`` to leave the request to the ASGI
app. The coroutine is cancelled when the client closes the connection."""

ASGIApp = Callable[[dict[str, Any], Any, Any], Awaitable[None]]


class _Connection(asyncio.Protocol):
    """One client connection (see the module docstring)."""

    def __init__(self, server: HttpServer) -> None:
        self.server = server
        self.loop = server.loop
        self.transport: asyncio.Transport | None = None
        self.parser = httptools.HttpRequestParser(self)
        self.head_since = 0.0
        self.idle_since = 0.0
        self.head_bytes = 0
        self.head_size = 0
        self.url = b""
        self.headers: list[tuple[bytes, bytes]] = []
        self.body = bytearray()
        self.queue: deque[Request] = deque()
        self.task: asyncio.Task[None] | None = None
        self.closed = asyncio.Event()
        self.cutting = False
        self.reading = True
        self.cancellable = False

    # ---- transport events ---------------------------------------------------------------
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = cast(asyncio.Transport, transport)  # uvloop's is not a subclass
        book = self.server.open
        if len(book) >= self.server.max_connections and not self.server.make_room():
            self.server.refused += 1
            self.transport.write(_BUSY)
            self.transport.close()
            return
        book[self] = None
        self.head_since = self.loop.time()  # a connection that never sends is cut off too

    def connection_lost(self, exc: Exception | None) -> None:
        self.server.open.pop(self, None)
        self.closed.set()
        task = self.task
        if task is not None and not task.done() and self.cancellable:
            task.cancel()  # a 2026-07-28 call: closing the POST cancels it
        self.queue.clear()

    def data_received(self, data: bytes) -> None:
        if self.cutting:
            return
        try:
            self.parser.feed_data(data)
        except httptools.HttpParserUpgrade:
            self.cut(_BAD)
        except httptools.HttpParserError:
            if not self.cutting:
                self.cut(_BAD)
            return
        if self.head_since and not self.cutting:  # a head still arriving, counted as it comes
            self.head_bytes += len(data)
            if self.head_bytes > self.server.limits.max_header_bytes:
                self._too_big()

    def _too_big(self) -> None:
        self.server.header_overflows += 1
        self.cut(_HUGE)

    # ---- parser callbacks ---------------------------------------------------------------
    def on_message_begin(self) -> None:
        if not self.head_since:
            self.head_since = self.loop.time()
        self.idle_since = 0.0
        self.url = b""
        self.headers = []
        self.body = bytearray()
        self.head_size = 0

    def on_url(self, url: bytes) -> None:
        self.url += url
        self.head_size += len(url)

    def on_header(self, name: bytes, value: bytes) -> None:
        self.headers.append((name.lower(), value))
        self.head_size += len(name) + len(value) + 4
        if self.head_size > self.server.limits.max_header_bytes and not self.cutting:
            self._too_big()  # a whole head in one read is measured here

    def on_headers_complete(self) -> None:
        self.head_since = 0.0
        self.head_bytes = 0
        if self.cutting:
            return
        for name, value in self.headers:
            if name == b"content-length":
                text = value.strip()
                if not text.isdigit() or int(text) > self.server.limits.max_body:
                    self.cut(_TOO_LARGE)
                    return
            elif name == b"expect" and value.lower() == b"100-continue" and self.transport:
                self.transport.write(b"HTTP/1.1 100 Continue\r\n\r\n")

    def on_body(self, body: bytes) -> None:
        if self.cutting:
            return
        self.body += body
        if len(self.body) > self.server.limits.max_body:
            self.cut(_TOO_LARGE)

    def on_message_complete(self) -> None:
        if self.cutting:
            return
        path, _, query = self.url.partition(b"?")
        request = Request(
            self.parser.get_method(), path, query, self.headers, bytes(self.body),
            self.parser.should_keep_alive(),
        )  # fmt: skip
        self.queue.append(request)
        if len(self.queue) >= _MAX_QUEUED and self.transport is not None:
            self.transport.pause_reading()
            self.reading = False
        if self.task is None:
            self.task = self.loop.create_task(self._serve())

    # ---- answering ----------------------------------------------------------------------
    async def _serve(self) -> None:
        try:
            while self.queue and not self.closed.is_set():
                request = self.queue.popleft()
                if not self.reading and self.transport is not None:
                    self.transport.resume_reading()
                    self.reading = True
                keep = await self._one(request)
                if not keep:
                    if self.transport is not None:
                        self.transport.close()
                    return
        finally:
            self.task = None
            self.idle_since = self.loop.time()

    async def _one(self, request: Request) -> bool:
        """Answer one request; return whether the connection stays open."""
        transport = self.transport
        assert transport is not None
        keep = request.keep_alive and not self.server.stopping
        fast = self.server.fast(request) if self.server.fast is not None else None
        if fast is not None:
            self.cancellable = True
            try:
                answer = await fast
            except asyncio.CancelledError:
                if self.closed.is_set():
                    return False  # the client left: the call was cancelled with it
                raise
            except Exception:  # a bug must not leave the client without an answer
                logger.exception("the gateway's fast path failed")
                answer = _plain(500, "Internal Server Error", "internal error")
                keep = False
            finally:
                self.cancellable = False
            if not keep:
                split = answer.index(b"\r\n\r\n") + 2
                answer = answer[:split] + b"connection: close\r\n" + answer[split:]
            if not self.closed.is_set():
                transport.write(answer)  # head and body in one write
            return keep
        bridge = _Bridge(self, request, keep)
        try:
            await self.server.app(bridge.scope(), bridge.receive, bridge.send)
        except asyncio.CancelledError:
            if self.closed.is_set():
                return False
            raise
        except Exception:
            logger.exception("the gateway's ASGI app failed")
            if not bridge.started:
                bridge.write(_plain(500, "Internal Server Error", "internal error"))
            return False
        if not bridge.complete:
            if not bridge.started:
                bridge.write(_plain(500, "Internal Server Error", "no answer"))
            return False
        return bridge.keep

    def cut(self, answer: bytes) -> None:
        """Answer with an error, then close gracefully (input drained for a moment)."""
        self.head_since = 0.0
        transport = self.transport
        if transport is None or transport.is_closing() or self.cutting:
            return
        self.cutting = True
        self.queue.clear()
        transport.write(answer)
        if transport.can_write_eof():
            transport.write_eof()
        self.loop.call_later(LINGER_S, transport.close)

    def is_idle(self) -> bool:
        """Between requests (nothing queued or running, no head arriving)."""
        return self.task is None and not self.queue and not self.head_bytes


class _Bridge:
    """One request through the ASGI app: scope, ``receive`` and ``send`` over the connection."""

    __slots__ = ("chunked", "complete", "conn", "head", "keep", "request", "sent_body", "started")

    def __init__(self, conn: _Connection, request: Request, keep: bool) -> None:
        self.conn = conn
        self.request = request
        self.keep = keep
        self.head: bytes | None = None
        self.started = False
        self.complete = False
        self.chunked = False
        self.sent_body = False

    def scope(self) -> dict[str, Any]:
        request = self.request
        transport = self.conn.transport
        peer = transport.get_extra_info("peername") if transport is not None else None
        sock = transport.get_extra_info("sockname") if transport is not None else None
        return {
            "type": "http",
            "asgi": {"version": "3.0", "spec_version": "2.3"},
            "http_version": "1.1",
            "method": request.method.decode("latin-1"),
            "scheme": "http",
            "path": request.path.decode("latin-1"),
            "raw_path": request.path,
            "query_string": request.query,
            "root_path": "",
            "headers": request.headers,
            "client": tuple(peer[:2]) if isinstance(peer, tuple) else None,
            "server": tuple(sock[:2]) if isinstance(sock, tuple) else None,
        }

    async def receive(self) -> dict[str, Any]:
        if not self.sent_body:
            self.sent_body = True
            return {"type": "http.request", "body": self.request.body, "more_body": False}
        await self.conn.closed.wait()
        return {"type": "http.disconnect"}

    def write(self, data: bytes) -> None:
        transport = self.conn.transport
        if transport is not None and not self.conn.closed.is_set():
            transport.write(data)
        self.started = True

    async def send(self, message: dict[str, Any]) -> None:
        kind = message["type"]
        if kind == "http.response.start":
            if self.head is not None or self.started:
                raise RuntimeError("the response has started already")
            parts = [status_line(int(message["status"]))]
            length = False
            for name, value in message.get("headers", ()):
                low = bytes(name).lower()
                if low == b"content-length":
                    length = True
                elif low == b"connection":
                    if b"close" in bytes(value).lower():
                        self.keep = False
                    continue
                parts += (low, b": ", bytes(value), b"\r\n")
            if not length:
                self.chunked = self.request.method != b"HEAD"
                if self.chunked:
                    parts.append(b"transfer-encoding: chunked\r\n")
            if not self.keep:
                parts.append(b"connection: close\r\n")
            parts.append(b"\r\n")
            self.head = b"".join(parts)
            if self.chunked:  # a stream: its head goes out now
                self.write(self.head)
            return
        if kind != "http.response.body" or self.head is None or self.complete:
            return
        body = bytes(message.get("body", b""))
        more = bool(message.get("more_body", False))
        if self.request.method == b"HEAD":
            body = b""
        if self.chunked:
            data = (b"%x\r\n%s\r\n" % (len(body), body)) if body else b""
            if not more:
                data += b"0\r\n\r\n"
            if data:
                self.write(data)
        else:
            head = b"" if self.started else self.head
            self.write(head + body)  # head and body in one write
        if not more:
            self.complete = True


class HttpServer:
    """Serves the gateway's ASGI app and fast path on one listening socket.

    Args:
        app: the ASGI app for every request the fast path leaves (guards included).
        fast: the fast path (see :data:`FastHandler`), or ``None``.
        limits: the connection limits.
    """

    def __init__(
        self, app: ASGIApp, *, fast: FastHandler | None = None, limits: Limits | None = None
    ) -> None:
        self.app = app
        self.fast = fast
        self.limits = limits or Limits()
        self.max_connections = self.limits.max_connections
        self.open: dict[_Connection, None] = {}
        self.refused = 0
        self.evicted = 0
        self.header_timeouts = 0
        self.header_overflows = 0
        self.stopping = False
        self.loop = asyncio.get_event_loop()
        self._server: asyncio.Server | None = None
        self._sweeper: asyncio.TimerHandle | None = None

    def make_room(self) -> bool:
        """Close the oldest idle connection; False when none is idle."""
        for conn in self.open:
            if conn.is_idle():
                del self.open[conn]
                if conn.transport is not None:
                    conn.transport.close()
                self.evicted += 1
                return True
        return False

    def _sweep(self) -> None:
        now = self.loop.time()
        head_by = now - self.limits.header_timeout
        idle_by = now - self.limits.idle_timeout
        for conn in list(self.open):
            if conn.head_since and conn.task is None and conn.head_since < head_by:
                self.header_timeouts += 1
                conn.cut(_SLOW)
            elif (
                conn.idle_since and conn.is_idle() and conn.idle_since < idle_by and conn.transport
            ):
                conn.transport.close()
        self._sweeper = self.loop.call_later(TICK_S, self._sweep)

    async def start(self, sock: Any) -> None:
        """Listen on ``sock`` (bound, not yet listening)."""
        self.loop = asyncio.get_running_loop()
        self._server = await self.loop.create_server(
            lambda: _Connection(self), sock=sock, backlog=min(2048, max(128, self.max_connections))
        )
        self._sweeper = self.loop.call_later(TICK_S, self._sweep)

    async def stop(self, grace: float) -> None:
        """Stop accepting, close idle connections, give requests in flight ``grace`` seconds,
        then close every connection."""
        self.stopping = True
        if self._sweeper is not None:
            self._sweeper.cancel()
        if self._server is not None:
            self._server.close()
        busy = []
        for conn in list(self.open):
            if conn.is_idle() and conn.transport is not None:
                conn.transport.close()
            elif conn.task is not None:
                busy.append(conn.task)
        if busy:
            await asyncio.wait(busy, timeout=grace)
        for conn in list(self.open):
            if conn.task is not None:
                conn.task.cancel()
            if conn.transport is not None:
                conn.transport.close()
        with contextlib.suppress(Exception):
            if self._server is not None:
                await asyncio.wait_for(self._server.wait_closed(), 1.0)
