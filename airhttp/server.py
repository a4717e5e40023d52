"""air's HTTP/1.1 server: ASGI apps on asyncio protocols parsed by httptools, under the
shared :class:`~airhttp.Limits`.

:class:`HttpServer` serves one app on a bound socket until :meth:`HttpServer.stop`;
:func:`serve` binds, serves and stops on SIGTERM, Ctrl+C and (Windows) Ctrl+Break. Both enforce
the connection limits — header-read timeout (408), head size (431), keep-alive idle time, a
stalled body (408), the connection cap (the oldest idle connection is closed to make room; none
idle: 503) — answer in request order on a keep-alive connection (pipelining included), stream
responses (chunked transfer coding) with write flow control, and stop gracefully: stop
accepting, close idle connections, let answers in flight finish within a grace period (a
streaming answer's app is told the client is gone), then cancel what is left. Request-level
limits (Host/Origin/token, body size, in-flight cap) are :class:`~airhttp.GuardedApp`'s: wrap
the app in it.

A raw-request hook (``fast``, a :data:`~airhttp.FastHandler`) may answer requests before the
ASGI app: a request with a small declared body (up to 64 KiB, no ``Expect``) waits until its
body is in, then the hook gets the scope and the body and returns either ``None`` (the app
answers, with the same body) or the coroutine of a whole answer, written in one piece; the
coroutine is cancelled if the client goes away. Order, keep-alive, pipelining and the limits
are the same for both. Guard the hook as the app is (:meth:`~airhttp.GuardedApp.guard_fast`).
"""

from __future__ import annotations

import asyncio
import logging
import socket
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from airhttp._platform import descriptor_limit, on_stop_signals, reuse_address
from airhttp.errors import ServerError
from airhttp.limits import Limits
from airhttp.logs import RepeatFilter, repeat_filter_installed
from airhttp.types import ASGIApp, FastHandler
from airhttp.wire import date_header

if TYPE_CHECKING:
    from airhttp.connection import Site

__all__ = [
    "DEFAULT_GRACE",
    "FD_RESERVE",
    "HttpServer",
    "ServerStats",
    "listen_socket",
    "serve",
]

logger = logging.getLogger(__name__)

FD_RESERVE = 64
"""File descriptors kept free of connections (store files, logs, outbound sockets): the
connection cap never exceeds the process's descriptor limit less this."""

DEFAULT_GRACE = 5.0
"""Seconds a stopping server lets the answers in flight finish before cancelling them."""

_CANCEL_WAIT = 1.0


@dataclass(slots=True)
class ServerStats:
    """What the limits did, counted since the server started.

    Attributes:
        refused: connections answered 503 (cap reached, none idle to close).
        evicted: idle connections closed to make room for a new one.
        header_timeouts: connections closed (408) for not sending a request head in time.
        header_overflows: connections closed (431) for a head over the size cap.
        body_timeouts: connections closed for a request body that stopped arriving.
        bodies_cut: connections closed (408) for the body that had been arriving longest
            when more than ``Limits.max_receiving`` bodies were arriving at once.
        bad_requests: connections closed (400) for bytes that are not HTTP/1.1.
        app_errors: requests whose app failed or returned without answering (500).
    """

    refused: int = 0
    evicted: int = 0
    header_timeouts: int = 0
    header_overflows: int = 0
    body_timeouts: int = 0
    bodies_cut: int = 0
    bad_requests: int = 0
    app_errors: int = 0


def listen_socket(host: str, port: int) -> socket.socket:
    """A TCP socket bound to ``(host, port)`` (port 0: any free one), not yet listening.

    Raises:
        OSError: the address cannot be bound (its message names it).
    """
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    # proto=IPPROTO_TCP so the event loop treats accepted connections as TCP (TCP_NODELAY)
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    try:
        reuse_address(sock)
        sock.bind((host, port))
    except OSError as exc:
        sock.close()
        raise OSError(exc.errno, f"cannot listen on {host}:{port}: {exc.strerror}") from exc
    return sock


def _descriptor_cap(wanted: int) -> int:
    soft = descriptor_limit()
    if soft is not None:
        return max(1, min(wanted, soft - FD_RESERVE))
    return wanted


class HttpServer:
    """Serve one ASGI app over HTTP/1.1 under :class:`~airhttp.Limits` (see the module
    docstring for what it enforces).

    Use :meth:`serve` on a bound socket (:func:`listen_socket`) and :meth:`stop` to end it;
    the caller owns the signals (:func:`serve` installs stop handlers for you, see
    :func:`on_stop_signals`).
    While serving, repeated log records are rate-limited (:class:`~airhttp.RepeatFilter`).

    Args:
        app: the ASGI app (wrap it in :class:`~airhttp.GuardedApp` for the request limits).
        limits: the limits (airhttp's defaults when not given).
        grace: seconds answers in flight may take to finish once stopping.
        lifespan: run the app's ASGI lifespan (startup before serving, shutdown after).
        fast: a raw-request hook tried before the app (see the module docstring).

    Raises:
        ServerError: httptools (the HTTP parser) is not installed.
    """

    def __init__(
        self,
        app: ASGIApp,
        *,
        limits: Limits | None = None,
        grace: float = DEFAULT_GRACE,
        lifespan: bool = False,
        fast: FastHandler | None = None,
    ) -> None:
        try:
            import httptools  # noqa: F401 - the parser every connection uses
        except ImportError as exc:
            raise ServerError("airhttp's server needs httptools (pip install httptools)") from exc
        self.app = app
        self.limits = limits or Limits()
        self.grace = grace
        self.lifespan = lifespan
        self.fast = fast
        self.stats = ServerStats()
        self.ready = asyncio.Event()
        """Set once the socket is listening."""
        self.max_connections = _descriptor_cap(self.limits.max_connections)
        self.log_filter = RepeatFilter()
        self._stopping = asyncio.Event()
        self._force = asyncio.Event()
        self._site: Site | None = None
        self._sweeper: asyncio.TimerHandle | None = None

    @property
    def started(self) -> bool:
        """Whether the server is listening (or was, once)."""
        return self.ready.is_set()

    @property
    def connections(self) -> int:
        """Open connections now."""
        return 0 if self._site is None else len(self._site.open)

    @property
    def receiving(self) -> int:
        """Request bodies being received now (bounded by ``Limits.max_receiving``)."""
        return 0 if self._site is None else len(self._site.receiving)

    def stop(self) -> None:
        """Stop gracefully (see the module docstring); called again, stop now."""
        if self._stopping.is_set():
            self._force.set()
        self._stopping.set()

    async def serve(self, sock: socket.socket) -> None:
        """Serve on ``sock`` (bound, see :func:`listen_socket`) until :meth:`stop`.

        Raises:
            ServerError: the app's lifespan startup failed (with ``lifespan=True``).
            OSError: the socket cannot listen.
        """
        from airhttp.connection import Connection, Site
        from airhttp.lifespan import Lifespan

        loop = asyncio.get_running_loop()
        limits = self.limits
        site = Site(
            self.app,
            loop,
            cap=self.max_connections,
            max_head=limits.max_header_bytes,
            stats=self.stats,
            date=date_header(time.time()),
            fast=self.fast,
            max_receiving=min(limits.max_receiving, max(1, limits.max_inflight // 2)),
        )
        self._site = site
        life: Lifespan | None = None
        with repeat_filter_installed(flt=self.log_filter):
            if self.lifespan:
                site.state = {}
                life = Lifespan(self.app, site.state)
                await life.startup()
            try:
                listener = await loop.create_server(
                    lambda: Connection(site),
                    sock=sock,
                    backlog=min(2048, max(128, self.max_connections)),
                )
            except BaseException:
                if life is not None:
                    await life.shutdown()
                raise
            tick = min(1.0, limits.header_timeout / 4)
            self._sweeper = loop.call_later(tick, self._sweep, site, tick)
            self.ready.set()
            try:
                await self._stopping.wait()
            finally:
                if self._sweeper is not None:
                    self._sweeper.cancel()
                listener.close()
                await self._drain(site)
                if life is not None:
                    await life.shutdown()

    def _sweep(self, site: Site, tick: float) -> None:
        loop = site.loop
        site.date = date_header(time.time())
        now = loop.time()
        header_timeout = self.limits.header_timeout
        idle_timeout = self.limits.idle_timeout
        for conn in list(site.open):
            conn.check(now, header_timeout, idle_timeout)
        if not self._stopping.is_set():
            self._sweeper = loop.call_later(tick, self._sweep, site, tick)

    async def _drain(self, site: Site) -> None:
        """Shut down: close idle connections, wait for answers in flight (up to the grace),
        then cancel what is left."""
        site.closing = True
        quiet = asyncio.Event()

        def on_quiet() -> None:
            if all(conn.current is None for conn in site.open):
                quiet.set()

        site.on_quiet = on_quiet
        for conn in list(site.open):
            conn.shutdown()
        on_quiet()
        waits = {asyncio.ensure_future(quiet.wait()), asyncio.ensure_future(self._force.wait())}
        try:
            await asyncio.wait(waits, timeout=self.grace, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for waiter in waits:
                waiter.cancel()
        tasks = []
        for conn in list(site.open):
            current = conn.current
            if current is not None and current.task is not None and not current.task.done():
                current.task.cancel()
                tasks.append(current.task)
            conn.transport.close()
        if tasks:
            await asyncio.wait(tasks, timeout=_CANCEL_WAIT)


async def serve(
    app: ASGIApp,
    *,
    host: str = "127.0.0.1",
    port: int = 0,
    limits: Limits | None = None,
    grace: float = DEFAULT_GRACE,
    lifespan: bool = False,
    ready: Callable[[str], Any] | None = None,
    fast: FastHandler | None = None,
) -> None:
    """Serve ``app`` on ``host:port`` until SIGTERM/SIGINT (or cancellation); a second
    signal stops without waiting for answers in flight.

    Args:
        app: the ASGI app (wrap it in :class:`~airhttp.GuardedApp` for the request limits).
        host: the bind address (loopback by default).
        port: the port; 0 picks a free one.
        limits: the limits (airhttp's defaults when not given).
        grace: seconds answers in flight may take to finish once stopping.
        lifespan: run the app's ASGI lifespan.
        ready: called with the base URL (``http://host:port``) once listening (default: a
            line on stderr).
        fast: a raw-request hook tried before the app (see :class:`HttpServer`).

    Raises:
        OSError: the address cannot be bound.
        ServerError: httptools is missing, or the app's lifespan startup failed.
    """
    server = HttpServer(app, limits=limits, grace=grace, lifespan=lifespan, fast=fast)
    sock = listen_socket(host, port)
    uninstall = on_stop_signals(server.stop)  # SIGTERM, Ctrl+C, Ctrl+Break
    shown = f"[{host}]" if ":" in host else host
    url = f"http://{shown}:{sock.getsockname()[1]}"
    try:
        serving = asyncio.ensure_future(server.serve(sock))
        started = asyncio.ensure_future(server.ready.wait())
        await asyncio.wait({serving, started}, return_when=asyncio.FIRST_COMPLETED)
        started.cancel()
        if server.started:
            if ready is not None:
                ready(url)
            else:
                print(f"airhttp: serving on {url}", file=sys.stderr, flush=True)
        await serving  # cancelled, it stops gracefully on the way out
    finally:
        uninstall()
        sock.close()
