"""Streamable HTTP wiring: the ASGI app around :class:`McpEndpoint` (``/mcp``, ``/`` and,
for a metered server, ``/metrics``) behind airhttp's guard, served by :class:`airhttp.HttpServer`
(whose raw-request hook takes the stateless JSON calls, :meth:`HttpApp.fast`).

The app routes by path itself (no framework router or middleware stack on the request path);
every route is behind the same :class:`airhttp.GuardedApp` (Host, Origin, token, body limit,
in-flight cap).
"""

from __future__ import annotations

import asyncio
import logging
import sys
from collections.abc import Callable, Coroutine, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

import orjson

from aircore.errors import DefinitionError
from aircore.protocol.scoped import OPEN_HTTP
from aircore.transports.http import DEFAULT_HOST, DEFAULT_PORT, McpEndpoint
from aircore.transports.options import check_options
from aircore.transports.sse import SseEndpoint
from airhttp import (
    DEFAULT_MAX_BODY,
    AccessPolicy,
    AuthConfig,
    GuardedApp,
    Limits,
    is_loopback,
    json_refusal,
    on_stop_signals,
)
from airhttp.protect import guard_app, guarded_fast, oauth_of
from airhttp.server import HttpServer, listen_socket
from airhttp.types import Answer, ASGIApp, Receive, Scope, Send

if TYPE_CHECKING:
    from aircore.types import Served

__all__ = ["SSE_PATH", "HttpApp", "HttpTransport", "SseTransport", "build_app", "serve_http"]

logger = logging.getLogger(__name__)

SSE_PATH = "/sse"
"""Where the legacy HTTP+SSE transport opens its event streams."""


def _metrics_app(server: Served, policy: AccessPolicy) -> ASGIApp | None:
    """The ``/metrics`` ASGI app of a metered server (Prometheus text), or ``None``."""
    if server.meter is None:
        return None
    from airmeter.metrics_app import server_metrics_app  # only for a metered server

    return server_metrics_app(
        server,
        token=policy.token,
        check_host=policy.check_host,
        allowed_hosts=policy.allowed_hosts,
        allowed_origins=policy.allowed_origins,
    )


async def _plain(send: Send, status: int, body: bytes, content_type: bytes) -> None:
    headers = [(b"content-type", content_type), (b"content-length", str(len(body)).encode())]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


class HttpApp:
    """The routes of one server's HTTP surface; wrap it in :class:`airhttp.GuardedApp`.

    Attributes:
        mcp: the :class:`McpEndpoint` at ``path``.
        metrics: the ``/metrics`` app of a metered server, else ``None``.
        open_http: served with neither OAuth nor a static token: each request is handled with
            :data:`~aircore.protocol.scoped.OPEN_HTTP` set, so no tool with ``required_scopes``
            (one added after start) is listed or runs.
    """

    def __init__(
        self,
        server: Served,
        mcp: McpEndpoint,
        *,
        path: str,
        metrics: ASGIApp | None,
        sse: SseEndpoint | None = None,
        open_http: bool = False,
    ) -> None:
        self.server = server
        self.open_http = open_http
        self.mcp = mcp
        self.path = path
        self.metrics = metrics
        self.sse = sse

    def fast(self, scope: Scope, body: bytes) -> Coroutine[Any, Any, Answer] | None:
        """The raw-request hook (:data:`airhttp.FastHandler`): the MCP endpoint's fast path
        (:meth:`McpEndpoint.fast`) at ``path``; ``None`` (the app answers) elsewhere."""
        if scope["path"] != self.path:
            return None
        if not self.open_http:
            return self.mcp.fast(scope, body)
        mark = OPEN_HTTP.set(True)
        try:  # the endpoint may read it while it decides
            answer = self.mcp.fast(scope, body)
        finally:
            OPEN_HTTP.reset(mark)
        return None if answer is None else _open(answer)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return  # lifespan is off; no websockets
        if self.open_http:
            mark = OPEN_HTTP.set(True)
            try:
                await self._route(scope, receive, send)
            finally:
                OPEN_HTTP.reset(mark)
        else:
            await self._route(scope, receive, send)

    async def _route(self, scope: Scope, receive: Receive, send: Send) -> None:
        path = scope["path"]
        if path == self.path:
            await self.mcp(scope, receive, send)
        elif self.sse is not None and path == SSE_PATH:
            await self.sse.stream(scope, receive, send)
        elif self.sse is not None and path == self.sse.messages_path:
            await self.sse.message(scope, receive, send)
        elif path == "/metrics" and self.metrics is not None:
            await self.metrics(scope, receive, send)
        elif path == "/":
            if scope["method"] not in ("GET", "HEAD"):
                await _plain(send, 405, b"method not allowed\n", b"text/plain; charset=utf-8")
                return
            status: dict[str, Any] = {
                "name": self.server.name,
                "version": self.server.version,
                "transport": "streamable-http" if self.sse is None else "sse",
                "endpoint": self.path,
                "tools": len(self.server.tools),
            }
            if self.sse is not None:
                status["sse"] = SSE_PATH
            await _plain(send, 200, orjson.dumps(status), b"application/json")
        else:
            await _plain(send, 404, b"not found\n", b"text/plain; charset=utf-8")


async def _open(answer: Coroutine[Any, Any, Answer]) -> Answer:
    mark = OPEN_HTTP.set(True)
    try:
        return await answer
    finally:
        OPEN_HTTP.reset(mark)


def with_tool_scopes(
    server: Served, auth: AuthConfig | None, *, token: str | None
) -> AuthConfig | None:
    """``auth`` with each tool's own ``required_scopes`` added to its per-tool scopes (as the
    tool's exact name: names hold no glob characters), so the OAuth guard answers ``403
    insufficient_scope`` for them before the body reaches the server, as for the configured
    globs. Tools added after the server starts are checked by ``tools/call`` itself (with no
    ``auth`` and no ``token`` such a tool is refused to everyone, :class:`HttpApp`), and so are
    the globs matching a tool's old names (its aliases are known once the server started).

    Raises:
        DefinitionError: a tool requires scopes but no ``auth`` is given and no ``token``
            either: refused rather than served to anyone (a static token holds every scope).
    """
    scoped = [(name, tool.required_scopes) for name, tool in server.tools.items()]
    scoped = [(name, scopes) for name, scopes in scoped if scopes]
    if not scoped:
        return auth
    if auth is None:
        if token is not None:
            return None  # the static token's holder may call every tool (documented)
        names = ", ".join(sorted(name for name, _ in scoped)[:5])
        raise DefinitionError(
            f"tool(s) {names} require OAuth scopes (required_scopes) but this HTTP server has "
            "no authorization: serve it with --auth-config FILE (OAuth), or --token (a static "
            "token holds every scope), or drop required_scopes"
        )
    return replace(auth, tools=auth.tools + tuple(scoped))


def build_app(
    server: Served,
    *,
    path: str = "/mcp",
    token: str | None = None,
    allowed_origins: Sequence[str] = (),
    max_body: int = DEFAULT_MAX_BODY,
    check_host: bool = True,
    allowed_hosts: Sequence[str] = (),
    limits: Limits | None = None,
    sse: bool = False,
    auth: AuthConfig | None = None,
) -> GuardedApp:
    """The guarded ASGI app: ``path`` (MCP), ``/`` (a small status JSON), with ``sse`` the
    legacy ``/sse`` + ``/messages`` endpoints, and for a server with a meter ``/metrics``
    (Prometheus text), all behind the same Host/Origin/token guard and limits.

    With ``check_host`` (the default, and always when bound to a loopback address) a request
    whose ``Host`` is not localhost / 127.0.0.1 / [::1] (or in ``allowed_hosts``) gets 421.

    The server must be started (``await server.start()``) before requests arrive; ``serve_http``
    does it.

    Returns:
        The :class:`airhttp.GuardedApp`; its ``app`` is the :class:`HttpApp`.

    Raises:
        airhttp.LimitsError: a token no client could send, or invalid limits.
        DefinitionError: a tool has ``required_scopes`` and neither ``auth`` nor ``token``
            is given (anyone reaching the port could call it).
    """
    limits = limits or Limits(max_body=max_body)
    auth = with_tool_scopes(server, auth, token=token)
    policy = AccessPolicy(
        token=token,  # with OAuth, guard_app hands it to the OAuth guard
        check_host=check_host,
        allowed_hosts=allowed_hosts,
        allowed_origins=allowed_origins,
    )
    endpoint = McpEndpoint(server, max_body=limits.max_body)
    legacy = SseEndpoint(server, max_body=limits.max_body) if sse else None
    metrics = _metrics_app(server, policy if auth is None else replace(policy, token=None))
    routes = HttpApp(
        server,
        endpoint,
        path=path,
        metrics=metrics,
        sse=legacy,
        open_http=auth is None and token is None,
    )
    return guard_app(routes, policy=policy, limits=limits, render=json_refusal, auth=auth)


async def serve_http(
    server: Served,
    *,
    host: str = DEFAULT_HOST,
    port: int = DEFAULT_PORT,
    path: str = "/mcp",
    token: str | None = None,
    allowed_origins: Sequence[str] = (),
    max_body: int | None = None,
    allowed_hosts: Sequence[str] = (),
    limits: Limits | None = None,
    ready: Callable[[str], None] | None = None,
    sse: bool = False,
    auth: AuthConfig | None = None,
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
        limits: the connection and request limits (airhttp's defaults when not given).
        ready: called with the endpoint URL once listening (default: log it to stderr).
        sse: also serve the legacy HTTP+SSE transport (``GET /sse`` + ``POST /messages``);
            the URL announced is then the ``/sse`` one.
        auth: act as an OAuth 2.1 resource server (:class:`airhttp.OAuthGuard`); ``token``
            is then accepted beside OAuth tokens.

    Raises:
        OSError: the address cannot be bound.
        airhttp.LimitsError: a token no client could send, or invalid limits.
    """
    limits = limits or Limits()
    if max_body is not None:
        limits = replace(limits, max_body=max_body)
    loopback = is_loopback(host)
    app = build_app(
        server,
        path=path,
        token=token,
        allowed_origins=allowed_origins,
        check_host=loopback or bool(allowed_hosts),
        allowed_hosts=allowed_hosts,
        limits=limits,
        sse=sse,
        auth=auth,
    )
    await server.start()
    try:
        sock = listen_socket(host, port)
    except OSError:  # e.g. the port is taken: undo the start; the message names the address
        await server.stop()
        raise
    bound = sock.getsockname()[1]
    oauth = oauth_of(app)
    routes = app.app if oauth is None else oauth.app
    fast = guarded_fast(app, routes.fast) if isinstance(routes, HttpApp) else None
    http = HttpServer(app, limits=limits, fast=fast)

    def _exit() -> None:
        http.stop()
        server.dispatcher.close()  # listen streams end now, not at the shutdown timeout

    uninstall = on_stop_signals(_exit)  # SIGTERM, Ctrl+C, Ctrl+Break
    shown = f"[{host}]" if ":" in host else host
    url = f"http://{shown}:{bound}{SSE_PATH if sse else path}"
    try:
        serving = asyncio.ensure_future(http.serve(sock))
        ready_wait = asyncio.ensure_future(http.ready.wait())
        await asyncio.wait({serving, ready_wait}, return_when=asyncio.FIRST_COMPLETED)
        ready_wait.cancel()
        if http.started:
            if ready is not None:
                ready(url)
            else:
                kind = "MCP (legacy HTTP+SSE)" if sse else "MCP"
                print(f"air: {server.name} serving {kind} on {url}", file=sys.stderr, flush=True)
        await serving
    finally:
        uninstall()
        if isinstance(routes, HttpApp):
            routes.mcp.sessions.close_all()
            if routes.sse is not None:
                routes.sse.close_all()
        server.dispatcher.close()
        sock.close()
        if oauth is not None:
            await oauth.verifier.close()
        await server.stop()


_LIMIT_OPTIONS = ("header_timeout", "idle_timeout", "max_connections", "max_inflight")


class HttpTransport:
    """The Streamable HTTP transport (:class:`aircore.types.Transport`).

    Options: ``host``, ``port``, ``path``, ``token``, ``allowed_origins``, ``allowed_hosts``,
    ``max_message`` (the body limit in bytes; also accepted as ``max_body``), ``limits`` (an
    :class:`airhttp.Limits`) or its fields one by one (``header_timeout``, ``idle_timeout``,
    ``max_connections``, ``max_inflight``), and ``ready`` (see :func:`serve_http`).
    """

    name = "http"
    legacy_sse = False
    options = frozenset(
        {
            "host",
            "port",
            "path",
            "token",
            "allowed_origins",
            "allowed_hosts",
            "max_message",
            "max_body",
            "limits",
            "ready",
            "auth",
            *_LIMIT_OPTIONS,
        }
    )

    async def serve(self, server: Served, **options: Any) -> None:
        """Serve ``server`` over Streamable HTTP (:func:`serve_http`).

        Raises:
            DefinitionError: an option this transport does not take.
            airhttp.LimitsError: a limit that cannot work.
        """
        check_options(self, options)
        max_message = options.pop("max_message", None)
        if max_message is not None:
            options["max_body"] = max_message
        fields = {name: options.pop(name) for name in _LIMIT_OPTIONS if name in options}
        if fields:
            options["limits"] = replace(options.get("limits") or Limits(), **fields)
        await serve_http(server, sse=self.legacy_sse, **options)


class SseTransport(HttpTransport):
    """The legacy HTTP+SSE transport (2024-11-05): ``GET /sse`` + ``POST /messages``, with
    the same guards and limits as Streamable HTTP (which it serves at ``/mcp`` too).

    Options: as :class:`HttpTransport`.
    """

    name = "sse"
    legacy_sse = True
