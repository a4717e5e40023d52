"""Serve an ASGI app with the shared limits: uvicorn's httptools protocol, extended with a
header-read timeout, a header size cap and a connection cap that closes idle connections
before it refuses a new one; keep-alive idle time from :class:`~airhttp.Limits`; repeated
error logs rate-limited while serving."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import resource
import socket
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from starlette.types import ASGIApp

from airhttp.limits import Limits
from airhttp.logs import RepeatFilter, repeat_filter_installed

if TYPE_CHECKING:
    import uvicorn

__all__ = ["FD_RESERVE", "HttpServer", "ServerStats", "listen_socket"]

logger = logging.getLogger(__name__)

FD_RESERVE = 64
"""File descriptors kept free of connections (store files, logs, outbound sockets): the
connection cap never exceeds the process's descriptor limit less this."""

LINGER = 2.0
"""Seconds a connection cut off with an error answer keeps draining input before it closes."""

_BUSY = (
    b"HTTP/1.1 503 Service Unavailable\r\ncontent-type: text/plain; charset=utf-8\r\n"
    b"retry-after: 1\r\nconnection: close\r\ncontent-length: 21\r\n\r\ntoo many connections\n"
)
_SLOW = (
    b"HTTP/1.1 408 Request Timeout\r\ncontent-type: text/plain; charset=utf-8\r\n"
    b"connection: close\r\ncontent-length: 25\r\n\r\nrequest headers too slow\n"
)
_HUGE = (
    b"HTTP/1.1 431 Request Header Fields Too Large\r\ncontent-type: text/plain; charset=utf-8"
    b"\r\nconnection: close\r\ncontent-length: 23\r\n\r\nrequest headers too big\n"
)


@dataclass(slots=True)
class ServerStats:
    """What the limits did, counted since the server started.

    Attributes:
        refused: connections answered 503 (cap reached, none idle to close).
        evicted: idle connections closed to make room for a new one.
        header_timeouts: connections closed (408) for not sending headers in time.
        header_overflows: connections closed (431) for headers over the size cap.
    """

    refused: int = 0
    evicted: int = 0
    header_timeouts: int = 0
    header_overflows: int = 0


def listen_socket(host: str, port: int) -> socket.socket:
    """A TCP socket bound to ``(host, port)`` (port 0: any free one), not yet listening.

    Raises:
        OSError: the address cannot be bound (its message names it).
    """
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    # proto=IPPROTO_TCP so the event loop sets TCP_NODELAY on accepted connections
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
    except OSError as exc:
        sock.close()
        raise OSError(exc.errno, f"cannot listen on {host}:{port}: {exc.strerror}") from exc
    return sock


def _descriptor_cap(wanted: int) -> int:
    with contextlib.suppress(ValueError, OSError):
        soft, _hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        if soft != resource.RLIM_INFINITY:
            return max(1, min(wanted, soft - FD_RESERVE))
    return wanted


class _Book:
    """The open connections, oldest first, and the cap."""

    def __init__(self, cap: int) -> None:
        self.cap = cap
        self.open: dict[Any, None] = {}

    def sweep(self, now: float, header_timeout: float, stats: ServerStats) -> None:
        """Cut off every connection whose request head is overdue (one pass per tick, instead
        of a timer per request)."""
        for proto in list(self.open):
            since = proto.head_since
            if since and now - since > header_timeout and proto.is_idle():
                stats.header_timeouts += 1
                proto.cut(_SLOW)

    def make_room(self, stats: ServerStats) -> bool:
        """Close the oldest connection that is not handling a request; False if none is."""
        for proto in self.open:
            if proto.is_idle():
                del self.open[proto]
                proto.transport.close()
                stats.evicted += 1
                return True
        return False


def _protocol_class(limits: Limits, book: _Book, stats: ServerStats) -> type[asyncio.Protocol]:
    from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

    max_header_bytes = limits.max_header_bytes

    class LimitedProtocol(HttpToolsProtocol):
        """uvicorn's httptools protocol with the connection limits."""

        head_since = 0.0
        """Loop time the current request head started arriving (0: not reading a head)."""
        _header_bytes = 0
        _refused = False
        _lingering = False

        def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
            if len(book.open) >= book.cap and not book.make_room(stats):
                self._refused = True
                self.transport = transport
                stats.refused += 1
                transport.write(_BUSY)
                transport.close()
                return
            super().connection_made(transport)
            book.open[self] = None
            self.head_since = self.loop.time()  # a connection that never sends is cut off too

        def is_idle(self) -> bool:
            return (self.cycle is None or self.cycle.response_complete) and not self.pipeline

        def data_received(self, data: bytes) -> None:
            if self._refused or self._lingering:
                return  # discarded: the answer is sent, the connection is closing
            reading_head = bool(self.head_since)
            super().data_received(data)
            if reading_head and self.head_since:  # the head is still incomplete
                self._header_bytes += len(data)
                if self._header_bytes > max_header_bytes:
                    stats.header_overflows += 1
                    self.cut(_HUGE)

        def on_message_begin(self) -> None:
            if not self.head_since:
                self.head_since = self.loop.time()
            super().on_message_begin()

        def on_headers_complete(self) -> None:
            self.head_since = 0.0
            self._header_bytes = 0
            super().on_headers_complete()

        def cut(self, answer: bytes) -> None:
            """Answer, then close gracefully: stop writing, discard what the client still
            sends for a moment (so the answer is not lost to a reset), then close."""
            self.head_since = 0.0
            transport = self.transport
            if transport.is_closing() or self._lingering:
                return
            self._lingering = True
            transport.write(answer)
            if transport.can_write_eof():
                transport.write_eof()
            self.loop.call_later(LINGER, transport.close)

        def connection_lost(self, exc: Exception | None) -> None:
            book.open.pop(self, None)
            if self._refused:
                return
            super().connection_lost(exc)

    return LimitedProtocol


class HttpServer:
    """An ASGI app served by uvicorn (httptools) under :class:`~airhttp.Limits`.

    The ASGI app should itself be a :class:`~airhttp.GuardedApp` for the request limits
    (body size, in-flight cap) and the Host/Origin/token checks; this class enforces the
    connection limits: header-read timeout (408), header size (431), keep-alive idle time,
    and the connection cap (an idle connection is closed to make room; when none is idle, the
    new one gets 503). The cap never exceeds the descriptor limit less :data:`FD_RESERVE`.
    While serving, repeated log records are rate-limited (:class:`~airhttp.logs.RepeatFilter`).

    Args:
        app: the ASGI app.
        limits: the limits (airhttp's defaults when not given).
    """

    def __init__(self, app: ASGIApp, *, limits: Limits | None = None) -> None:
        self.app = app
        self.limits = limits or Limits()
        self.stats = ServerStats()
        self.ready = asyncio.Event()
        """Set once the socket is listening."""
        self.max_connections = _descriptor_cap(self.limits.max_connections)
        self.log_filter = RepeatFilter()
        self._uvicorn: uvicorn.Server | None = None

    @property
    def started(self) -> bool:
        """Whether uvicorn started listening."""
        return self._uvicorn is not None and bool(self._uvicorn.started)

    def stop(self) -> None:
        """Ask the server to finish (graceful: requests in flight may end)."""
        if self._uvicorn is not None:
            self._uvicorn.should_exit = True

    async def serve(self, sock: socket.socket) -> None:
        """Serve on ``sock`` (bound, see :func:`listen_socket`) until :meth:`stop`."""
        import uvicorn

        book = _Book(self.max_connections)
        config = uvicorn.Config(
            self.app,
            http=_protocol_class(self.limits, book, self.stats),
            log_level="warning",
            lifespan="off",
            access_log=False,
            timeout_graceful_shutdown=5,
            proxy_headers=False,  # no X-Forwarded-* rewriting: one middleware layer less
            server_header=False,
            timeout_keep_alive=self.limits.idle_timeout,  # type: ignore[arg-type]
            backlog=min(2048, max(128, self.max_connections)),
        )
        ready = self.ready

        class _Server(uvicorn.Server):
            async def startup(self, sockets: list[socket.socket] | None = None) -> None:
                await super().startup(sockets=sockets)
                ready.set()

            @contextlib.contextmanager
            def capture_signals(self) -> Iterator[None]:  # the caller owns the signals
                yield

        self._uvicorn = _Server(config)
        loop = asyncio.get_running_loop()
        header_timeout = self.limits.header_timeout
        tick = min(1.0, header_timeout / 4)
        stats = self.stats
        sweeper: asyncio.TimerHandle | None = None

        def sweep() -> None:
            nonlocal sweeper
            book.sweep(loop.time(), header_timeout, stats)
            sweeper = loop.call_later(tick, sweep)

        sweeper = loop.call_later(tick, sweep)
        try:
            with repeat_filter_installed(flt=self.log_filter):
                await self._uvicorn.serve(sockets=[sock])
        finally:
            sweeper.cancel()
