"""The legacy HTTP+SSE transport (MCP 2024-11-05): ``GET /sse`` + ``POST /messages``.

``GET /sse`` opens a session: an event stream whose first ``endpoint`` event names
``/messages?session_id=…``. The client POSTs each message there (202 Accepted); answers,
notifications and server→client requests travel on the stream as ``message`` events. Closing
the stream ends the session and cancels its calls.

Bounded: at most ``max_sessions`` streams; per session at most ``max_inflight`` calls (a POST
beyond gets 503) and ``max_queue`` events or ``max_queue_bytes`` bytes waiting for a slow
reader (past that the session is closed: a client that does not read its stream cannot grow
the server). The Host/Origin/token
guards and the body limit are airhttp's (the app is served behind :class:`airhttp.GuardedApp`).
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import uuid
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qs

from aircore.errors import INVALID_REQUEST
from aircore.protocol.framing import decode, encode, error_response, parse_error
from aircore.protocol.session import Connection
from aircore.transports.streamable import disconnected, read_body
from airhttp import DEFAULT_MAX_BODY, media_type
from airhttp.types import Receive, Scope, Send

if TYPE_CHECKING:
    from aircore.types import Served

__all__ = [
    "DEFAULT_MAX_QUEUE",
    "DEFAULT_MAX_QUEUE_BYTES",
    "DEFAULT_MAX_SSE_INFLIGHT",
    "DEFAULT_MAX_SSE_SESSIONS",
    "SseEndpoint",
]

logger = logging.getLogger(__name__)

DEFAULT_MAX_SSE_SESSIONS = 64
"""Open SSE streams at once; a new ``GET /sse`` beyond gets 503. A quarter of the default
in-flight cap: held streams alone cannot take every slot the sessions' calls need."""

DEFAULT_MAX_SSE_INFLIGHT = 32
"""Calls one SSE session may have running; a POST beyond gets 503."""

DEFAULT_MAX_QUEUE = 1024
"""Events one session may have waiting for its reader; beyond, the session is closed."""

DEFAULT_MAX_QUEUE_BYTES = 8 * 1024 * 1024
"""Bytes of events one session may have waiting for its reader; beyond, it is closed."""

_TEXT = b"text/plain; charset=utf-8"


async def _plain(send: Send, status: int, text: str, extra: list[tuple[bytes, bytes]]) -> None:
    body = text.encode() + b"\n"
    headers = [*extra, (b"content-type", _TEXT), (b"content-length", str(len(body)).encode())]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


def _forget(conn: Connection, msg_id: Any, task: asyncio.Task[None]) -> None:
    if conn.inflight.get(msg_id) is task:
        del conn.inflight[msg_id]


class _Session:
    """One SSE stream: its connection, its queue of events and its running calls."""

    def __init__(self, sid: str, max_queue: int, max_bytes: int) -> None:
        self.sid = sid
        self.queue: asyncio.Queue[bytes | None] = asyncio.Queue(maxsize=max_queue)
        self.max_bytes = max_bytes
        self.queued_bytes = 0
        self.conn = Connection(transport="tcp", sender=self.send, session_id=sid)
        self.tasks: set[asyncio.Task[None]] = set()
        self.closed = False

    async def send(self, message: dict[str, Any]) -> None:
        self.push(b"event: message\ndata: " + encode(message) + b"\n\n")

    def push(self, event: bytes) -> None:
        if self.closed:
            return
        try:
            if self.queued_bytes + len(event) > self.max_bytes and self.queued_bytes:
                raise asyncio.QueueFull
            self.queue.put_nowait(event)
            self.queued_bytes += len(event)
        except asyncio.QueueFull:
            logger.warning("SSE session %s does not read its stream: closing it", self.sid)
            self.close()

    def close(self) -> None:
        if self.closed:
            return
        self.closed = True
        self.conn.cancel_all()
        for task in list(self.tasks):
            task.cancel()
        with contextlib.suppress(asyncio.QueueFull):
            self.queue.put_nowait(None)  # wakes the stream writer
        if self.queue.full():  # no room for the wake-up: drop what waits, then wake it
            while not self.queue.empty():
                self.queue.get_nowait()
            self.queue.put_nowait(None)


class SseEndpoint:
    """The ASGI endpoint serving ``GET /sse`` and ``POST /messages`` for one server.

    Args:
        server: the server (started before requests arrive).
        messages_path: where clients POST (named in the ``endpoint`` event).
        max_body: the largest POST body in bytes (413 beyond).
        max_sessions: open streams at once.
        max_inflight: running calls per session.
        max_queue: events waiting per session.
        max_queue_bytes: bytes of events waiting per session.
    """

    def __init__(
        self,
        server: Served,
        *,
        messages_path: str = "/messages",
        max_body: int = DEFAULT_MAX_BODY,
        max_sessions: int = DEFAULT_MAX_SSE_SESSIONS,
        max_inflight: int = DEFAULT_MAX_SSE_INFLIGHT,
        max_queue: int = DEFAULT_MAX_QUEUE,
        max_queue_bytes: int = DEFAULT_MAX_QUEUE_BYTES,
    ) -> None:
        self.server = server
        self.messages_path = messages_path
        self.max_body = max_body
        self.max_sessions = max_sessions
        self.max_inflight = max_inflight
        self.max_queue = max_queue
        self.max_queue_bytes = max_queue_bytes
        self.sessions: dict[str, _Session] = {}

    def close_all(self) -> None:
        """End every session (shutdown)."""
        for session in list(self.sessions.values()):
            session.close()

    # ---- GET /sse -----------------------------------------------------------------------
    async def stream(self, scope: Scope, receive: Receive, send: Send) -> None:
        """``GET /sse``: open a session and stream its events until either side closes."""
        if scope["method"] != "GET":
            await _plain(send, 405, "method not allowed", [(b"allow", b"GET")])
            return
        if len(self.sessions) >= self.max_sessions:
            await _plain(send, 503, "too many SSE sessions", [(b"retry-after", b"1")])
            return
        sid = uuid.uuid4().hex
        session = _Session(sid, self.max_queue, self.max_queue_bytes)
        self.sessions[sid] = session
        headers = [
            (b"content-type", b"text/event-stream"),
            (b"cache-control", b"no-cache"),
            (b"x-accel-buffering", b"no"),
        ]
        endpoint = f"{self.messages_path}?session_id={sid}".encode()
        disconnect = asyncio.ensure_future(disconnected(receive))
        try:
            await send({"type": "http.response.start", "status": 200, "headers": headers})
            first = b"event: endpoint\ndata: " + endpoint + b"\n\n"
            await send({"type": "http.response.body", "body": first, "more_body": True})
            while True:
                getter = asyncio.ensure_future(session.queue.get())
                await asyncio.wait({getter, disconnect}, return_when=asyncio.FIRST_COMPLETED)
                if not getter.done():
                    getter.cancel()
                    break  # the client went away
                event = getter.result()
                if event is None:
                    break  # closed by us (shutdown, or a reader too slow)
                chunks = [event]
                while not session.queue.empty():  # coalesce what is already waiting
                    more = session.queue.get_nowait()
                    if more is None:
                        session.closed = True
                        break
                    chunks.append(more)
                session.queued_bytes -= sum(len(c) for c in chunks)
                await send(
                    {"type": "http.response.body", "body": b"".join(chunks), "more_body": True}
                )
                if session.closed:
                    break
        finally:
            disconnect.cancel()
            self.sessions.pop(sid, None)
            session.close()
        with contextlib.suppress(OSError):
            await send({"type": "http.response.body", "body": b""})

    # ---- POST /messages -----------------------------------------------------------------
    async def message(self, scope: Scope, receive: Receive, send: Send) -> None:
        """``POST /messages?session_id=…``: accept one message for a session (202)."""
        if scope["method"] != "POST":
            await _plain(send, 405, "method not allowed", [(b"allow", b"POST")])
            return
        query = parse_qs(scope.get("query_string", b"").decode("latin-1"))
        sid = (query.get("session_id") or query.get("sessionId") or [""])[0]
        if not sid:
            await _plain(send, 400, "session_id is required", [])
            return
        session = self.sessions.get(sid)
        if session is None or session.closed:
            await _plain(send, 404, "Could not find session", [])
            return
        ctype = next((v for k, v in scope["headers"] if k == b"content-type"), b"")
        if media_type(ctype.decode("latin-1")) != "application/json":
            await _plain(send, 415, "Unsupported Media Type: use application/json", [])
            return
        body = await read_body({}, receive, self.max_body)
        if body is None:
            await _plain(send, 413, f"request body larger than {self.max_body} bytes", [])
            return
        try:
            message = decode(body)
        except ValueError as exc:
            await session.send(parse_error(str(exc)))
            await _plain(send, 400, "Could not parse message", [])
            return
        if len(session.tasks) >= self.max_inflight:
            await _plain(send, 503, "too many calls in flight", [(b"retry-after", b"1")])
            return
        msg_id = message.get("id") if type(message) is dict and "method" in message else None
        if type(msg_id) in (str, int) and msg_id in session.conn.inflight:
            await session.send(
                error_response(msg_id, INVALID_REQUEST, "Invalid Request: duplicate id in flight")
            )
            await _plain(send, 202, "Accepted", [])
            return
        task = asyncio.ensure_future(self._handle(session, message))
        session.tasks.add(task)
        task.add_done_callback(session.tasks.discard)
        if type(msg_id) in (str, int):
            session.conn.inflight[msg_id] = task
            task.add_done_callback(functools.partial(_forget, session.conn, msg_id))
        await _plain(send, 202, "Accepted", [])

    async def _handle(self, session: _Session, message: Any) -> None:
        response = await self.server.dispatcher.handle(message, session.conn)
        if response is not None:
            await session.send(response)
