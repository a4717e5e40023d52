"""One request and its response on a connection: the ASGI ``receive`` and ``send`` an app is
called with. The whole answer of a plain response leaves in one write (head and body)."""

from __future__ import annotations

import asyncio
from collections.abc import Iterable
from typing import Any, Protocol

from airhttp.types import Message, Scope
from airhttp.wire import CONTINUE, encode_head

__all__ = ["HIGH_WATER", "Exchange", "Owner"]

HIGH_WATER = 64 * 1024
"""Request body bytes buffered for an app that has not read them; past it the connection
stops reading until the app catches up. Also the most a connection reads and drops of a body
its app answered without reading, to stay open (beyond, it closes after the answer)."""

_NO_BODY = frozenset({204, 304})
_LAST_CHUNK = b"0\r\n\r\n"


class _ServerState(Protocol):
    """What an answer reads of the server (an :class:`airhttp.connection.Site`)."""

    @property
    def closing(self) -> bool:
        """The server is shutting down: no keep-alive."""

    @property
    def date(self) -> bytes:
        """The current ``date`` header line."""


class Owner(Protocol):
    """The connection an exchange belongs to (an :class:`airhttp.connection.Connection`),
    declared here so that this module does not import the connection that imports it."""

    @property
    def loop(self) -> asyncio.AbstractEventLoop: ...

    @property
    def site(self) -> _ServerState: ...

    @property
    def lost(self) -> bool:
        """The client went away."""

    @property
    def lingering(self) -> bool:
        """The connection is closing after an error answer."""

    @property
    def write_paused(self) -> bool:
        """The transport's buffer is past its high-water mark."""

    def write(self, data: bytes) -> None:
        """Write ``data`` unless the connection is gone or closing."""

    async def drain(self) -> None:
        """Wait until the client has read enough of what was written (or is gone)."""

    def can_discard(self, exchange: Exchange) -> bool:
        """Whether the unread rest of ``exchange``'s body is small enough to read and drop,
        keeping the connection open."""

    def body_taken(self) -> None:
        """The app took the buffered body: read on if reading paused for it."""

    def finished(self, exchange: Exchange) -> None:
        """The response to ``exchange`` is complete: close, or go on to the next request."""


def _chunk(body: bytes) -> bytes:
    return b"%x\r\n%b\r\n" % (len(body), body) if body else b""


class Exchange:
    """The state of one request/response: the body as it arrives, the answer as it leaves.

    Attributes:
        scope: the ASGI ``http`` scope.
        more: the request body has more to come (the parser has not finished the message).
        complete: the response is sent in full.
        gone: the client is gone (or the server is shutting a stream down): ``receive``
            answers ``http.disconnect``.
        held: waiting for the whole body before the server's fast handler sees it.
        fast: answered by the fast handler (cancelled, not told, when the client goes).
        task: the task running the app for this request.
    """

    __slots__ = (
        "buffered",
        "chunked",
        "chunks",
        "close",
        "complete",
        "conn",
        "continued",
        "delivered",
        "discarding",
        "fast",
        "gone",
        "head_only",
        "headers",
        "held",
        "http11",
        "keep_alive",
        "more",
        "received",
        "scope",
        "sent_head",
        "started",
        "status",
        "task",
        "waiters",
    )

    def __init__(
        self, conn: Owner, scope: Scope, *, keep_alive: bool, http11: bool, head_only: bool
    ) -> None:
        self.conn = conn
        self.scope = scope
        self.keep_alive = keep_alive
        self.http11 = http11
        self.head_only = head_only
        self.chunks: list[bytes] = []
        self.buffered = 0
        self.received = 0
        self.more = True
        self.discarding = False
        self.held = False
        self.fast = False
        self.delivered = False
        self.continued = False
        self.gone = False
        self.waiters: list[asyncio.Future[None]] | None = None
        self.started = False
        self.sent_head = False
        self.complete = False
        self.chunked = False
        self.close = False
        self.status = 0
        self.headers: Any = ()
        self.task: asyncio.Task[None] | None = None

    # ---- the request side ---------------------------------------------------------------
    def wake(self) -> None:
        """Wake every ``receive`` waiting for body bytes or the end of the exchange."""
        waiters = self.waiters
        if waiters:
            self.waiters = None
            for fut in waiters:
                if not fut.done():
                    fut.set_result(None)

    async def _wait(self) -> None:
        fut: asyncio.Future[None] = self.conn.loop.create_future()
        if self.waiters is None:
            self.waiters = [fut]
        else:
            self.waiters.append(fut)
        try:
            await fut
        finally:
            waiters = self.waiters
            if waiters is not None and fut in waiters:
                waiters.remove(fut)

    def _expect_continue(self) -> None:
        self.continued = True
        if not self.http11 or self.sent_head:
            return
        for name, value in self.scope["headers"]:
            if name == b"expect" and value.strip().lower() == b"100-continue":
                self.conn.write(CONTINUE)
                return

    async def receive(self) -> Message:
        """The next ASGI event: the body (``http.request``), then ``http.disconnect`` once
        the client is gone or the response is complete."""
        if self.delivered:
            while not (self.complete or self.gone):
                await self._wait()
            return {"type": "http.disconnect"}
        if not self.chunks and self.more:
            if not self.continued:
                self._expect_continue()
            while not self.chunks and self.more and not self.gone:
                await self._wait()
        if self.gone:
            return {"type": "http.disconnect"}
        chunks = self.chunks
        body = chunks[0] if len(chunks) == 1 else b"".join(chunks)
        if chunks:
            self.chunks = []
            self.buffered = 0
            self.conn.body_taken()
        more = self.more
        if not more:
            self.delivered = True
        return {"type": "http.request", "body": body, "more_body": more}

    # ---- the response side --------------------------------------------------------------
    def respond(self, status: int, headers: Iterable[tuple[bytes, bytes]], body: bytes) -> None:
        """Send a whole answer in one write (the fast handler's).

        Raises:
            airhttp.wire.HeadError: a response header with CR or LF.
            ValueError: an invalid status.
        """
        conn = self.conn
        self.started = True
        if not (conn.lost or conn.lingering):
            head = encode_head(
                status,
                headers,
                length=len(body),
                http11=self.http11,
                keep_alive=self.keep_alive and not conn.site.closing,
                date=conn.site.date,
            )
            self.status = status
            self.sent_head = True
            self.close = head.close
            bodyless = self.head_only or status < 200 or status in _NO_BODY
            conn.write(head.head if bodyless else head.head + body)
        self.complete = True
        conn.finished(self)

    async def send(self, message: Message) -> None:
        """Send one ASGI response event; the answer leaves with the first body message.

        Raises:
            RuntimeError: a message out of order (a second start, a body before the start,
                anything after the response is complete) or of an unknown type.
            airhttp.wire.HeadError: a response header with CR or LF.
        """
        kind = message["type"]
        if kind == "http.response.start":
            if self.started:
                raise RuntimeError("http.response.start sent twice")
            self.started = True
            self.status = message["status"]
            self.headers = message.get("headers", ())
            return
        if kind != "http.response.body":
            raise RuntimeError(f"unexpected ASGI message {kind!r}")
        if not self.started or self.complete:
            raise RuntimeError("http.response.body outside a started, incomplete response")
        body: bytes = message.get("body", b"")
        more: bool = message.get("more_body", False)
        conn = self.conn
        if conn.lost or conn.lingering:
            if not more:
                self.complete = True
                conn.finished(self)
            return
        status = self.status
        bodyless = self.head_only or status < 200 or status in _NO_BODY
        if not self.sent_head:
            head = encode_head(
                status,
                self.headers,
                length=None if more else len(body),
                http11=self.http11,
                keep_alive=self.keep_alive
                and not conn.site.closing
                and (not self.more or conn.can_discard(self)),
                date=conn.site.date,
            )
            self.sent_head = True
            self.chunked = head.chunked
            self.close = head.close
            if bodyless:
                data = head.head
            elif self.chunked:
                data = head.head + _chunk(body) + (b"" if more else _LAST_CHUNK)
            else:
                data = head.head + body
        elif bodyless:
            data = b""
        elif self.chunked:
            data = _chunk(body) + (b"" if more else _LAST_CHUNK)
        else:
            data = body
        if data:
            conn.write(data)
        if not more:
            self.complete = True
            conn.finished(self)
        elif conn.write_paused:
            await conn.drain()
