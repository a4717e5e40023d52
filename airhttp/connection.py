"""One HTTP/1.1 connection on an asyncio protocol, parsed by httptools (llhttp).

Requests are answered in order: a request that arrives while another is answered waits in a
short pipeline (reading pauses meanwhile; past :data:`MAX_PIPELINE` the connection closes once
the queued ones are answered). A request head must arrive within the header timeout and stay
under the size cap (408 / 431); a started body must keep arriving (408 after the same time
without a byte, or after :data:`BODY_GRACE` seconds plus one second per :data:`MIN_BODY_RATE`
bytes received). Keep-alive connections idle past the idle timeout are closed. Timeouts are
enforced by the server's periodic sweep (:meth:`Connection.check`), not a timer per request.

Bodies being received are bounded too (:attr:`Site.max_receiving`): a body counts from the end
of its head until its last byte, unless it arrived whole with its head (then it never counts).
One beyond the bound closes the connection whose body has been arriving longest (408), so slow
or endless bodies cannot hold every connection or in-flight slot, whoever sends them (a
loopback client included), while real requests, whose bodies arrive at once, go on. At the
connection cap, an idle connection (or one reading a head, or one closing after an error
answer) makes room for a new one, oldest first; connections are never capped per peer.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import socket
from collections import deque
from collections.abc import Callable, Coroutine
from typing import Any, cast
from urllib.parse import unquote

import httptools

from airhttp.exchange import HIGH_WATER, Exchange
from airhttp.limits import DEFAULT_MAX_RECEIVING
from airhttp.types import Answer, ASGIApp, FastHandler
from airhttp.wire import BAD_REQUEST, BUSY, HUGE, SERVER_ERROR, SLOW

__all__ = ["BODY_GRACE", "LINGER", "MAX_PIPELINE", "MIN_BODY_RATE", "Connection", "Site"]

logger = logging.getLogger(__name__)

LINGER = 2.0
"""Seconds a connection cut off with an error answer keeps draining input before it closes
(so the answer is not lost to a reset)."""

MAX_PIPELINE = 16
"""Requests queued behind the one being answered; past it the connection closes once those
are answered (a client that pipelines must be ready to retry the rest, RFC 9112 §9.3.2)."""

MIN_BODY_RATE = 500
"""Bytes a second a request body must average once its grace has passed: a body has
:data:`BODY_GRACE` seconds (the header timeout if shorter) plus one second per this many
bytes received (Apache's ``mod_reqtimeout`` rule), so a body trickled a byte at a time cannot
hold a connection for long, while a large body on a slow link still arrives."""

BODY_GRACE = 2.0
"""Seconds a request body may take before :data:`MIN_BODY_RATE` applies to it."""

_ASGI = {"version": "3.0", "spec_version": "2.4"}
_METHODS = {m.encode(): m for m in ("GET", "POST", "HEAD", "PUT", "DELETE", "OPTIONS", "PATCH")}


class _HeadTooLargeError(Exception):
    """Raised inside a parser callback to stop parsing an oversized head."""


class _BadTargetError(Exception):
    """Raised inside a parser callback for a request target that does not parse (400)."""


class Site:
    """What every connection of one server shares: the app, the limits, the counters and
    the open connections (oldest first).

    Attributes:
        open: open connections in the order they opened.
        cap: the connection cap.
        closing: the server is shutting down (finish what runs, accept nothing new).
        date: the current ``date`` header line (refreshed by the server's tick).
        state: the lifespan state copied into every request scope (``None``: no lifespan).
        fast: the raw-request hook tried before the app (``None``: none).
        receiving: connections receiving a request body, the one receiving longest first.
        max_receiving: bodies received at once; beyond, the longest-running one is cut.
    """

    def __init__(
        self,
        app: ASGIApp,
        loop: asyncio.AbstractEventLoop,
        *,
        cap: int,
        max_head: int,
        stats: Any,
        date: bytes,
        fast: FastHandler | None = None,
        max_receiving: int = DEFAULT_MAX_RECEIVING,
    ) -> None:
        self.app = app
        self.fast = fast
        self.loop = loop
        self.cap = cap
        self.max_head = max_head
        self.stats = stats
        self.date = date
        self.open: dict[Connection, None] = {}
        self.receiving: dict[Connection, None] = {}
        self.max_receiving = max_receiving
        self.closing = False
        self.state: dict[str, Any] | None = None
        self.on_quiet: Callable[[], None] | None = None
        """Called when a connection finishes its last request during shutdown."""

    def make_room(self) -> bool:
        """Close the oldest connection that is not answering a request (or is closing after
        an error answer already); False if none is."""
        for conn in self.open:
            if conn.lingering or conn.is_idle():
                del self.open[conn]
                conn.transport.close()
                self.stats.evicted += 1
                return True
        return False

    def start_body(self, conn: Connection) -> None:
        """``conn``'s request body is arriving: count it, cutting the body that has been
        arriving longest when the bound is reached."""
        receiving = self.receiving
        if len(receiving) >= self.max_receiving:
            oldest = next(iter(receiving))
            self.stats.bodies_cut += 1
            oldest.cut_body()  # (leaves ``receiving``)
        receiving[conn] = None
        conn.receiving = True


def _holdable(headers: list[tuple[bytes, bytes]]) -> bool:
    """Whether a request can wait for its whole body before anything answers it: a body of
    declared length up to :data:`HIGH_WATER` (or none), and no ``Expect: 100-continue``."""
    length = b"0"
    for name, value in headers:
        if name == b"content-length":
            length = value
        elif name == b"transfer-encoding" or name == b"expect":
            return False
    length = length.strip()
    return length.isascii() and length.isdigit() and int(length) <= HIGH_WATER


def _authority(host: bytes, port: int | None) -> bytes:
    """``host[:port]`` of an absolute-form target, an IPv6 literal in brackets again."""
    if b":" in host:
        host = b"[" + host + b"]"
    return host if port is None else host + b":%d" % port


def _addr(info: Any) -> tuple[str, int] | None:
    if isinstance(info, tuple) and len(info) >= 2:
        return (str(info[0]), int(info[1]))
    return None


class Connection(asyncio.Protocol):
    """The protocol of one client connection (see the module docstring)."""

    def __init__(self, site: Site) -> None:
        self.site = site
        self.loop = site.loop
        self.transport: asyncio.Transport = None  # type: ignore[assignment]
        self.parser = httptools.HttpRequestParser(self)
        self.current: Exchange | None = None
        """The request being answered."""
        self.parsing: Exchange | None = None
        """The request whose body is being parsed (the current one, or a queued one)."""
        self.pipeline: deque[Exchange] = deque()
        self.url = b""
        self.headers: list[tuple[bytes, bytes]] = []
        self.in_head = False
        self.head_since = 0.0
        """Loop time the current request head started arriving (0: not reading a head)."""
        self.idle_since = 0.0
        """Loop time the connection became idle after an answer (0: not idle)."""
        self.last_data = 0.0
        self.body_of: Exchange | None = None
        """The request whose body the sweep is timing (``None``: none yet, or reading paused)."""
        self.body_since = 0.0
        self.body_base = 0
        self.head_known = 0
        self.head_stream = 0
        self.completed_in_feed = False
        self.receiving = False
        """Counted in the site's bodies being received."""
        self.lost = False
        self.lingering = False
        self.refused = False
        self.dropping = False
        self.reading_paused = False
        self.write_paused = False
        self.drainers: list[asyncio.Future[None]] = []
        self.server_addr: tuple[str, int] | None = None
        self.client_addr: tuple[str, int] | None = None

    # ---- asyncio callbacks ----------------------------------------------------------------
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        transport = cast(asyncio.Transport, transport)  # uvloop's is not a subclass
        self.transport = transport
        site = self.site
        if site.closing or (len(site.open) >= site.cap and not site.make_room()):
            self.refused = True
            site.stats.refused += 1
            transport.write(BUSY)
            transport.close()
            return
        site.open[self] = None
        now = self.loop.time()
        self.head_since = now  # a connection that never sends is cut off too
        self.last_data = now
        sock = transport.get_extra_info("socket")
        if sock is not None:
            with contextlib.suppress(OSError, AttributeError, TypeError):
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.server_addr = _addr(transport.get_extra_info("sockname"))
        self.client_addr = _addr(transport.get_extra_info("peername"))

    def data_received(self, data: bytes) -> None:
        if self.lingering or self.refused:
            return  # discarded: the answer is sent, the connection is closing
        self.last_data = self.loop.time()
        self.completed_in_feed = False
        try:
            self.parser.feed_data(data)
        except httptools.HttpParserUpgrade:
            self._stop_parsing()  # no protocol switch: answer what was asked, then close
            return
        except httptools.HttpParserCallbackError as exc:
            if isinstance(exc.__context__, _HeadTooLargeError):
                self.site.stats.header_overflows += 1
                self._fail(HUGE)
                return
            if isinstance(exc.__context__, _BadTargetError):
                self.site.stats.bad_requests += 1
                self._fail(BAD_REQUEST)
                return
            raise
        except httptools.HttpParserError:
            self.site.stats.bad_requests += 1
            self._fail(BAD_REQUEST)
            return
        if self.in_head and not self.completed_in_feed:
            # every byte of this read belongs to the unfinished head (httptools buffers a
            # header it has not finished): bound it here, not only per finished header
            self.head_stream += len(data)
            if self.head_stream > self.site.max_head:
                self.site.stats.header_overflows += 1
                self._fail(HUGE)
        elif not self.receiving:
            parsing = self.parsing
            if parsing is not None and parsing.more and not self.lingering:
                self.site.start_body(self)  # its body did not arrive whole with its head

    def connection_lost(self, exc: Exception | None) -> None:
        self.lost = True
        site = self.site
        site.open.pop(self, None)
        if self.receiving:
            self._end_body()
        if self.refused:
            return
        self.pipeline.clear()
        current = self.current
        if current is not None:
            current.gone = True
            current.wake()
            if current.fast and current.task is not None:
                current.task.cancel()  # a fast answer has no receive() to tell
        parsing = self.parsing
        if parsing is not None and parsing is not current:
            parsing.gone = True
        self._release_drainers()
        if site.closing and site.on_quiet is not None:
            site.on_quiet()

    def pause_writing(self) -> None:
        self.write_paused = True

    def resume_writing(self) -> None:
        self.write_paused = False
        self._release_drainers()

    # ---- httptools callbacks ----------------------------------------------------------------
    def on_message_begin(self) -> None:
        if self.dropping:
            return
        self.url = b""
        self.headers = []
        self.in_head = True
        self.head_known = 0
        self.head_stream = 0
        self.idle_since = 0.0
        if not self.head_since:
            self.head_since = self.loop.time()

    def on_url(self, url: bytes) -> None:
        if self.dropping:
            return
        self.url += url
        self.head_known += len(url)
        if self.head_known > self.site.max_head:
            raise _HeadTooLargeError

    def on_header(self, name: bytes, value: bytes) -> None:
        if self.dropping:
            return
        self.headers.append((name.lower(), value))
        self.head_known += len(name) + len(value) + 4
        if self.head_known > self.site.max_head:
            raise _HeadTooLargeError

    def on_headers_complete(self) -> None:
        self.in_head = False
        self.head_since = 0.0
        if self.dropping:
            return
        parser = self.parser
        url = self.url
        if url[:1] == b"/":
            mark = url.find(b"?")
            raw_path, query = (url, b"") if mark < 0 else (url[:mark], url[mark + 1 :])
        elif url == b"*":
            raw_path, query = url, b""
        else:  # absolute form (a proxy-style request line)
            try:
                parsed = httptools.parse_url(url)
            except httptools.HttpParserInvalidURLError as exc:
                raise _BadTargetError(url[:80]) from exc
            raw_path, query = parsed.path or b"/", parsed.query or b""
            # RFC 9112 §3.2.2: the target's authority replaces the Host header, so the Host
            # check sees the host the request is really for
            self.headers = [(n, v) for n, v in self.headers if n != b"host"]
            self.headers.append((b"host", _authority(parsed.host or b"", parsed.port)))
        path = raw_path.decode("utf-8", "replace")
        if "%" in path:
            path = unquote(path)
        method_raw = parser.get_method()
        method = _METHODS.get(method_raw) or method_raw.decode("ascii", "replace")
        version = parser.get_http_version()
        scope: dict[str, Any] = {
            "type": "http",
            "asgi": _ASGI,
            "http_version": version,
            "server": self.server_addr,
            "client": self.client_addr,
            "scheme": "http",
            "method": method,
            "root_path": "",
            "path": path,
            "raw_path": raw_path,
            "query_string": query,
            "headers": self.headers,
        }
        state = self.site.state
        if state is not None:
            scope["state"] = state.copy()
        exchange = Exchange(
            self,
            scope,
            keep_alive=parser.should_keep_alive(),
            http11=version == "1.1",
            head_only=method == "HEAD",
        )
        if self.site.fast is not None and _holdable(self.headers):
            exchange.held = True
        if self.current is None:
            self.parsing = exchange
            self._start(exchange)
        elif len(self.pipeline) < MAX_PIPELINE and not self.site.closing:
            self.parsing = exchange
            self.pipeline.append(exchange)
            self._check_reading()
        else:
            self.dropping = True  # answer what is queued, then close
            self.parsing = None
            self._check_reading()

    def on_body(self, body: bytes) -> None:
        exchange = self.parsing
        if exchange is None:
            return
        exchange.received += len(body)
        if exchange.discarding:
            return
        exchange.chunks.append(body)
        exchange.buffered += len(body)
        if exchange.waiters:
            exchange.wake()
        if exchange.buffered > HIGH_WATER and not self.reading_paused:
            self._check_reading()

    def on_message_complete(self) -> None:
        self.completed_in_feed = True
        if self.receiving:
            self._end_body()
        exchange = self.parsing
        if exchange is None:
            return
        self.parsing = None
        exchange.more = False
        if exchange.held and self.current is exchange:
            self._offer(exchange)
            return
        if exchange.waiters:
            exchange.wake()
        if exchange.discarding and self.current is None:
            self.idle_since = self.loop.time()

    # ---- the exchange's side ----------------------------------------------------------------
    def write(self, data: bytes) -> None:
        """Write ``data`` unless the connection is gone or closing."""
        if not self.lost and not self.lingering:
            self.transport.write(data)

    async def drain(self) -> None:
        """Wait until the client has read enough of what was written (or is gone)."""
        if self.write_paused and not self.lost:
            fut: asyncio.Future[None] = self.loop.create_future()
            self.drainers.append(fut)
            await fut

    def can_discard(self, exchange: Exchange) -> bool:
        """Whether the unread rest of ``exchange``'s body is declared and small enough to
        read and drop, keeping the connection open (:data:`HIGH_WATER`)."""
        for name, value in exchange.scope["headers"]:
            if name == b"content-length":
                declared = value.strip()
                return declared.isdigit() and int(declared) - exchange.received <= HIGH_WATER
        return False

    def body_taken(self) -> None:
        """The app took the buffered body: read on if reading paused for it."""
        if self.reading_paused:
            self._check_reading()

    def finished(self, exchange: Exchange) -> None:
        """The response to ``exchange`` is complete: close, or go on to the next request."""
        if self.current is exchange:
            self.current = None
        exchange.wake()  # a receive() waiting past the body answers http.disconnect now
        if self.lost or self.lingering:
            return
        if exchange.close or not exchange.keep_alive or self.site.closing:
            if exchange.more:  # the app answered without reading a large body
                self.cut(None)
            else:
                self.transport.close()  # queued requests, if any, are never answered
        elif exchange.more:  # the small rest of an unread body: read and drop it, go on
            exchange.discarding = True
            exchange.chunks = []
            exchange.buffered = 0
            self._check_reading()
        elif self.pipeline:
            self._next()
        elif self.dropping:
            self.transport.close()
        else:
            now = self.loop.time()
            self.idle_since = now
            if self.in_head:  # the next head's clock starts now, not while we answered
                self.head_since = now
            if self.reading_paused:
                self._check_reading()

    # ---- internals ----------------------------------------------------------------------------
    def _end_body(self) -> None:
        self.receiving = False
        self.site.receiving.pop(self, None)

    def cut_body(self) -> None:
        """The body being received is cut off: 408 (unless an answer has started), close."""
        current = self.current
        self.cut(None if current is not None and current.sent_head else SLOW)

    def is_idle(self) -> bool:
        """Not answering a request (reading a head counts as idle)."""
        return self.current is None and not self.pipeline

    def _next(self) -> None:
        nxt = self.pipeline.popleft()
        if self.dropping and not self.pipeline:
            nxt.keep_alive = False  # the last answer says the connection closes
        self._start(nxt)
        self._check_reading()

    def _start(self, exchange: Exchange) -> None:
        self.current = exchange
        self.idle_since = 0.0
        if exchange.held:
            if not exchange.more:
                self._offer(exchange)
            return  # else offered once its body is in (on_message_complete)
        exchange.task = self.loop.create_task(self._run(exchange))

    def _offer(self, exchange: Exchange) -> None:
        """Offer a request whose whole body is in to the fast handler; the app gets it if
        the handler leaves it."""
        exchange.held = False
        fast = self.site.fast
        assert fast is not None
        chunks = exchange.chunks
        try:
            answer = fast(exchange.scope, chunks[0] if len(chunks) == 1 else b"".join(chunks))
        except Exception:
            self.site.stats.app_errors += 1
            scope = exchange.scope
            logger.exception("the fast handler failed on %s %s", scope["method"], scope["path"])
            self._abort(exchange, SERVER_ERROR)
            return
        if answer is None:
            exchange.task = self.loop.create_task(self._run(exchange))
        else:
            exchange.fast = True
            exchange.task = self.loop.create_task(self._run_fast(exchange, answer))

    async def _run_fast(self, exchange: Exchange, answer: Coroutine[Any, Any, Answer]) -> None:
        try:
            status, headers, body = await answer
            exchange.respond(status, headers, body)
        except asyncio.CancelledError:
            self._abort(exchange, None)
            raise
        except Exception:
            self.site.stats.app_errors += 1
            scope = exchange.scope
            logger.exception("the fast handler failed on %s %s", scope["method"], scope["path"])
            self._abort(exchange, SERVER_ERROR)

    async def _run(self, exchange: Exchange) -> None:
        try:
            await self.site.app(exchange.scope, exchange.receive, exchange.send)
        except asyncio.CancelledError:
            self._abort(exchange, None)
            raise
        except Exception:
            self.site.stats.app_errors += 1
            scope = exchange.scope
            logger.exception("the app failed on %s %s", scope["method"], scope["path"])
            self._abort(exchange, SERVER_ERROR)
        else:
            if not exchange.complete:
                if not exchange.sent_head:
                    self.site.stats.app_errors += 1
                    logger.error("the app returned without answering %s", exchange.scope["path"])
                self._abort(exchange, SERVER_ERROR)

    def _abort(self, exchange: Exchange, answer: bytes | None) -> None:
        """The app ended without completing its answer: answer 500 if nothing was sent,
        else cut the half-sent response off."""
        if exchange.complete:
            return
        exchange.complete = True
        if self.current is exchange:
            self.current = None
        exchange.wake()
        if self.lost or self.lingering:
            return
        self.pipeline.clear()
        if exchange.sent_head or answer is None:
            self.transport.close()
        else:
            self.cut(answer)
        if self.site.closing and self.site.on_quiet is not None:
            self.site.on_quiet()

    def _check_reading(self) -> None:
        if self.lost or self.lingering:
            return
        parsing = self.parsing
        pause = (
            self.dropping
            or bool(self.pipeline)
            or (parsing is not None and parsing.buffered > HIGH_WATER)
        )
        if pause != self.reading_paused:
            self.reading_paused = pause
            if pause:
                self.transport.pause_reading()
            else:
                self.transport.resume_reading()

    def _stop_parsing(self) -> None:
        """Take no more requests from this connection; close once the current is answered."""
        self.dropping = True
        self.in_head = False
        self.head_since = 0.0
        if self.receiving:
            self._end_body()
        parsing = self.parsing
        if parsing is not None:  # an upgrade request has no body for us
            parsing.more = False
            parsing.wake()
            self.parsing = None
        if self.current is None and not self.pipeline:
            self.transport.close()
        else:
            self._check_reading()

    def _fail(self, answer: bytes) -> None:
        """A protocol error: answer it and close, after the request in progress if any."""
        if self.current is None and not self.pipeline:
            self.cut(answer)
        else:
            self._stop_parsing()

    def _release_drainers(self) -> None:
        drainers = self.drainers
        if drainers:
            self.drainers = []
            for fut in drainers:
                if not fut.done():
                    fut.set_result(None)

    def cut(self, answer: bytes | None) -> None:
        """Answer, then close gracefully: stop writing, discard what the client still sends
        for :data:`LINGER` seconds (so the answer is not lost to a reset), then close."""
        self.head_since = self.idle_since = 0.0
        self.in_head = False
        if self.receiving:
            self._end_body()
        transport = self.transport
        if self.lost or self.lingering or transport.is_closing():
            return
        current = self.current
        if current is not None:
            current.gone = True
            current.wake()
        self.lingering = True
        if answer is not None:
            transport.write(answer)
        if self.reading_paused:
            self.reading_paused = False
            transport.resume_reading()
        if transport.can_write_eof():
            transport.write_eof()
        self.loop.call_later(LINGER, transport.close)

    def check(self, now: float, header_timeout: float, idle_timeout: float) -> None:
        """The periodic sweep: cut off a head or body that is overdue, close an idle
        keep-alive connection."""
        if self.lost or self.lingering:
            return
        if self.head_since and self.current is None:
            if now - self.head_since > header_timeout:
                self.site.stats.header_timeouts += 1
                self.cut(SLOW)
        elif self.idle_since:
            if now - self.idle_since > idle_timeout and self.current is None:
                self.transport.close()
        else:
            parsing = self.parsing
            if parsing is None or not parsing.more or self.reading_paused:
                self.body_of = None  # a body's clock runs only while it is being read
                return
            if self.body_of is not parsing:  # first seen by the sweep: its clock starts
                self.body_of, self.body_since, self.body_base = parsing, now, parsing.received
            grace = min(BODY_GRACE, header_timeout)
            allowed = grace + (parsing.received - self.body_base) / MIN_BODY_RATE
            if now - self.last_data > header_timeout or now - self.body_since > allowed:
                self.body_of = None
                self.site.stats.body_timeouts += 1
                self.cut_body()

    def shutdown(self) -> None:
        """The server is stopping: close when idle, else after the current answer; a
        streaming answer's app is told the client is gone."""
        if self.lost:
            return
        current = self.current
        if current is None:
            self.transport.close()
            return
        self.pipeline.clear()
        if current.sent_head:
            current.gone = True
            current.wake()
