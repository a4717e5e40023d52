"""Streamable HTTP transport at ``/mcp``: the server's dispatcher behind the shared
:class:`~aircore.transports.streamable.StreamableEndpoint` (served by :class:`airhttp.HttpServer`).

- The Host/Origin/token guards and the limits are airhttp's (:class:`airhttp.GuardedApp`, put
  around this endpoint by :func:`~aircore.transports.http_app.build_app`); the body limit
  (413), media types (415/406), parse errors, SSE and the fast path are the shared endpoint's.
- POST answers JSON, or SSE when the client accepts only SSE or a ``tools/call`` may send
  messages before its answer (a ``progressToken``; legacy elicitation).
- Legacy era: ``initialize`` opens a session (``Mcp-Session-Id``, bounded by
  :class:`~aircore.transports.sessions.SessionTable`); later requests must carry it (400
  without, 404 unknown); DELETE ends it. 2026-07-28: stateless; headers are checked against
  the body; closing the POST cancels the call.
- The hot path, a stateless 2026-07-28 request answered with JSON, may skip ASGI
  (:meth:`StreamableEndpoint.fast`): :meth:`ServerHandler.fast` answers it with the same
  dispatcher call.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Coroutine, Mapping
from typing import TYPE_CHECKING, Any

from aircore.errors import INVALID_REQUEST, AirError
from aircore.protocol import modern
from aircore.protocol.framing import (
    KIND_REQUEST,
    cancelled_response,
    check,
    encode,
    error_response,
)
from aircore.protocol.legacy import HANDSHAKE_VERSIONS
from aircore.protocol.session import CURRENT_SENDER, Connection
from aircore.transports.sessions import DEFAULT_MAX_SESSIONS, SessionTable
from aircore.transports.streamable import (
    JSON_HEADERS,
    SESSION_HEADER,
    HttpRequest,
    SseResponse,
    StreamableEndpoint,
    answer,
    is_plain_request,
    may_talk_first,
    reply,
    reply_json,
    run_until_disconnect,
    status_of,
    watch,
)
from airhttp import DEFAULT_MAX_BODY
from airhttp.types import Answer

if TYPE_CHECKING:
    from aircore.types import Served

__all__ = [
    "DEFAULT_HOST",
    "DEFAULT_MAX_BODY",
    "DEFAULT_PORT",
    "McpEndpoint",
    "ServerHandler",
]

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 3510


class ServerHandler:
    """The server's side of ``/mcp``: a :class:`~aircore.transports.streamable.StreamableHandler`
    over the server's dispatcher, with the legacy era's sessions.

    Args:
        server: the server (started before requests arrive).
        max_sessions: legacy sessions kept at once.
    """

    allow = b"POST, DELETE"

    def __init__(self, server: Served, *, max_sessions: int = DEFAULT_MAX_SESSIONS) -> None:
        self.server = server
        self.sessions = SessionTable(max_sessions=max_sessions)

    def admit(self, method: str, headers: Mapping[str, str]) -> None:
        """Everyone (the token guard, when set, is airhttp's, around the endpoint)."""
        return

    async def get(self, request: HttpRequest[None]) -> None:
        await reply(request.send, 405, None, [(b"allow", self.allow)])

    # ---- the fast path ------------------------------------------------------------------
    def fast(
        self, message: dict[str, Any], body: bytes, headers: dict[str, str], identity: None
    ) -> Coroutine[Any, Any, Answer] | None:
        """Answer with ``Dispatcher.handle``, as :meth:`post` would with JSON."""
        return self._fast_answer(message, headers)

    async def _fast_answer(self, message: dict[str, Any], headers: dict[str, str]) -> Answer:
        response = await self.server.dispatcher.handle(
            message, Connection(transport="tcp"), headers=headers
        )
        if response is None:  # not reached: a well-formed request always has an answer
            return 202, (), b""
        return status_of(response), JSON_HEADERS, encode(response)

    # ---- DELETE -------------------------------------------------------------------------
    async def delete(self, request: HttpRequest[None]) -> None:
        sid = request.headers.get(SESSION_HEADER)
        conn = self.sessions.close(sid) if sid else None
        if conn is None:
            body = error_response(None, INVALID_REQUEST, "Session not found")
            await reply_json(request.send, body, 404)
            return
        conn.cancel_all()
        await reply(request.send, 200)

    # ---- POST ---------------------------------------------------------------------------
    async def post(self, message: Any, request: HttpRequest[None]) -> None:
        sid = request.headers.get(SESSION_HEADER)
        if sid is None and is_plain_request(message):
            # the hot path (a stateless request): the dispatcher's own check is the only one
            await self._request(message, request, None, None)
            return
        kind, _error = check(message)
        if kind != KIND_REQUEST:
            # malformed frames get their error; notifications and client responses reach the
            # dispatcher through their session (a throwaway connection without one)
            session = self.sessions.peek(sid) if sid else None
            response = await self.server.dispatcher.handle(
                message, session or Connection(transport="tcp")
            )
            if response is not None:
                await reply_json(request.send, response)
            else:
                await reply(request.send, 202)
            return
        session = self.sessions.use(sid) if sid else None
        await self._request(message, request, session, sid)

    async def _request(
        self,
        message: dict[str, Any],
        request: HttpRequest[None],
        session: Connection | None,
        sid: str | None,
    ) -> None:
        method = message["method"]
        params = message.get("params") or {}
        headers, send = request.headers, request.send
        extra: list[tuple[bytes, bytes]] = []
        is_modern = modern.is_modern(method, params)
        if not is_modern and headers.get("mcp-protocol-version") in modern.MODERN_VERSIONS:
            # the header names a 2026-07-28-era version but the body has no envelope: -32602
            # saying what is missing (it was "Unsupported MCP-Protocol-Version" for a version
            # this server speaks)
            try:
                modern.check_envelope(method, params, None)
            except AirError as exc:
                await reply_json(send, error_response(message["id"], exc.code, exc.message), 400)
                return
        if is_modern:
            conn = Connection(transport="tcp")
            route_headers: dict[str, str] | None = headers
        elif method == "initialize":  # the session opens once the answer is a success
            new_sid = uuid.uuid4().hex
            conn = Connection(transport="tcp", session_id=new_sid)
            extra.append((SESSION_HEADER.encode(), new_sid.encode()))
            route_headers = None
        else:
            route_headers = None
            version = headers.get("mcp-protocol-version")
            refusal = None
            if version is not None and version not in HANDSHAKE_VERSIONS:
                refusal = 400, f"Unsupported MCP-Protocol-Version: {version}"
            elif sid is None:
                refusal = 400, "Bad Request: Mcp-Session-Id header is required"
            elif session is None:
                refusal = 404, "Session not found"
            if refusal is not None or session is None:
                status, text = refusal or (404, "Session not found")
                await reply_json(send, error_response(message["id"], INVALID_REQUEST, text), status)
                return
            conn = session
        if method == "subscriptions/listen" and not request.accepts_sse:
            text = "subscriptions/listen needs text/event-stream"
            await reply_json(send, error_response(message["id"], INVALID_REQUEST, text), 406)
            return
        wants_stream = request.accepts_sse and (
            not request.accepts_json or may_talk_first(method, params, is_modern)
        )
        if wants_stream:
            await self._stream(message, conn, route_headers, extra, request)
        else:
            await self._answer_json(message, conn, route_headers, extra, request)

    async def _run_watched(
        self,
        message: dict[str, Any],
        conn: Connection,
        headers: dict[str, str] | None,
        request: HttpRequest[None],
    ) -> dict[str, Any] | None:
        """Run the call as a task (``notifications/cancelled`` finds it in ``conn.inflight``);
        2026-07-28 (``headers`` given): closing the POST cancels it."""
        msg_id = message["id"]
        coro = self.server.dispatcher.handle(message, conn, headers=headers)
        task: asyncio.Task[dict[str, Any] | None] = asyncio.ensure_future(coro)
        conn.inflight[msg_id] = task
        try:
            return await watch(task, request.receive, cancel_on_disconnect=headers is not None)
        finally:
            if conn.inflight.get(msg_id) is task:
                del conn.inflight[msg_id]

    async def _answer_json(
        self,
        message: dict[str, Any],
        conn: Connection,
        headers: dict[str, str] | None,
        extra: list[tuple[bytes, bytes]],
        request: HttpRequest[None],
    ) -> None:
        if headers is not None:  # 2026-07-28: stateless, nothing else can reach this call
            coro = self.server.dispatcher.handle(message, conn, headers=headers)
            response = await run_until_disconnect(coro, request.receive)
            if response is None:
                return  # 2026-07-28: the client closed its POST; nobody is left to answer
        else:
            response = await self._run_watched(message, conn, None, request)
            if response is None:  # legacy: the POST is still open
                response = cancelled_response(message["id"])
        self._settle_initialize(message, conn, response, extra)
        await reply_json(request.send, response, None, extra)

    def _settle_initialize(
        self,
        message: dict[str, Any],
        conn: Connection,
        response: dict[str, Any],
        extra: list[tuple[bytes, bytes]],
    ) -> None:
        """Before an ``initialize`` answer goes out: a success opens its session (only then may
        the table make room for it, ending another); a refusal opens none and loses its
        ``Mcp-Session-Id`` header (``extra``, changed in place)."""
        sid = conn.session_id
        if message.get("method") != "initialize" or sid is None or sid in self.sessions:
            return
        if "error" in response:
            extra[:] = [header for header in extra if header[0] != SESSION_HEADER.encode()]
        else:
            self.sessions.open(sid, conn)

    async def _stream(
        self,
        message: dict[str, Any],
        conn: Connection,
        headers: dict[str, str] | None,
        extra: list[tuple[bytes, bytes]],
        request: HttpRequest[None],
    ) -> None:
        stream = SseResponse(request.send, extra)
        # this request's messages go to its own stream, even when calls of one session overlap
        token = CURRENT_SENDER.set(stream.event)
        try:
            response = await self._run_watched(message, conn, headers, request)
        finally:
            CURRENT_SENDER.reset(token)
        if response is None and headers is None:  # legacy: the stream waits for its answer
            response = cancelled_response(message["id"])
        if response is None:
            await stream.close()
            return
        self._settle_initialize(message, conn, response, extra)
        await answer(request.send, response, stream, extra)


class McpEndpoint(StreamableEndpoint[None]):
    """The ASGI endpoint serving ``/mcp`` for one server: the shared
    :class:`~aircore.transports.streamable.StreamableEndpoint` over a :class:`ServerHandler`.

    It checks no Host, Origin or token itself: serve it behind :class:`airhttp.GuardedApp`
    (as :func:`~aircore.transports.http_app.build_app` does).

    Args:
        server: the server (started before requests arrive).
        max_body: the largest request body in bytes (413 beyond).
        max_sessions: legacy sessions kept at once.
    """

    def __init__(
        self,
        server: Served,
        *,
        max_body: int = DEFAULT_MAX_BODY,
        max_sessions: int = DEFAULT_MAX_SESSIONS,
    ) -> None:
        self.server_handler = ServerHandler(server, max_sessions=max_sessions)
        super().__init__(self.server_handler, max_body=max_body)

    @property
    def sessions(self) -> SessionTable:
        """The legacy sessions."""
        return self.server_handler.sessions
