"""Serving the gateway: a small ASGI app (``/mcp``, ``/status``) and the fast path
(the shared endpoint's, :mod:`airgateway.fast` behind it: the server's raw-request hook) on
:class:`airhttp.HttpServer`, stopped cleanly.

With an ``auth:`` section the gateway is an OAuth 2.1 resource server exactly as ``air serve
--auth-config`` is (the same :func:`airhttp.protect.guard_app`): protected resource metadata,
401/403 challenges, the fast path behind the same guard. The gateway's ``--token`` and the
``clients:`` static tokens are still accepted beside OAuth tokens.

Given the configuration file's path, the gateway reloads it on SIGHUP (or when it changes,
where there is no SIGHUP): :mod:`airgateway.reload`.

SIGTERM and SIGINT (Ctrl+C) stop accepting, let calls in flight finish (5 s at most), then
stop the gateway: health checks end, stdio children are stopped, metering is flushed.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Coroutine, Sequence
from typing import Any

from aircore.transports.streamable import RefusedError, reply, reply_json
from airgateway.endpoint import DEFAULT_MAX_BODY, GatewayEndpoint
from airgateway.gateway import Gateway
from airgateway.reload import ConfigReloader
from airhttp import AccessPolicy, Answer, GuardedApp, Limits, json_refusal, serve
from airhttp.guards import is_loopback
from airhttp.protect import guard_app, guarded_fast, oauth_of
from airhttp.types import Receive, Scope, Send

__all__ = ["DEFAULT_HOST", "DEFAULT_PORT", "build_gateway_app", "serve_gateway"]

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 4000
GRACE_S = 5


class _Routes:
    """``path`` (MCP) and ``GET /status``; the MCP endpoint's fast path at ``path``."""

    def __init__(self, gateway: Gateway, endpoint: GatewayEndpoint, path: str) -> None:
        self.gateway = gateway
        self.endpoint = endpoint
        self.path = path

    def fast(self, scope: Scope, body: bytes) -> Coroutine[Any, Any, Answer] | None:
        """The raw-request hook (:data:`airhttp.FastHandler`) at ``path``."""
        return self.endpoint.fast(scope, body) if scope["path"] == self.path else None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return
        where = scope["path"]
        if where == self.path:
            await self.endpoint(scope, receive, send)
        elif where == "/status":
            headers = {k.decode("latin-1"): v.decode("latin-1") for k, v in scope["headers"]}
            try:
                self.endpoint.gateway_handler.identify(headers)
            except RefusedError as refused:
                await reply_json(send, refused.response, refused.status, refused.headers)
                return
            if scope["method"] not in ("GET", "HEAD"):
                await reply(send, 405, None, [(b"allow", b"GET")])
                return
            await reply_json(send, self.gateway.status(), 200)
        else:
            await reply(send, 404)


def build_gateway_app(
    gateway: Gateway,
    *,
    path: str = "/mcp",
    allowed_origins: Sequence[str] = (),
    check_host: bool = True,
    allowed_hosts: Sequence[str] = (),
    max_body: int = DEFAULT_MAX_BODY,
    limits: Limits | None = None,
) -> GuardedApp:
    """The ASGI app: ``path`` (MCP) and ``GET /status`` (the upstreams, JSON), both behind
    ``airhttp.GuardedApp`` (Host 421, Origin 403, body 413, in-flight 503) and the gateway's
    bearer tokens (401); with the configuration's ``auth:``, behind an
    :class:`airhttp.OAuthGuard` too (the app's ``app``).

    Args:
        gateway: the gateway (started before requests arrive).
        path: the MCP endpoint path.
        allowed_origins: extra ``Origin`` values accepted besides localhost.
        check_host: refuse non-loopback ``Host`` names (DNS-rebinding protection).
        allowed_hosts: extra ``Host`` names accepted.
        max_body: the request body limit in bytes (when ``limits`` is not given).
        limits: the shared HTTP limits (``max_body``, ``max_inflight`` act here).

    Returns:
        The guarded ASGI app.
    """
    limits = limits or Limits(max_body=max_body)
    auth = gateway.config.auth
    access = gateway.access
    # without auth: the endpoint checks the tokens (they name clients); with it, the OAuth
    # guard admits them beside OAuth tokens and the endpoint still maps them to clients
    policy = AccessPolicy(token=access.token if auth is not None else None,
                          check_host=check_host, allowed_hosts=allowed_hosts,
                          allowed_origins=allowed_origins)  # fmt: skip
    statics = {c.token: c.name for c in access.clients if c.token is not None}
    routes = _Routes(gateway, GatewayEndpoint(gateway, max_body=limits.max_body), path)
    more = frozenset().union(*(s.scopes for s in gateway.config.servers))
    return guard_app(routes, policy=policy, limits=limits, render=json_refusal, auth=auth,
                     static_clients=statics, tool_scopes=gateway.upstream_scopes,
                     tools_scoped=gateway.has_tool_scopes, more_scopes=more)  # fmt: skip


async def serve_gateway(
    gateway: Gateway,
    *,
    host: str = DEFAULT_HOST,
    port: int = DEFAULT_PORT,
    path: str = "/mcp",
    allowed_origins: Sequence[str] = (),
    allowed_hosts: Sequence[str] = (),
    max_body: int = DEFAULT_MAX_BODY,
    limits: Limits | None = None,
    ready: Callable[[str], None] | None = None,
    config_path: str | None = None,
) -> None:
    """Start the gateway and serve it until SIGTERM/SIGINT (or cancellation), then stop it.

    Args:
        gateway: the gateway; started here, stopped on the way out.
        host: the bind address (127.0.0.1 by default).
        port: the port; 0 picks a free one.
        path: the MCP endpoint path.
        allowed_origins: extra ``Origin`` values accepted besides localhost.
        allowed_hosts: extra ``Host`` names accepted.
        max_body: the request body limit in bytes (when ``limits`` is not given).
        limits: the connection and request limits (airhttp's defaults otherwise).
        ready: called with the endpoint URL once listening (default: print it to stderr).
        config_path: the configuration file, reloaded on SIGHUP (or a change of the file,
            :class:`airgateway.reload.ConfigReloader`); ``None``: never reloaded.

    Raises:
        OSError: the address cannot be bound (the gateway is stopped again).
    """
    limits = limits or Limits(max_body=max_body)

    def listening(base: str) -> None:
        url = base + path
        gateway.listening(url)
        if ready is not None:
            ready(url)
        else:
            print(f"air: gateway serving MCP on {url}", file=sys.stderr, flush=True)

    await gateway.start()
    reloader = None if config_path is None else ConfigReloader(gateway, config_path)
    try:
        if reloader is not None:
            reloader.start()
        app = build_gateway_app(gateway, path=path, allowed_origins=allowed_origins,
                                check_host=is_loopback(host) or bool(allowed_hosts),
                                allowed_hosts=allowed_hosts, limits=limits)  # fmt: skip
        oauth = oauth_of(app)
        routes = app.app if oauth is None else oauth.app
        fast = guarded_fast(app, routes.fast) if isinstance(routes, _Routes) else None
        try:
            # until SIGTERM/SIGINT (or cancellation) stop it gracefully; a second signal: at once
            await serve(app, host=host, port=port, limits=limits, grace=GRACE_S, fast=fast,
                        ready=listening)  # fmt: skip
        finally:
            if oauth is not None:
                await oauth.verifier.close()
    finally:
        if reloader is not None:
            await reloader.stop()
        await gateway.stop()
