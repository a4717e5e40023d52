"""Streamable HTTP wiring: the Starlette app around :class:`McpEndpoint`, served by uvicorn."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
import socket
import sys
from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING, Any

import uvicorn
from starlette.applications import Starlette
from starlette.responses import JSONResponse
from starlette.routing import Route

from aircore.transports.http import DEFAULT_HOST, DEFAULT_MAX_BODY, DEFAULT_PORT, McpEndpoint
from airhttp.guards import is_loopback

if TYPE_CHECKING:
    from aircore.server import AirServer

__all__ = ["build_app", "serve_http"]

logger = logging.getLogger(__name__)


def _metrics_app(server: AirServer, **guards: Any) -> Any:
    """The ``/metrics`` ASGI app of a metered server (Prometheus text), or ``None``."""
    if server.meter is None:
        return None
    from airmeter.metrics_app import server_metrics_app  # only for a metered server

    return server_metrics_app(server, **guards)


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
    a meter, ``/metrics`` (Prometheus text, behind the same Host/Origin/token guards).

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
    metrics = _metrics_app(
        server,
        token=token,
        check_host=check_host,
        allowed_hosts=allowed_hosts,
        allowed_origins=allowed_origins,
    )
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
    loopback = is_loopback(host)
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
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
    except OSError as exc:  # e.g. the port is taken: undo the start, name the address
        sock.close()
        await server.stop()
        raise OSError(exc.errno, f"cannot listen on {host}:{port}: {exc.strerror}") from exc
    bound = sock.getsockname()[1]
    config = uvicorn.Config(
        app, log_level="warning", lifespan="off", access_log=False, timeout_graceful_shutdown=5
    )
    userver = _Server(config)
    loop = asyncio.get_running_loop()
    installed: list[signal.Signals] = []

    def _exit() -> None:
        userver.should_exit = True
        server.dispatcher.close()  # listen streams end now, not at the shutdown timeout

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
        server.dispatcher.close()
        sock.close()
        await server.stop()
