"""One Streamable HTTP endpoint (``/mcp``) in front of a message handler.

:class:`StreamableEndpoint` is the HTTP side every MCP server surface of this project shares:
the server's (:mod:`aircore.transports.http`, the dispatcher behind it) and the gateway's
(:mod:`airgateway.endpoint`, the router behind it). It owns, once:

- the per-request **admit** hook, which sees the headers before the body (the gateway's
  bearer-token client identification; authorization lands here) and refuses with
  :class:`RefusedError`;
- the POST preamble: the body limit (413), ``Content-Type`` (415), ``Accept`` (406) and the
  parse error (400, -32700);
- the status of a JSON-RPC answer (:func:`status_of`), JSON replies, the SSE writer
  (:class:`SseResponse`), the disconnect watch (2026-07-28: closing the POST cancels the call);
- the **fast path** (:meth:`StreamableEndpoint.fast`, an :data:`airhttp.FastHandler`): a
  stateless 2026-07-28 request that gets JSON is answered from the raw request in one write,
  after the same checks.

What a request means (sessions, eras, routing) is the handler's (:class:`StreamableHandler`).
Host, Origin and the in-flight cap are airhttp's (:class:`airhttp.GuardedApp`), around this.
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Awaitable, Coroutine, Mapping, Sequence
from typing import Any, Generic, Protocol, TypeVar

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
from aircore.protocol.framing import decode, encode, error_response, parse_error
from airhttp import DEFAULT_MAX_BODY, accepts, media_type
from airhttp.types import Answer, Receive, Scope, Send

__all__ = [
    "JSON_HEADERS",
    "SESSION_HEADER",
    "STATUS",
    "HttpRequest",
    "RefusedError",
    "SseResponse",
    "StreamableEndpoint",
    "StreamableHandler",
    "answer",
    "disconnected",
    "is_plain_request",
    "may_talk_first",
    "read_body",
    "reply",
    "reply_json",
    "run_until_disconnect",
    "status_of",
    "watch",
]

SESSION_HEADER = "mcp-session-id"
JSON_HEADERS = ((b"content-type", b"application/json"),)
_JSON = "application/json"
_SSE = "text/event-stream"

STATUS = {
    PARSE_ERROR: 400,
    INVALID_REQUEST: 400,
    INVALID_PARAMS: 400,
    HEADER_MISMATCH: 400,
    MISSING_REQUIRED_CLIENT_CAPABILITY: 400,
    UNSUPPORTED_PROTOCOL_VERSION: 400,
    METHOD_NOT_FOUND: 404,
}
"""The HTTP status of a JSON-RPC error code (the envelope's); every other answer is 200."""


def status_of(response: Mapping[str, Any]) -> int:
    """The HTTP status of a JSON-RPC response: 200, or 4xx for envelope errors (:data:`STATUS`);
    a tool's own errors stay 200."""
    error = response.get("error")
    code = error.get("code") if isinstance(error, Mapping) else None
    return STATUS.get(code, 200) if isinstance(code, int) else 200


def is_plain_request(message: Any) -> bool:
    """A frame shaped like a request (the handler still checks it in full)."""
    return (
        type(message) is dict
        and message.get("jsonrpc") == "2.0"
        and type(message.get("method")) is str
        and type(message.get("id")) in (str, int)
        and type(message.get("params", {})) is dict
    )


def may_talk_first(method: str, params: Mapping[str, Any], is_modern: bool) -> bool:
    """Whether the answer to this request may be preceded by messages (so it needs SSE).

    Legacy ``tools/call`` and ``prompts/get`` may send progress, log messages and
    elicitation/sampling/roots requests; 2026-07-28 calls send progress or logs only when asked
    (``progressToken`` / ``logLevel``) and turn server→client requests into
    ``input_required`` results; ``subscriptions/listen`` is a stream of notifications.
    """
    if method == "subscriptions/listen":
        return True  # the answer is a long-lived notification stream
    if method not in ("tools/call", "prompts/get", "resources/read"):
        return False
    if not is_modern:
        return method in ("tools/call", "prompts/get")  # prompt handlers may ask too
    meta = params.get("_meta")
    return isinstance(meta, Mapping) and ("progressToken" in meta or modern.LOG_LEVEL_KEY in meta)


# ---- replies ------------------------------------------------------------------------------
async def reply(
    send: Send, status: int, body: bytes | None = None, headers: Sequence[tuple[bytes, bytes]] = ()
) -> None:
    """A whole response (JSON when there is a body)."""
    hdrs = list(headers)
    if body is not None:
        hdrs.append((b"content-type", b"application/json"))
    hdrs.append((b"content-length", str(len(body or b"")).encode()))
    await send({"type": "http.response.start", "status": status, "headers": hdrs})
    await send({"type": "http.response.body", "body": body or b""})


async def reply_json(
    send: Send,
    message: dict[str, Any],
    status: int | None = None,
    headers: Sequence[tuple[bytes, bytes]] = (),
) -> None:
    """A JSON-RPC message as a JSON response (``status``: by :func:`status_of` when not given)."""
    await reply(send, status or status_of(message), encode(message), headers)


class SseResponse:
    """An SSE response (``200``, ``text/event-stream``) opened on its first event.

    ``extra`` headers are read when the stream opens (a list the caller may still change).
    """

    __slots__ = ("extra", "send", "started")

    def __init__(self, send: Send, extra: list[tuple[bytes, bytes]] | None = None) -> None:
        self.send = send
        self.extra = [] if extra is None else extra
        self.started = False

    async def open(self) -> None:
        """Send the head now (a notification stream says it is open before its first event)."""
        if not self.started:
            self.started = True
            hdrs = [(b"content-type", b"text/event-stream"), (b"cache-control", b"no-cache")]
            await self.send(
                {"type": "http.response.start", "status": 200, "headers": hdrs + self.extra}
            )

    async def event(self, message: dict[str, Any]) -> None:
        """Send one message as a ``message`` event."""
        await self.open()
        data = b"event: message\ndata: " + encode(message) + b"\n\n"
        await self.send({"type": "http.response.body", "body": data, "more_body": True})

    async def close(self) -> None:
        """End the stream (if it started)."""
        if self.started:
            await self.send({"type": "http.response.body", "body": b""})


async def answer(
    send: Send,
    response: dict[str, Any],
    stream: SseResponse | None,
    extra: Sequence[tuple[bytes, bytes]] = (),
) -> None:
    """Send the final answer of a request: the last event of its stream when one is open or
    the answer is a success, else a JSON response with its 4xx status."""
    if stream is not None and (stream.started or status_of(response) == 200):
        await stream.event(response)
        await stream.close()
        return
    await reply_json(send, response, None, extra)


# ---- bodies and disconnects ---------------------------------------------------------------
async def read_body(headers: Mapping[str, str], receive: Receive, limit: int) -> bytes | None:
    """The request body, or ``None`` when it is larger than ``limit`` bytes (``b""`` when the
    client went away)."""
    length = headers.get("content-length")
    if length is not None and length.isascii() and length.isdigit() and int(length) > limit:
        return None
    first = await receive()
    if first["type"] == "http.disconnect":
        return b""
    body: bytes = first.get("body", b"")
    if not first.get("more_body"):
        return None if len(body) > limit else body  # the usual case: one message
    chunks = bytearray(body)
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            return b""
        chunks += message.get("body", b"")
        if len(chunks) > limit:
            return None
        if not message.get("more_body"):
            return bytes(chunks)


async def disconnected(receive: Receive) -> None:
    """Return when the client goes away (the request's own body messages are skipped)."""
    while (await receive())["type"] != "http.disconnect":
        pass


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


async def run_until_disconnect(
    coro: Awaitable[dict[str, Any] | None], receive: Receive
) -> dict[str, Any] | None:
    """Await ``coro`` in this task; a client disconnect cancels it (2026-07-28: closing the
    POST is the cancel signal) and yields ``None``."""
    me = asyncio.current_task()
    assert me is not None
    watch_ = _DisconnectWatch(me, receive)
    handle = me.get_loop().call_soon(watch_.start)  # not get_running_loop(): a getpid() on 3.11
    try:
        result = await coro
    except asyncio.CancelledError:
        if watch_.fired and me.uncancel() == 0:
            return None  # cancelled by the disconnect, not by a shutdown
        raise
    finally:
        handle.cancel()
        watch_.stop()
    if watch_.fired:  # the call swallowed the cancellation; the client is gone all the same
        me.uncancel()
        return None
    return result


def _cancel_unless_cancelled(task: asyncio.Task[Any], watcher: asyncio.Task[Any]) -> None:
    if not watcher.cancelled():
        task.cancel()


async def watch(
    task: asyncio.Task[dict[str, Any] | None],
    receive: Receive,
    *,
    cancel_on_disconnect: bool,
) -> dict[str, Any] | None:
    """Wait for a call running as its own task (so ``notifications/cancelled`` can find it).

    2026-07-28: closing the POST is the cancel signal, so a disconnect cancels the call.
    Legacy: a disconnect is not a cancellation; the call runs to its end. ``None``: the call
    was cancelled (a disconnect, ``notifications/cancelled``).
    """
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
        return None
    finally:
        if watcher is not None:
            watcher.cancel()


# ---- the endpoint and its handler ---------------------------------------------------------
IdentityT = TypeVar("IdentityT")


class RefusedError(AirError):
    """An admit hook's refusal, answered with ``status`` and the JSON-RPC error (id ``null``).

    Args:
        status: the HTTP status (401, 403, 508…).
        code: the JSON-RPC error code.
        message: a readable one-line description.
        data: optional JSON ``error.data``.
        headers: extra response headers (``WWW-Authenticate``…).
    """

    def __init__(
        self,
        status: int,
        code: int,
        message: str,
        *,
        data: Any = None,
        headers: Sequence[tuple[bytes, bytes]] = (),
    ) -> None:
        super().__init__(code, message, data=data)
        self.status = status
        self.headers = list(headers)

    @property
    def response(self) -> dict[str, Any]:
        """The JSON-RPC error message."""
        return error_response(None, self.code, self.message, self.data)


class HttpRequest(Generic[IdentityT]):
    """One admitted request: its headers (lower-case names, trimmed values), who sent it (what
    the admit hook returned), and its ASGI channels. For a POST, what it accepts."""

    __slots__ = ("accepts_json", "accepts_sse", "headers", "identity", "receive", "send")

    def __init__(
        self,
        headers: dict[str, str],
        identity: IdentityT,
        receive: Receive,
        send: Send,
        *,
        accepts_json: bool = False,
        accepts_sse: bool = False,
    ) -> None:
        self.headers = headers
        self.identity = identity
        self.receive = receive
        self.send = send
        self.accepts_json = accepts_json
        self.accepts_sse = accepts_sse


class StreamableHandler(Protocol[IdentityT]):
    """What a :class:`StreamableEndpoint` hands its requests to (the server's dispatcher
    behind :class:`~aircore.transports.http.ServerHandler`, the gateway's router behind
    ``airgateway.endpoint.GatewayHandler``).
    """

    allow: bytes
    """The ``Allow`` header of a 405 (``b"POST, DELETE"``)."""

    def admit(self, method: str, headers: Mapping[str, str]) -> IdentityT:
        """Who sends this request, from its headers, before its body is read.

        Raises:
            RefusedError: the request is refused (answered with its status, nothing more is read).
        """

    async def post(self, message: Any, request: HttpRequest[IdentityT]) -> None:
        """Answer one decoded POST body (the preamble passed: size, media types, JSON)."""

    async def get(self, request: HttpRequest[IdentityT]) -> None:
        """Answer a GET (a legacy session's notification stream, or 405)."""

    async def delete(self, request: HttpRequest[IdentityT]) -> None:
        """Answer a DELETE (end a legacy session)."""

    def fast(
        self, message: dict[str, Any], body: bytes, headers: dict[str, str], identity: IdentityT
    ) -> Coroutine[Any, Any, Answer] | None:
        """The answer to a stateless 2026-07-28 request that gets JSON (see
        :meth:`StreamableEndpoint.fast`), or ``None`` to leave it to :meth:`post`."""


def _headers(scope: Scope) -> dict[str, str]:
    # values trimmed (RFC 9110 §5.5); names come lower-case from the server (ASGI)
    return {k.decode("latin-1"): v.decode("latin-1").strip() for k, v in scope["headers"]}


class StreamableEndpoint(Generic[IdentityT]):
    """The ASGI endpoint serving Streamable HTTP (``/mcp``) for one handler.

    It checks no Host or Origin itself: serve it behind :class:`airhttp.GuardedApp`.

    Args:
        handler: what the requests mean.
        max_body: the largest request body in bytes (413 beyond).
    """

    def __init__(
        self, handler: StreamableHandler[IdentityT], *, max_body: int = DEFAULT_MAX_BODY
    ) -> None:
        self.handler = handler
        self.max_body = max_body

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        headers = _headers(scope)
        method = scope["method"]
        try:
            identity = self.handler.admit(method, headers)
        except RefusedError as refused:
            await reply_json(send, refused.response, refused.status, refused.headers)
            return
        request = HttpRequest(headers, identity, receive, send)
        if method == "POST":
            await self._post(request)
        elif method == "GET":
            await self.handler.get(request)
        elif method == "DELETE":
            await self.handler.delete(request)
        else:
            await reply(send, 405, None, [(b"allow", self.handler.allow)])

    async def _post(self, request: HttpRequest[IdentityT]) -> None:
        headers, send = request.headers, request.send
        accept = headers.get("accept")  # media types, never substrings (RFC 9110 §12.5.1)
        request.accepts_json = accepts(accept, _JSON)
        request.accepts_sse = accepts(accept, _SSE)
        body = await read_body(headers, request.receive, self.max_body)
        if body is None:
            text = f"Request body larger than {self.max_body} bytes"
            await reply_json(send, error_response(None, INVALID_REQUEST, text), 413)
            return
        if media_type(headers.get("content-type")) != _JSON:
            text = "Unsupported Media Type: use application/json"
            await reply_json(send, error_response(None, INVALID_REQUEST, text), 415)
            return
        if not (request.accepts_json or request.accepts_sse):
            text = "Not Acceptable: accept application/json or text/event-stream"
            await reply_json(send, error_response(None, INVALID_REQUEST, text), 406)
            return
        try:
            message = decode(body)
        except ValueError as exc:
            await reply_json(send, parse_error(str(exc)), 400)
            return
        await self.handler.post(message, request)

    def fast(self, scope: Scope, body: bytes) -> Coroutine[Any, Any, Answer] | None:
        """The answer to a stateless 2026-07-28 request that gets JSON, or ``None`` for every
        other request (the ASGI endpoint answers those): an :data:`airhttp.FastHandler`.

        It takes only requests the ASGI endpoint would answer with JSON — admitted, no
        session, JSON in and accepted, a well-formed 2026-07-28 request that sends nothing
        before its answer — and the handler answers them the same way (its
        :meth:`StreamableHandler.fast`); closing the POST cancels the call (the server cancels
        the coroutine).
        """
        if scope["method"] != "POST" or len(body) > self.max_body:
            return None
        headers = _headers(scope)
        if SESSION_HEADER in headers:
            return None
        accept = headers.get("accept")
        if not accepts(accept, _JSON) or media_type(headers.get("content-type")) != _JSON:
            return None
        try:
            identity = self.handler.admit("POST", headers)
            message = decode(body)
        except (RefusedError, ValueError):
            return None  # the endpoint answers the refusal or the parse error
        if not is_plain_request(message):
            return None
        method = message["method"]
        params = message.get("params") or {}
        if (
            method == "subscriptions/listen"
            or not modern.is_modern(method, params)
            or (accepts(accept, _SSE) and may_talk_first(method, params, True))
        ):
            return None
        return self.handler.fast(message, body, headers, identity)
