"""A small HTTP/1.1 client for the gateway's hot path: keep-alive pools of asyncio connections.

Measured against httpx and aiohttp in ``bench/gateway_bench.py`` (see docs/gateway.md): the
libraries cost several hundred microseconds of CPU per call, which capped the gateway far
below its throughput target; this client writes each request in one write and reads only
what an MCP endpoint answers (JSON bodies and SSE streams). Answers are parsed by llhttp
(``httptools.HttpResponseParser``, one per connection), so no hand-written parser reads an
upstream's bytes; every limit is enforced while reading (:data:`MAX_HEAD`, :data:`MAX_BODY`,
:data:`MAX_LINE`), a piece of at most :data:`_READ` bytes at a time.
"""

from __future__ import annotations

import asyncio
import contextlib
import ssl
import time
from collections.abc import AsyncIterator, Mapping
from typing import cast
from urllib.parse import urlsplit

import httptools

__all__ = [
    "MAX_BODY",
    "MAX_HEAD",
    "MAX_LINE",
    "AnswerTooLargeError",
    "ConnectFailedError",
    "ConnectionLostError",
    "Http11Pool",
    "Response",
]

MAX_HEAD = 1024 * 1024
"""The largest status line and header block accepted."""
MAX_LINE = 16 * 1024 * 1024
"""The longest line of a streamed (SSE) answer accepted."""
MAX_BODY = 64 * 1024 * 1024
"""The largest answer read whole (JSON), however it is framed (length, chunks, or the end of
the connection)."""
IDLE_S = 4.0
"""An idle connection older than this is not reused (uvicorn closes them after 5 s)."""
_READ = 256 * 1024
"""Bytes read (and parsed) at a time: a limit is passed by at most this much."""
_MIB = 1024 * 1024


class ConnectFailedError(OSError):
    """No connection could be opened (the request was not sent)."""


class ConnectionLostError(OSError):
    """The connection broke before the whole answer arrived (the request may have run)."""


class AnswerTooLargeError(ConnectionLostError):
    """An answer broke a read-time limit (head, body or line): it was not read further and
    its connection was closed (the request may have run)."""


class _Conn(asyncio.Protocol):
    """One connection (its own protocol: the bytes received wait in a buffer, as a
    StreamReader would keep them, without its layers) and the llhttp parser reading its
    answers (the parser's callbacks fill the answer being read)."""

    __slots__ = (
        "_error",
        "_paused",
        "_pending",
        "_waiter",
        "body",
        "done",
        "eof",
        "extra",
        "head_done",
        "headers",
        "idle_since",
        "keep_alive",
        "parser",
        "status",
        "transport",
    )

    def __init__(self) -> None:
        self.transport: asyncio.Transport | None = None
        self._pending = bytearray()
        """Bytes received, not taken yet (reading pauses past ``2 * _READ``)."""
        self._paused = False
        self._waiter: asyncio.Future[None] | None = None
        self._error: BaseException | None = None
        self.eof = False
        """The connection ended (EOF, closed or broken): no more bytes will come."""
        self.idle_since = 0.0
        self.parser = httptools.HttpResponseParser(self)
        self.status = 0
        self.headers: dict[str, str] = {}
        self.body = bytearray()
        self.head_done = self.done = self.extra = self.keep_alive = False

    def start(self) -> None:
        """Ready for the next answer."""
        self.status = 0
        self.headers = {}
        self.body = bytearray()
        self.head_done = self.done = self.keep_alive = False

    def feed(self, data: bytes) -> None:
        """Parse ``data``.

        Raises:
            ValueError: not HTTP/1.x, or a protocol upgrade.
        """
        try:
            self.parser.feed_data(data)
        except httptools.HttpParserUpgrade:
            raise ValueError("the server switched protocols") from None
        except httptools.HttpParserError as exc:
            raise ValueError(f"not an HTTP/1.1 answer: {exc}") from None

    # ---- llhttp callbacks ---------------------------------------------------------------
    def on_message_begin(self) -> None:
        if self.done:  # bytes after the answer: this connection cannot be trusted again
            self.extra = True

    def on_header(self, name: bytes, value: bytes) -> None:
        if self.extra:  # (a stray answer's headers must not become the answer's)
            return
        self.headers[name.decode("latin-1").lower()] = value.decode("latin-1").strip()

    def on_headers_complete(self) -> None:
        if self.extra:
            return
        status = self.parser.get_status_code()
        if 100 <= status < 200 and status != 101:  # informational (103 Early Hints): the
            self.headers = {}  # answer follows on the same connection
            return
        self.head_done = True
        self.status = status

    def on_body(self, body: bytes) -> None:
        if not self.extra:
            self.body += body

    def on_message_complete(self) -> None:
        if not self.extra and self.head_done:  # (an informational answer is not the answer)
            self.done = True
            self.keep_alive = self.parser.should_keep_alive()  # only known here

    # ---- the protocol -------------------------------------------------------------------
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = cast(asyncio.Transport, transport)

    def data_received(self, data: bytes) -> None:
        self._pending += data
        if not self._paused and len(self._pending) > 2 * _READ:
            assert self.transport is not None
            self.transport.pause_reading()  # read on when the reader has taken some
            self._paused = True
        self._wake()

    def eof_received(self) -> bool:
        self.eof = True
        self._wake()
        return False  # (the transport closes)

    def connection_lost(self, exc: Exception | None) -> None:
        self.eof = True
        self._error = exc
        self._wake()

    def _wake(self) -> None:
        waiter = self._waiter
        if waiter is not None:
            self._waiter = None
            if not waiter.done():
                waiter.set_result(None)

    def at_eof(self) -> bool:
        """Whether the connection ended and every byte it brought was taken."""
        return self.eof and not self._pending

    def quiet(self) -> bool:
        """Whether it may carry another request: open, and nothing arrived since its answer
        ended (bytes no request asked for would be read as the next request's answer, and each
        later caller would get the one before's)."""
        return not self.eof and not self._pending

    def arrived(self) -> asyncio.Future[None] | None:
        """``None`` when :meth:`take` has something to give at once (bytes, the end, or the
        connection's error), else a future done when it will."""
        if self._pending or self.eof:
            return None
        assert self.transport is not None
        waiter = self._waiter = asyncio.get_running_loop().create_future()
        return waiter

    def take(self) -> bytes:
        """Up to :data:`_READ` bytes received (``b""``: the connection ended), after
        :meth:`arrived` said they are there.

        Raises:
            OSError: the connection broke (as ``StreamReader.read`` raises it).
        """
        if self._error is not None:
            raise self._error
        pending = self._pending
        if len(pending) <= _READ:
            data = bytes(pending)
            pending.clear()
        else:
            data = bytes(pending[:_READ])
            del pending[:_READ]
        if self._paused and len(pending) <= _READ:
            self._paused = False
            assert self.transport is not None
            self.transport.resume_reading()
        return data

    # ---- reading ------------------------------------------------------------------------
    async def read_more(self, until_eof: bool) -> bool:
        """Read and parse one more piece; ``False`` at the end of a body that ends with the
        connection.

        Raises:
            ConnectionLostError: the connection closed before the answer's end.
        """
        waiter = self.arrived()
        if waiter is not None:
            await waiter
        data = self.take()
        if not data:
            if until_eof:
                self.done = True
                return False
            raise ConnectionLostError("the connection closed before the answer's end")
        self.feed(data)
        return True

    def reusable(self, until_eof: bool) -> bool:
        """Whether another request may go on this connection."""
        return self.keep_alive and not (until_eof or self.extra)

    def close(self) -> None:
        with contextlib.suppress(Exception):
            if self.transport is not None:
                self.transport.close()


class Response:
    """One answer: status, lower-case headers, and either ``body`` or a line stream."""

    __slots__ = ("_conn", "_pool", "_until_eof", "body", "headers", "status")

    def __init__(self, status: int, headers: dict[str, str], body: bytes | None) -> None:
        self.status = status
        self.headers = headers
        self.body = body
        self._conn: _Conn | None = None
        self._pool: Http11Pool | None = None
        self._until_eof = False

    @property
    def content_type(self) -> str:
        """The media type, without parameters."""
        return self.headers.get("content-type", "").split(";", 1)[0].strip().lower()

    async def lines(self) -> AsyncIterator[bytes]:
        """The streamed body, line by line (the connection returns to the pool at its end).

        Raises:
            AnswerTooLargeError: a line over :data:`MAX_LINE` (the stream ends there).
            ConnectionLostError: the stream was cut, or is not HTTP.
        """
        conn, self._conn = self._conn, None
        if conn is None:
            return
        finished = False
        try:
            body = conn.body
            scanned = 0
            while True:
                cut = body.rfind(b"\n", scanned)
                if cut >= 0:
                    *complete, _rest = body[: cut + 1].split(b"\n")
                    del body[: cut + 1]
                    for line in complete:
                        if len(line) >= MAX_LINE:
                            raise _line_too_long()
                        yield bytes(line) + b"\n"
                if len(body) >= MAX_LINE:
                    raise _line_too_long()
                scanned = len(body)
                if conn.done or not await conn.read_more(self._until_eof):
                    break
            if body:
                yield bytes(body)
            finished = True
        except ConnectionLostError:
            raise
        except (OSError, ValueError) as exc:
            raise ConnectionLostError(str(exc) or type(exc).__name__) from exc
        finally:
            if finished and self._pool is not None and conn.reusable(self._until_eof):
                self._pool.release(conn)
            else:
                conn.close()


class Http11Pool:
    """Keep-alive connections to one ``http(s)://host:port/path``.

    Args:
        url: the endpoint every request goes to.
        size: idle connections kept at most (more may be open while busy).
        headers: sent with every request.
    """

    def __init__(self, url: str, *, size: int, headers: Mapping[str, str]) -> None:
        parts = urlsplit(url)
        self.host = parts.hostname or "127.0.0.1"
        self.ssl: ssl.SSLContext | None = (
            ssl.create_default_context() if parts.scheme == "https" else None
        )
        self.port = parts.port or (443 if self.ssl is not None else 80)
        path = parts.path or "/"
        if parts.query:
            path += "?" + parts.query
        self.path = path
        self._post_line = f"POST {path} HTTP/1.1\r\n".encode()
        host = parts.netloc.rsplit("@", 1)[-1]
        fixed = "".join(f"{k}: {v}\r\n" for k, v in headers.items())
        self._head = f"Host: {host}\r\n{fixed}".encode("latin-1")
        self._size = size
        self._idle: list[_Conn] = []
        self._closed = False

    async def _connect(self) -> _Conn:
        try:
            _transport, conn = await asyncio.get_running_loop().create_connection(
                _Conn, self.host, self.port, ssl=self.ssl
            )
        except (OSError, ssl.SSLError) as exc:
            raise ConnectFailedError(f"cannot connect to {self.host}:{self.port}: {exc}") from exc
        return conn

    def _take(self) -> _Conn | None:
        now = time.monotonic()
        while self._idle:
            conn = self._idle.pop()
            transport = conn.transport
            if (
                not conn.quiet()
                or transport is None
                or transport.is_closing()
                or now - conn.idle_since > IDLE_S
            ):
                conn.close()
                continue
            return conn
        return None

    def release(self, conn: _Conn) -> None:
        """Put a connection whose answer was read completely back in the pool."""
        if self._closed or len(self._idle) >= self._size or not conn.quiet():
            conn.close()
            return
        conn.idle_since = time.monotonic()
        self._idle.append(conn)

    async def request(
        self,
        method: str,
        body: bytes,
        headers: Mapping[str, str] | None = None,
        *,
        resend: bool = False,
        lines: bytes = b"",
    ) -> Response:
        """Send one request; a JSON answer is read whole, an SSE answer is left to stream.

        A pooled connection the server closes without a byte of answer after the request was
        written may have been closed while idle (the request never arrived) or by a server
        that died running it: the two cannot be told apart, so the request is sent again on
        a new connection only when ``resend`` says running it twice is harmless.

        Args:
            method: the HTTP method.
            body: the request body.
            headers: extra headers for this request.
            resend: whether the request may be sent again after a pooled connection closed
                with no answer (read-only or idempotent requests only).
            lines: more header lines, encoded already (each ending in CRLF): what a hot path
                sends on every request is made once, not joined per request.

        Raises:
            ConnectFailedError: no connection (nothing was sent).
            ConnectionLostError: the connection broke after the request was written (it may
                have run); :class:`AnswerTooLargeError` for an answer past a limit.
        """
        extra = b""
        if headers:
            extra = "".join(f"{k}: {v}\r\n" for k, v in headers.items()).encode("latin-1")
        start = (
            self._post_line if method == "POST" else f"{method} {self.path} HTTP/1.1\r\n".encode()
        )
        data = b"".join((
            start, self._head, extra, lines, b"Content-Length: %d\r\n\r\n" % len(body), body,
        ))  # fmt: skip
        conn = self._take()
        reused = conn is not None
        if conn is None:
            conn = await self._connect()
        first = True
        while True:  # the exchange, here (each coroutine layer costs every call)
            try:
                conn.start()
                assert conn.transport is not None
                conn.transport.write(data)
                received = 0
                while not conn.head_done:
                    waiter = conn.arrived()
                    if waiter is not None:
                        await waiter
                    piece = conn.take()
                    if not piece:
                        if received == 0:
                            raise _StaleError
                        raise ConnectionLostError("the connection closed in the answer's head")
                    received += len(piece)
                    conn.feed(piece)
                    if not conn.head_done and received > MAX_HEAD:
                        raise AnswerTooLargeError(
                            f"an answer's head over the {MAX_HEAD // _MIB} MiB limit"
                        )
                headers = conn.headers
                response = Response(conn.status, headers, None)
                chunked = "chunked" in headers.get("transfer-encoding", "").lower()
                length = headers.get("content-length")
                until_eof = not chunked and length is None
                if response.content_type == "text/event-stream" and (
                    chunked or length is None or 200 <= response.status < 300
                ):  # a stream (a sized one too; an error's sized body is read whole, as before)
                    response._conn, response._pool, response._until_eof = conn, self, until_eof
                    return response
                if length is not None and not chunked and int(length) > MAX_BODY:
                    raise AnswerTooLargeError(
                        f"an answer of {int(length)} bytes is over the {MAX_BODY // _MIB} MiB limit"
                    )
                while not conn.done and await conn.read_more(until_eof):
                    if len(conn.body) > MAX_BODY:
                        raise AnswerTooLargeError(
                            f"an answer over the {MAX_BODY // _MIB} MiB limit"
                        )
                if len(conn.body) > MAX_BODY:
                    raise AnswerTooLargeError(f"an answer over the {MAX_BODY // _MIB} MiB limit")
                response.body = bytes(conn.body)
                conn.body = bytearray()
            except _StaleError:
                conn.close()
                if not (first and reused and resend):
                    raise ConnectionLostError(
                        "the server closed the connection without answering"
                    ) from None
            except ConnectionLostError:
                conn.close()
                raise
            except (OSError, ValueError) as exc:
                conn.close()
                raise ConnectionLostError(str(exc) or type(exc).__name__) from exc
            except BaseException:  # cancelled mid-answer: the connection is in an unknown state
                conn.close()
                raise
            else:
                if conn.reusable(until_eof):
                    self.release(conn)
                else:
                    conn.close()
                return response
            # perhaps a pooled connection the server had just closed: safe to send again
            first = False
            try:
                conn = await self._connect()
            except ConnectFailedError as exc:  # the first attempt's bytes were written
                raise ConnectionLostError(
                    f"the server closed the connection without answering, then {exc}"
                ) from exc

    async def close(self) -> None:
        """Close every idle connection. Idempotent."""
        self._closed = True
        idle, self._idle = self._idle, []
        for conn in idle:
            conn.close()


class _StaleError(Exception):
    """The connection was closed before any byte of the answer."""


def _line_too_long() -> AnswerTooLargeError:
    return AnswerTooLargeError(f"a streamed line over the {MAX_LINE // _MIB} MiB limit")
