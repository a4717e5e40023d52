"""Streamable HTTP transport at ``/mcp`` (an ASGI endpoint served by :class:`airhttp.HttpServer`).

- The Host/Origin/token guards and the limits are airhttp's (:class:`airhttp.GuardedApp`, put
  around this endpoint by :func:`~aircore.transports.http_app.build_app`). Bodies over
  ``max_body`` bytes get 413, a body that is not ``application/json`` 415.
- POST answers JSON, or SSE when the client accepts only SSE or a ``tools/call`` may send
  messages before its answer (a ``progressToken``; legacy elicitation).
- Legacy era: ``initialize`` opens a session (``Mcp-Session-Id``, bounded by
  :class:`~aircore.transports.sessions.SessionTable`); later requests must carry it (400
  without, 404 unknown); DELETE ends it. 2026-07-28: stateless; headers are checked against
  the body; closing the POST cancels the call.
- The hot path, a stateless 2026-07-28 request answered with JSON, may skip ASGI: served by
  :class:`airhttp.HttpServer`, :meth:`McpEndpoint.fast` answers it from the request's scope
  and body in one write (the same checks, the same dispatcher call, the same answer).
"""

from __future__ import annotations

import asyncio
import functools
import logging
import uuid
from collections.abc import Awaitable, Coroutine, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from aircore.errors import (
    HEADER_MISMATCH,
    INVALID_PARAMS,
    INVALID_REQUEST,
    METHOD_NOT_FOUND,
    MISSING_REQUIRED_CLIENT_CAPABILITY,
    PARSE_ERROR,
    UNSUPPORTED_PROTOCOL_VERSION,
    AirError,
)
from aircore.protocol import modern
from aircore.protocol.framing import (
    KIND_REQUEST,
    cancelled_response,
    check,
    decode,
    encode,
    error_response,
    parse_error,
)
from aircore.protocol.legacy import HANDSHAKE_VERSIONS
from aircore.protocol.session import CURRENT_SENDER, Connection
from aircore.transports.sessions import DEFAULT_MAX_SESSIONS, SessionTable
from airhttp import DEFAULT_MAX_BODY, accepts, media_type
from airhttp.types import Answer, Receive, Scope, Send

if TYPE_CHECKING:
    from aircore.types import Served

__all__ = [
    "DEFAULT_HOST",
    "DEFAULT_MAX_BODY",
    "DEFAULT_PORT",
    "McpEndpoint",
]

logger = logging.getLogger(__name__)

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 3510
SESSION_HEADER = "mcp-session-id"

_JSON_HEADERS = ((b"content-type", b"application/json"),)

STATUS = {
    PARSE_ERROR: 400,
    INVALID_REQUEST: 400,
    INVALID_PARAMS: 400,
    HEADER_MISMATCH: 400,
    MISSING_REQUIRED_CLIENT_CAPABILITY: 400,
    UNSUPPORTED_PROTOCOL_VERSION: 400,
    METHOD_NOT_FOUND: 404,
}


class _DisconnectWatch:
    """Cancels the request's task when the client goes away, watching only once the call
    suspends: a call that completes in one step never pays for a watcher task."""

    __slots__ = ("fired", "receive", "task", "watcher")

    def __init__(self, task: asyncio.Task[Any], receive: Receive) -> None:
        self.task = task
        self.receive = receive
        self.fired = False
        self.watcher: asyncio.Task[Any] | None = None

    def start(self) -> None:
        self.watcher = asyncio.ensure_future(self.receive())
        self.watcher.add_done_callback(self._gone)

    def _gone(self, watcher: asyncio.Task[Any]) -> None:
        if not watcher.cancelled():
            self.fired = True
            self.task.cancel()

    def stop(self) -> None:
        if self.watcher is not None:
            self.watcher.remove_done_callback(self._gone)
            self.watcher.cancel()


async def _run_until_disconnect(
    coro: Awaitable[dict[str, Any] | None], receive: Receive
) -> dict[str, Any] | None:
    """Await ``coro`` in this task; a client disconnect cancels it (2026-07-28: closing the
    POST is the cancel signal) and yields ``None``."""
    me = asyncio.current_task()
    assert me is not None
    watch = _DisconnectWatch(me, receive)
    handle = me.get_loop().call_soon(watch.start)  # not get_running_loop(): a getpid() on 3.11
    try:
        result = await coro
    except asyncio.CancelledError:
        if watch.fired and me.uncancel() == 0:
            return None  # cancelled by the disconnect, not by a shutdown
        raise
    finally:
        handle.cancel()
        watch.stop()
    if watch.fired:  # the call swallowed the cancellation; the client is gone all the same
        me.uncancel()
        return None
    return result


def _cancel_unless_cancelled(task: asyncio.Task[Any], watcher: asyncio.Task[Any]) -> None:
    if not watcher.cancelled():
        task.cancel()


def _is_plain_request(message: Any) -> bool:
    """A frame shaped like a request (the dispatcher still checks it in full)."""
    return (
        type(message) is dict
        and message.get("jsonrpc") == "2.0"
        and type(message.get("method")) is str
        and type(message.get("id")) in (str, int)
        and type(message.get("params", {})) is dict
    )


def _status_of(response: Mapping[str, Any]) -> int:
    error = response.get("error")
    code = error.get("code") if isinstance(error, Mapping) else None
    return STATUS.get(code, 200) if isinstance(code, int) else 200


def _may_talk_first(method: str, params: Mapping[str, Any], is_modern: bool) -> bool:
    """Whether the answer to this request may be preceded by messages (so it needs SSE).

    Legacy ``tools/call`` and ``prompts/get`` may send progress, log messages and
    elicitation/sampling/roots requests;
    2026-07-28 calls send progress or logs only when asked (``progressToken`` / ``logLevel``)
    and turn server→client requests into ``input_required`` results.
    """
    if method == "subscriptions/listen":
        return True  # the answer is a long-lived notification stream
    if method not in ("tools/call", "prompts/get", "resources/read"):
        return False
    if not is_modern:
        return method in ("tools/call", "prompts/get")  # prompt handlers may ask too
    meta = params.get("_meta")
    return isinstance(meta, Mapping) and ("progressToken" in meta or modern.LOG_LEVEL_KEY in meta)


class McpEndpoint:
    """The ASGI endpoint serving ``/mcp`` for one :class:`~aircore.server.AirServer`.

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
        self.server = server
        self.max_body = max_body
        self.sessions = SessionTable(max_sessions=max_sessions)

    # ---- plumbing -----------------------------------------------------------------------
    async def _reply(
        self,
        send: Send,
        status: int,
        body: bytes | None = None,
        headers: Sequence[tuple[bytes, bytes]] = (),
    ) -> None:
        hdrs = list(headers)
        if body is not None:
            hdrs.append((b"content-type", b"application/json"))
        hdrs.append((b"content-length", str(len(body or b"")).encode()))
        await send({"type": "http.response.start", "status": status, "headers": hdrs})
        await send({"type": "http.response.body", "body": body or b""})

    async def _json(
        self,
        send: Send,
        message: dict[str, Any],
        status: int | None = None,
        headers: Sequence[tuple[bytes, bytes]] = (),
    ) -> None:
        await self._reply(send, status or _status_of(message), encode(message), headers)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        headers = {k.decode("latin-1"): v.decode("latin-1").strip() for k, v in scope["headers"]}
        method = scope["method"]
        if method == "POST":
            await self._post(headers, receive, send)
        elif method == "DELETE":
            await self._delete(headers, send)
        else:
            await self._reply(send, 405, None, [(b"allow", b"POST, DELETE")])

    async def _read_body(self, headers: Mapping[str, str], receive: Receive) -> bytes | None:
        length = headers.get("content-length")
        if (
            length is not None
            and length.isascii()
            and length.isdigit()
            and int(length) > self.max_body
        ):
            return None
        first = await receive()
        if first["type"] == "http.disconnect":
            return b""
        body: bytes = first.get("body", b"")
        if not first.get("more_body"):
            return None if len(body) > self.max_body else body  # the usual case: one message
        chunks = bytearray(body)
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                return b""
            chunks += message.get("body", b"")
            if len(chunks) > self.max_body:
                return None
            if not message.get("more_body"):
                return bytes(chunks)

    # ---- the fast path ------------------------------------------------------------------
    def fast(self, scope: Scope, body: bytes) -> Coroutine[Any, Any, Answer] | None:
        """The answer to a stateless 2026-07-28 request that gets JSON, or ``None`` for every
        other request (the ASGI endpoint answers those): an :data:`airhttp.FastHandler`.

        It takes exactly the requests :meth:`__call__` would answer with JSON from
        ``Dispatcher.handle`` and answers them the same way; closing the POST cancels the
        call (the server cancels the coroutine).
        """
        if scope["method"] != "POST" or len(body) > self.max_body:
            return None
        headers = {k.decode("latin-1"): v.decode("latin-1").strip() for k, v in scope["headers"]}
        if SESSION_HEADER in headers:
            return None
        accept = headers.get("accept")
        if (
            not accepts(accept, "application/json")
            or media_type(headers.get("content-type")) != "application/json"
        ):
            return None
        try:
            message = decode(body)
        except ValueError:
            return None
        if not _is_plain_request(message):
            return None
        method = message["method"]
        params = message.get("params") or {}
        if (
            method == "subscriptions/listen"
            or not modern.is_modern(method, params)
            or (accepts(accept, "text/event-stream") and _may_talk_first(method, params, True))
        ):
            return None
        return self._fast_answer(message, headers)

    async def _fast_answer(self, message: dict[str, Any], headers: dict[str, str]) -> Answer:
        response = await self.server.dispatcher.handle(
            message, Connection(transport="tcp"), headers=headers
        )
        if response is None:  # not reached: a well-formed request always has an answer
            return 202, (), b""
        return _status_of(response), _JSON_HEADERS, encode(response)

    # ---- DELETE -------------------------------------------------------------------------
    async def _delete(self, headers: Mapping[str, str], send: Send) -> None:
        sid = headers.get(SESSION_HEADER)
        conn = self.sessions.close(sid) if sid else None
        if conn is None:
            await self._json(send, error_response(None, INVALID_REQUEST, "Session not found"), 404)
            return
        conn.cancel_all()
        await self._reply(send, 200)

    # ---- POST ---------------------------------------------------------------------------
    async def _post(self, headers: dict[str, str], receive: Receive, send: Send) -> None:
        accept = headers.get("accept")
        accepts_json = accepts(accept, "application/json")
        accepts_sse = accepts(accept, "text/event-stream")
        body = await self._read_body(headers, receive)
        if body is None:
            await self._json(
                send,
                error_response(
                    None, INVALID_REQUEST, f"Request body larger than {self.max_body} bytes"
                ),
                413,
            )
            return
        if media_type(headers.get("content-type")) != "application/json":
            await self._json(
                send,
                error_response(
                    None, INVALID_REQUEST, "Unsupported Media Type: use application/json"
                ),
                415,
            )
            return
        if not (accepts_json or accepts_sse):
            await self._json(
                send,
                error_response(
                    None,
                    INVALID_REQUEST,
                    "Not Acceptable: accept application/json or text/event-stream",
                ),
                406,
            )
            return
        try:
            message = decode(body)
        except ValueError as exc:
            await self._json(send, parse_error(str(exc)))
            return
        sid = headers.get(SESSION_HEADER)
        if sid is None and _is_plain_request(message):
            # the hot path (a stateless request): the dispatcher's own check is the only one
            await self._request(
                message, headers, None, None, accepts_json, accepts_sse, receive, send
            )
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
                await self._json(send, response)
            else:
                await self._reply(send, 202)
            return
        session = self.sessions.use(sid) if sid else None
        await self._request(
            message, headers, session, sid, accepts_json, accepts_sse, receive, send
        )

    async def _request(
        self,
        message: dict[str, Any],
        headers: dict[str, str],
        session: Connection | None,
        sid: str | None,
        accepts_json: bool,
        accepts_sse: bool,
        receive: Receive,
        send: Send,
    ) -> None:
        method = message["method"]
        params = message.get("params") or {}
        extra: list[tuple[bytes, bytes]] = []
        is_modern = modern.is_modern(method, params)
        if not is_modern and headers.get("mcp-protocol-version") in modern.MODERN_VERSIONS:
            # the header names a 2026-07-28-era version but the body has no envelope: -32602
            # saying what is missing (it was "Unsupported MCP-Protocol-Version" for a version
            # this server speaks)
            try:
                modern.check_envelope(method, params, None)
            except AirError as exc:
                await self._json(send, error_response(message["id"], exc.code, exc.message), 400)
                return
        if is_modern:
            conn = Connection(transport="tcp")
            route_headers: dict[str, str] | None = headers
        elif method == "initialize":  # the session opens once the answer is a success
            new_sid = uuid.uuid4().hex
            conn = Connection(transport="tcp", session_id=new_sid)
            extra.append((b"mcp-session-id", new_sid.encode()))
            route_headers = None
        else:
            route_headers = None
            version = headers.get("mcp-protocol-version")
            if version is not None and version not in HANDSHAKE_VERSIONS:
                await self._json(
                    send,
                    error_response(
                        message["id"],
                        INVALID_REQUEST,
                        f"Unsupported MCP-Protocol-Version: {version}",
                    ),
                    400,
                )
                return
            if sid is None:
                await self._json(
                    send,
                    error_response(
                        message["id"],
                        INVALID_REQUEST,
                        "Bad Request: Mcp-Session-Id header is required",
                    ),
                    400,
                )
                return
            if session is None:
                await self._json(
                    send, error_response(message["id"], INVALID_REQUEST, "Session not found"), 404
                )
                return
            conn = session
        if method == "subscriptions/listen" and not accepts_sse:
            await self._json(
                send,
                error_response(
                    message["id"], INVALID_REQUEST, "subscriptions/listen needs text/event-stream"
                ),
                406,
            )
            return
        wants_stream = accepts_sse and (
            not accepts_json or _may_talk_first(method, params, is_modern)
        )
        if wants_stream:
            await self._stream(message, conn, route_headers, extra, receive, send)
        else:
            await self._answer_json(message, conn, route_headers, extra, receive, send)

    async def _run_watched(
        self,
        coro: Awaitable[dict[str, Any] | None],
        conn: Connection,
        msg_id: Any,
        receive: Receive,
        *,
        cancel_on_disconnect: bool,
    ) -> dict[str, Any] | None:
        """Run the call as a task (``notifications/cancelled`` finds it in ``conn.inflight``).

        2026-07-28: closing the POST is the cancel signal, so a disconnect cancels the call.
        Legacy: a disconnect is not a cancellation; the call runs to its end.
        """
        task: asyncio.Task[dict[str, Any] | None] = asyncio.ensure_future(coro)
        conn.inflight[msg_id] = task
        watcher: asyncio.Task[Any] | None = None
        if cancel_on_disconnect and not task.done():
            # after the body, receive() returns only when the client goes away: cancel then
            # (a done-callback, not asyncio.wait: this is the per-request hot path)
            watcher = asyncio.ensure_future(receive())
            watcher.add_done_callback(functools.partial(_cancel_unless_cancelled, task))
        try:
            return await task
        except asyncio.CancelledError:
            me = asyncio.current_task()
            if me is not None and me.cancelling():
                task.cancel()  # we are being cancelled (shutdown): take the call with us
                raise
            return None  # the call was cancelled (disconnect, notifications/cancelled)
        finally:
            if watcher is not None:
                watcher.cancel()
            if conn.inflight.get(msg_id) is task:
                del conn.inflight[msg_id]

    async def _answer_json(
        self,
        message: dict[str, Any],
        conn: Connection,
        headers: dict[str, str] | None,
        extra: list[tuple[bytes, bytes]],
        receive: Receive,
        send: Send,
    ) -> None:
        coro = self.server.dispatcher.handle(message, conn, headers=headers)
        if headers is not None:  # 2026-07-28: stateless, nothing else can reach this call
            response = await _run_until_disconnect(coro, receive)
        else:
            response = await self._run_watched(
                coro, conn, message["id"], receive, cancel_on_disconnect=False
            )
        if response is None:
            if headers is not None:
                return  # 2026-07-28: the client closed its POST; nobody is left to answer
            response = cancelled_response(message["id"])  # legacy: the POST is still open
        self._settle_initialize(message, conn, response, extra)
        await self._json(send, response, None, extra)

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
            extra[:] = [header for header in extra if header[0] != b"mcp-session-id"]
        else:
            self.sessions.open(sid, conn)

    async def _stream(
        self,
        message: dict[str, Any],
        conn: Connection,
        headers: dict[str, str] | None,
        extra: list[tuple[bytes, bytes]],
        receive: Receive,
        send: Send,
    ) -> None:
        started = False

        async def start() -> None:
            nonlocal started
            if not started:
                started = True
                hdrs = [
                    (b"content-type", b"text/event-stream"),
                    (b"cache-control", b"no-cache"),
                    *extra,
                ]
                await send({"type": "http.response.start", "status": 200, "headers": hdrs})

        async def event(msg: dict[str, Any]) -> None:
            await start()
            data = b"event: message\ndata: " + encode(msg) + b"\n\n"
            await send({"type": "http.response.body", "body": data, "more_body": True})

        # this request's messages go to its own stream, even when calls of one session overlap
        token = CURRENT_SENDER.set(event)
        try:
            coro = self.server.dispatcher.handle(message, conn, headers=headers)
            response = await self._run_watched(
                coro, conn, message["id"], receive, cancel_on_disconnect=headers is not None
            )
        finally:
            CURRENT_SENDER.reset(token)
        if response is None and headers is None:  # legacy: the stream waits for its answer
            response = cancelled_response(message["id"])
        if response is None:
            if started:
                await send({"type": "http.response.body", "body": b""})
            return
        self._settle_initialize(message, conn, response, extra)
        if not started and _status_of(response) != 200:
            await self._json(send, response, None, extra)
            return
        await event(response)
        await send({"type": "http.response.body", "body": b""})
