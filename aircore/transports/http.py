"""Streamable HTTP transport at ``/mcp`` (uvicorn + starlette, an ASGI endpoint).

- Binds 127.0.0.1 by default. A request whose ``Origin`` is not localhost (or listed in
  ``allowed_origins``) gets 403. With ``token``, ``Authorization: Bearer <token>`` is required
  (401). Bodies over ``max_body`` bytes get 413.
- POST answers JSON, or SSE when the client accepts only SSE or a ``tools/call`` may send
  messages before its answer (a ``progressToken``; legacy elicitation).
- Legacy era: ``initialize`` opens a session (``Mcp-Session-Id``); later requests must carry it
  (400 without, 404 unknown); DELETE ends it. 2026-07-28: stateless; headers are checked against
  the body; closing the POST cancels the call.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib
import logging
import signal
import socket
import sys
import uuid
from collections.abc import Awaitable, Callable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

import uvicorn
from starlette.applications import Starlette
from starlette.responses import JSONResponse
from starlette.routing import Route

from aircore.errors import HEADER_MISMATCH, INVALID_PARAMS, INVALID_REQUEST, METHOD_NOT_FOUND
from aircore.protocol import modern
from aircore.protocol.framing import (
    KIND_NOTIFICATION,
    KIND_RESPONSE,
    check,
    decode,
    encode,
    error_response,
    parse_error,
)
from aircore.protocol.legacy import HANDSHAKE_VERSIONS
from aircore.protocol.session import Connection

if TYPE_CHECKING:
    from aircore.server import AirServer

__all__ = [
    "DEFAULT_HOST",
    "DEFAULT_MAX_BODY",
    "DEFAULT_PORT",
    "McpEndpoint",
    "build_app",
    "serve_http",
]

logger = logging.getLogger(__name__)

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 3510
DEFAULT_MAX_BODY = 4 * 1024 * 1024
SESSION_HEADER = "mcp-session-id"
LOCAL_HOSTS = frozenset({"localhost", "127.0.0.1", "::1", "[::1]"})

STATUS = {
    -32700: 400,
    INVALID_REQUEST: 400,
    INVALID_PARAMS: 400,
    HEADER_MISMATCH: 400,
    -32021: 400,
    -32022: 400,
    METHOD_NOT_FOUND: 404,
}

Send = Callable[[dict[str, Any]], Awaitable[None]]
Receive = Callable[[], Awaitable[dict[str, Any]]]


def _status_of(response: Mapping[str, Any]) -> int:
    error = response.get("error")
    code = error.get("code") if isinstance(error, Mapping) else None
    return STATUS.get(code, 200) if isinstance(code, int) else 200


class McpEndpoint:
    """The ASGI endpoint serving ``/mcp`` for one :class:`~aircore.server.AirServer`."""

    def __init__(
        self,
        server: AirServer,
        *,
        token: str | None = None,
        allowed_origins: Sequence[str] = (),
        max_body: int = DEFAULT_MAX_BODY,
        check_host: bool = True,
        allowed_hosts: Sequence[str] = (),
    ) -> None:
        self.server = server
        self.check_host = check_host
        self.allowed_hosts = frozenset(h.lower() for h in allowed_hosts)
        self.token = token
        self.allowed_origins = frozenset(o.rstrip("/") for o in allowed_origins)
        self.max_body = max_body
        self.sessions: dict[str, Connection] = {}

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

    def _origin_ok(self, origin: str | None) -> bool:
        if origin is None:
            return True
        if origin.rstrip("/") in self.allowed_origins or "*" in self.allowed_origins:
            return True
        try:
            host = urlsplit(origin).hostname
        except ValueError:
            return False
        return host is not None and host in LOCAL_HOSTS

    def _host_ok(self, host: str | None) -> bool:
        if not self.check_host:
            return True
        if host is None:
            return False
        if host.lower() in self.allowed_hosts:
            return True
        try:
            name = urlsplit(f"//{host}").hostname
        except ValueError:
            return False
        return name is not None and (name in LOCAL_HOSTS or name in self.allowed_hosts)

    async def __call__(self, scope: dict[str, Any], receive: Receive, send: Send) -> None:
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
        if not self._host_ok(headers.get("host")):
            # DNS rebinding: a loopback server only answers to loopback Host names
            await self._json(
                send,
                error_response(None, INVALID_REQUEST, "Misdirected Request: invalid Host header"),
                421,
            )
            return
        if not self._origin_ok(headers.get("origin")):
            await self._json(
                send, error_response(None, INVALID_REQUEST, "Forbidden: invalid Origin"), 403
            )
            return
        if self.token is not None and headers.get("authorization") != f"Bearer {self.token}":
            await self._json(
                send,
                error_response(None, INVALID_REQUEST, "Unauthorized"),
                401,
                [(b"www-authenticate", b"Bearer")],
            )
            return
        method = scope["method"]
        if method == "POST":
            await self._post(headers, receive, send)
        elif method == "DELETE":
            await self._delete(headers, send)
        else:
            await self._reply(send, 405, None, [(b"allow", b"POST, DELETE")])

    async def _read_body(self, headers: Mapping[str, str], receive: Receive) -> bytes | None:
        length = headers.get("content-length")
        if length is not None and length.isdigit() and int(length) > self.max_body:
            return None
        chunks = bytearray()
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                return b""
            chunks += message.get("body", b"")
            if len(chunks) > self.max_body:
                return None
            if not message.get("more_body"):
                return bytes(chunks)

    # ---- DELETE -------------------------------------------------------------------------
    async def _delete(self, headers: Mapping[str, str], send: Send) -> None:
        sid = headers.get(SESSION_HEADER)
        conn = self.sessions.pop(sid, None) if sid else None
        if conn is None:
            await self._json(send, error_response(None, INVALID_REQUEST, "Session not found"), 404)
            return
        conn.cancel_all()
        await self._reply(send, 200)

    # ---- POST ---------------------------------------------------------------------------
    async def _post(self, headers: dict[str, str], receive: Receive, send: Send) -> None:
        ctype = headers.get("content-type", "")
        accept = headers.get("accept", "*/*")
        accepts_json = "application/json" in accept or "*/*" in accept
        accepts_sse = "text/event-stream" in accept or "*/*" in accept
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
        if "application/json" not in ctype:
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
        kind, error = check(message)
        if error is not None:
            await self._json(send, error)
            return
        sid = headers.get(SESSION_HEADER)
        session = self.sessions.get(sid) if sid else None
        if kind in (KIND_RESPONSE, KIND_NOTIFICATION):
            if session is not None:
                if kind == KIND_RESPONSE:
                    session.resolve(message)
                else:
                    self.server.dispatcher._notification(message, session)
            await self._reply(send, 202)
            return
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
        is_modern = modern.is_modern_request(params) or method == "server/discover"
        if is_modern:
            conn = Connection(transport="tcp")
            route_headers: dict[str, str] | None = headers
        elif method == "initialize":
            new_sid = uuid.uuid4().hex
            conn = Connection(transport="tcp", session_id=new_sid)
            self.sessions[new_sid] = conn
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
        wants_stream = accepts_sse and (
            not accepts_json
            or (
                method == "tools/call"
                and (
                    (
                        isinstance(params.get("_meta"), Mapping)
                        and "progressToken" in params["_meta"]
                    )
                    or (not is_modern and "elicitation" in (conn.client_capabilities or {}))
                )
            )
        )
        if wants_stream:
            await self._stream(message, conn, route_headers, extra, receive, send)
        else:
            await self._answer_json(message, conn, route_headers, extra, receive, send)

    async def _run_watched(
        self, coro: Awaitable[dict[str, Any]], conn: Connection, msg_id: Any, receive: Receive
    ) -> dict[str, Any] | None:
        """Run the call; a client disconnect cancels it (the 2026-07-28 cancel signal)."""
        task: asyncio.Task[dict[str, Any]] = asyncio.ensure_future(coro)
        conn.inflight[msg_id] = task
        watcher = asyncio.ensure_future(receive())
        try:
            done, _ = await asyncio.wait({task, watcher}, return_when=asyncio.FIRST_COMPLETED)
            if task in done:
                return task.result()
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
            return None
        except asyncio.CancelledError:
            task.cancel()
            raise
        finally:
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
        coro = self.server.dispatcher.request(message, conn, headers=headers)
        try:
            response = await self._run_watched(coro, conn, message["id"], receive)
        except asyncio.CancelledError:
            raise
        if response is None:
            return  # cancelled: the spec says no answer
        await self._json(send, response, None, extra)

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

        conn.bind(event)
        try:
            coro = self.server.dispatcher.request(message, conn, headers=headers)
            response = await self._run_watched(coro, conn, message["id"], receive)
        finally:
            conn.bind(None)
        if response is None:
            if started:
                await send({"type": "http.response.body", "body": b""})
            return
        if not started and _status_of(response) != 200:
            await self._json(send, response, None, extra)
            return
        await event(response)
        await send({"type": "http.response.body", "body": b""})


METRICS_APP_FACTORY = "airmeter.metrics_app:server_metrics_app"
"""Loaded by name only for a server with a meter; aircore never imports airmeter itself."""


def _metrics_app(server: AirServer, token: str | None) -> Any:
    """The ``/metrics`` ASGI app of a metered server (Prometheus text), or ``None``."""
    if server.meter is None:
        return None
    module_name, _, attr = METRICS_APP_FACTORY.partition(":")
    try:
        factory = getattr(importlib.import_module(module_name), attr)
    except (ImportError, AttributeError):
        logger.warning("no /metrics: %s is not available", METRICS_APP_FACTORY)
        return None
    return factory(server, token=token)


def build_app(
    server: AirServer,
    *,
    path: str = "/mcp",
    token: str | None = None,
    allowed_origins: Sequence[str] = (),
    max_body: int = DEFAULT_MAX_BODY,
    check_host: bool = True,
    allowed_hosts: Sequence[str] = (),
) -> Starlette:
    """The Starlette app: ``path`` (MCP), ``/`` (a small status JSON) and, for a server with
    a meter, ``/metrics`` (Prometheus text; the bearer ``token`` applies there too).

    With ``check_host`` (the default, and always when bound to a loopback address) a request
    whose ``Host`` is not localhost / 127.0.0.1 / [::1] (or in ``allowed_hosts``) gets 421.

    The server must be started (``await server.start()``) before requests arrive; ``serve_http``
    does it.
    """
    endpoint = McpEndpoint(
        server,
        token=token,
        allowed_origins=allowed_origins,
        max_body=max_body,
        check_host=check_host,
        allowed_hosts=allowed_hosts,
    )

    async def status(_request: Any) -> JSONResponse:
        return JSONResponse(
            {
                "name": server.name,
                "version": server.version,
                "transport": "streamable-http",
                "endpoint": path,
                "tools": len(server.tools),
            }
        )

    routes = [
        Route(path, endpoint, methods=["GET", "POST", "DELETE"]),
        Route("/", status, methods=["GET"]),
    ]
    metrics = _metrics_app(server, token)
    if metrics is not None:
        routes.append(Route("/metrics", metrics, methods=["GET", "HEAD"]))
    app = Starlette(routes=routes)
    app.state.mcp = endpoint
    return app


class _Server(uvicorn.Server):
    def __init__(self, config: uvicorn.Config) -> None:
        super().__init__(config)
        self.ready = asyncio.Event()

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        await super().startup(sockets=sockets)
        self.ready.set()

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:  # we own SIGTERM/SIGINT (on_stop must run)
        yield


async def serve_http(
    server: AirServer,
    *,
    host: str = DEFAULT_HOST,
    port: int = DEFAULT_PORT,
    path: str = "/mcp",
    token: str | None = None,
    allowed_origins: Sequence[str] = (),
    max_body: int = DEFAULT_MAX_BODY,
    allowed_hosts: Sequence[str] = (),
    ready: Callable[[str], None] | None = None,
) -> None:
    """Serve Streamable HTTP until SIGTERM/SIGINT (or cancellation), then stop the server.

    Args:
        server: the server; started here, stopped on the way out.
        host: the bind address (127.0.0.1 by default; anything else exposes the server).
        port: the port; 0 picks a free one.
        path: the MCP endpoint path.
        token: require ``Authorization: Bearer <token>``.
        allowed_origins: extra ``Origin`` values to accept besides localhost.
        max_body: the request body limit in bytes.
        allowed_hosts: extra ``Host`` names to accept; bound to a loopback address, any other
            Host gets 421 (DNS-rebinding protection).
        ready: called with the endpoint URL once listening (default: log it to stderr).
    """
    await server.start()
    loopback = host in ("127.0.0.1", "localhost", "::1") or host.startswith("127.")
    app = build_app(
        server,
        path=path,
        token=token,
        allowed_origins=allowed_origins,
        max_body=max_body,
        check_host=loopback or bool(allowed_hosts),
        allowed_hosts=allowed_hosts,
    )
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    # proto=IPPROTO_TCP so asyncio sets TCP_NODELAY on accepted connections (no Nagle delay)
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, port))
    bound = sock.getsockname()[1]
    config = uvicorn.Config(
        app, log_level="warning", lifespan="off", access_log=False, timeout_graceful_shutdown=5
    )
    userver = _Server(config)
    loop = asyncio.get_running_loop()
    installed: list[signal.Signals] = []

    def _exit() -> None:
        userver.should_exit = True

    for sig in (signal.SIGTERM, signal.SIGINT):
        with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
            loop.add_signal_handler(sig, _exit)
            installed.append(sig)
    shown = f"[{host}]" if ":" in host else host
    url = f"http://{shown}:{bound}{path}"
    try:
        serving = asyncio.ensure_future(userver.serve(sockets=[sock]))
        ready_wait = asyncio.ensure_future(userver.ready.wait())
        await asyncio.wait({serving, ready_wait}, return_when=asyncio.FIRST_COMPLETED)
        ready_wait.cancel()
        if userver.started:
            if ready is not None:
                ready(url)
            else:
                print(f"air: {server.name} serving MCP on {url}", file=sys.stderr, flush=True)
        await serving
    finally:
        for sig in installed:
            loop.remove_signal_handler(sig)
        for conn in app.state.mcp.sessions.values():
            conn.cancel_all()
        sock.close()
        await server.stop()
