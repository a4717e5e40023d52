"""A small HTTP/1.1 client for the gateway's hot path: keep-alive pools of asyncio streams.

Measured against httpx and aiohttp in ``bench/gateway_bench.py`` (see docs/gateway.md): the
libraries cost several hundred microseconds of CPU per call, which capped the gateway far
below its throughput target; this client writes each request in one write and parses only
what an MCP endpoint answers (``Content-Length`` bodies and chunked SSE streams).
"""

from __future__ import annotations

import asyncio
import contextlib
import ssl
import time
from collections.abc import AsyncIterator, Mapping
from urllib.parse import urlsplit

__all__ = [
    "MAX_BODY",
    "MAX_CHUNK",
    "MAX_LINE",
    "AnswerTooLargeError",
    "ConnectFailedError",
    "ConnectionLostError",
    "Http11Pool",
    "Response",
]

MAX_LINE = 16 * 1024 * 1024
"""The longest header block, or line of a streamed (SSE) answer, accepted."""
MAX_BODY = 64 * 1024 * 1024
"""The largest answer read whole (JSON)."""
MAX_CHUNK = MAX_BODY
"""The largest chunk a chunked answer may declare (checked before a byte of it is read)."""
_READ = 256 * 1024
"""Bytes read at a time from a streamed chunk (never a whole declared chunk at once)."""
_MIB = 1024 * 1024
IDLE_S = 4.0
"""An idle connection older than this is not reused (uvicorn closes them after 5 s)."""


class ConnectFailedError(OSError):
    """No connection could be opened (the request was not sent)."""


class ConnectionLostError(OSError):
    """The connection broke before the whole answer arrived (the request may have run)."""


class AnswerTooLargeError(ConnectionLostError):
    """An answer broke a read-time limit (body, chunk or line): it was not read further and
    its connection was closed (the request may have run)."""


class _Conn:
    __slots__ = ("idle_since", "reader", "writer")

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader = reader
        self.writer = writer
        self.idle_since = 0.0

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self.writer.close()


class Response:
    """One answer: status, lower-case headers, and either ``body`` or a line stream."""

    __slots__ = ("_chunked", "_conn", "_pool", "body", "headers", "status")

    def __init__(self, status: int, headers: dict[str, str], body: bytes | None) -> None:
        self.status = status
        self.headers = headers
        self.body = body
        self._conn: _Conn | None = None
        self._pool: Http11Pool | None = None
        self._chunked = False

    @property
    def content_type(self) -> str:
        """The media type, without parameters."""
        return self.headers.get("content-type", "").split(";", 1)[0].strip().lower()

    async def lines(self) -> AsyncIterator[bytes]:
        """The streamed body, line by line (the connection returns to the pool at its end)."""
        conn, self._conn = self._conn, None
        if conn is None:
            return
        finished = False
        try:
            if self._chunked:
                async for line in _chunked_lines(conn.reader):
                    yield line
            else:  # read to the end of the connection
                while True:
                    try:
                        line = await conn.reader.readline()
                    except ValueError:  # the reader's limit: MAX_LINE
                        raise _line_too_long() from None
                    if not line:
                        break
                    yield line
                conn.close()
                conn = None
            finished = True
        except ConnectionLostError:
            raise
        except (OSError, asyncio.IncompleteReadError, ValueError) as exc:
            raise ConnectionLostError(str(exc)) from exc
        finally:
            if conn is not None:
                if finished and self._pool is not None:
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
        host = parts.netloc.rsplit("@", 1)[-1]
        fixed = "".join(f"{k}: {v}\r\n" for k, v in headers.items())
        self._head = f"Host: {host}\r\n{fixed}".encode("latin-1")
        self._size = size
        self._idle: list[_Conn] = []
        self._closed = False

    async def _connect(self) -> _Conn:
        try:
            reader, writer = await asyncio.open_connection(
                self.host, self.port, ssl=self.ssl, limit=MAX_LINE
            )
        except (OSError, ssl.SSLError) as exc:
            raise ConnectFailedError(f"cannot connect to {self.host}:{self.port}: {exc}") from exc
        return _Conn(reader, writer)

    def _take(self) -> _Conn | None:
        now = time.monotonic()
        while self._idle:
            conn = self._idle.pop()
            if (
                conn.reader.at_eof()
                or conn.writer.transport.is_closing()
                or now - conn.idle_since > IDLE_S
            ):
                conn.close()
                continue
            return conn
        return None

    def release(self, conn: _Conn) -> None:
        """Put a connection whose answer was read completely back in the pool."""
        if self._closed or len(self._idle) >= self._size or conn.reader.at_eof():
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

        Raises:
            ConnectFailedError: no connection (nothing was sent).
            ConnectionLostError: the connection broke after the request was written (it may
                have run).
        """
        extra = "".join(f"{k}: {v}\r\n" for k, v in (headers or {}).items()).encode("latin-1")
        data = b"".join((
            f"{method} {self.path} HTTP/1.1\r\n".encode(), self._head, extra,
            b"Content-Length: ", str(len(body)).encode(), b"\r\n\r\n", body,
        ))  # fmt: skip
        conn = self._take()
        reused = conn is not None
        if conn is None:
            conn = await self._connect()
        try:
            return await self._exchange(conn, data)
        except _StaleError:
            conn.close()
            if not (reused and resend):
                raise ConnectionLostError(
                    "the server closed the connection without answering"
                ) from None
        # perhaps a pooled connection the server had just closed: safe to send again
        try:
            fresh = await self._connect()
        except ConnectFailedError as exc:  # the first attempt's bytes were written
            raise ConnectionLostError(
                f"the server closed the connection without answering, then {exc}"
            ) from exc
        try:
            return await self._exchange(fresh, data)
        except _StaleError:
            fresh.close()
            raise ConnectionLostError(
                "the server closed the connection without answering"
            ) from None

    async def _exchange(self, conn: _Conn, data: bytes) -> Response:
        try:
            conn.writer.write(data)
            try:
                head = await conn.reader.readuntil(b"\r\n\r\n")
            except asyncio.IncompleteReadError as exc:
                if not exc.partial:
                    raise _StaleError from exc
                raise
            status, headers = _parse_head(head)
            response = Response(status, headers, None)
            chunked = "chunked" in headers.get("transfer-encoding", "").lower()
            length = headers.get("content-length")
            if response.content_type == "text/event-stream" and (chunked or length is None):
                response._conn, response._pool, response._chunked = conn, self, chunked
                return response
            if chunked:
                response.body = await _read_chunked(conn.reader)
            elif length is not None:
                size = int(length)
                if size > MAX_BODY:
                    raise AnswerTooLargeError(
                        f"an answer of {size} bytes is over the {MAX_BODY // _MIB} MiB limit"
                    )
                response.body = await conn.reader.readexactly(size) if size else b""
            else:
                response.body = await _read_to_end(conn.reader)
                conn.close()
                return response
        except _StaleError:
            raise
        except ConnectionLostError:
            conn.close()
            raise
        except (OSError, asyncio.IncompleteReadError, asyncio.LimitOverrunError,
                ValueError) as exc:  # fmt: skip
            conn.close()
            raise ConnectionLostError(str(exc) or type(exc).__name__) from exc
        except BaseException:  # cancelled mid-answer: the connection is in an unknown state
            conn.close()
            raise
        if headers.get("connection", "").lower() == "close":
            conn.close()
        else:
            self.release(conn)
        return response

    async def close(self) -> None:
        """Close every idle connection. Idempotent."""
        self._closed = True
        idle, self._idle = self._idle, []
        for conn in idle:
            conn.close()


class _StaleError(Exception):
    """The connection was closed before any byte of the answer."""


def _parse_head(head: bytes) -> tuple[int, dict[str, str]]:
    lines = head.decode("latin-1").split("\r\n")
    parts = lines[0].split(" ", 2)
    if len(parts) < 2 or not parts[0].startswith("HTTP/1."):
        raise ValueError(f"not an HTTP/1.1 answer: {lines[0][:80]!r}")
    headers: dict[str, str] = {}
    for line in lines[1:]:
        if line:
            name, _, value = line.partition(":")
            headers[name.strip().lower()] = value.strip()
    return int(parts[1]), headers


def _line_too_long() -> AnswerTooLargeError:
    return AnswerTooLargeError(f"a streamed line over the {MAX_LINE // _MIB} MiB limit")


async def _chunk_size(reader: asyncio.StreamReader) -> int:
    """The size a chunk declares, refused past :data:`MAX_CHUNK` before any of it is read."""
    line = await reader.readline()
    field = line.split(b";", 1)[0].strip()
    try:
        size = int(field, 16) if 0 < len(field) <= 16 else -1
    except ValueError:
        size = -1
    if size < 0:
        if not line:
            raise asyncio.IncompleteReadError(b"", None)
        raise ValueError(f"a chunk size that is not one: {field[:40]!r}")
    if size > MAX_CHUNK:
        raise AnswerTooLargeError(
            f"a chunk of {size} bytes is over the {MAX_CHUNK // _MIB} MiB limit"
        )
    return size


async def _chunk_end(reader: asyncio.StreamReader) -> None:
    if await reader.readexactly(2) != b"\r\n":
        raise ValueError("a chunk longer than it declared")


async def _read_chunked(reader: asyncio.StreamReader) -> bytes:
    """A chunked body, refused as soon as it would pass :data:`MAX_BODY`."""
    out = bytearray()
    while True:
        size = await _chunk_size(reader)
        if size == 0:
            await reader.readline()
            return bytes(out)
        if len(out) + size > MAX_BODY:
            raise AnswerTooLargeError(
                f"an answer over the {MAX_BODY // _MIB} MiB limit (a chunk of {size} bytes "
                f"after {len(out)})"
            )
        out += await reader.readexactly(size)
        await _chunk_end(reader)


async def _read_to_end(reader: asyncio.StreamReader) -> bytes:
    """A body that ends with the connection, refused as soon as it passes :data:`MAX_BODY`."""
    out = bytearray()
    while data := await reader.read(_READ):
        out += data
        if len(out) > MAX_BODY:
            raise AnswerTooLargeError(f"an answer over the {MAX_BODY // _MIB} MiB limit")
    return bytes(out)


async def _chunked_lines(reader: asyncio.StreamReader) -> AsyncIterator[bytes]:
    """The lines of a chunked stream, read a piece at a time: a line (or what has come of it)
    over :data:`MAX_LINE` ends the stream, however the chunks are declared."""
    pending = bytearray()
    while True:
        size = await _chunk_size(reader)
        if size == 0:
            await reader.readline()
            break
        while size:
            data = await reader.read(min(size, _READ))
            if not data:
                raise asyncio.IncompleteReadError(b"", size)
            size -= len(data)
            start = len(pending)
            pending += data
            cut = pending.rfind(b"\n", start)
            if cut >= 0:
                lines = pending[: cut + 1].split(b"\n")
                del pending[: cut + 1]
                for line in lines[:-1]:
                    if len(line) >= MAX_LINE:
                        raise _line_too_long()
                    yield bytes(line) + b"\n"
            if len(pending) >= MAX_LINE:
                raise _line_too_long()
        await _chunk_end(reader)
    if pending:
        yield bytes(pending)
