"""Serve the dashboard on a real WSGI server thread, loopback-only unless told otherwise.

Every request passes the Host/Origin guard of every air HTTP surface (:mod:`dashboard.guard`,
airhttp's rules: a DNS-rebinding request is refused) and the server's limits
(:mod:`dashboard.wsgi_server`: connection cap, header and idle deadlines, body cap). Binding a
non-loopback address needs ``allow_remote=True`` and a token; every request must then carry it
(``Authorization: Bearer T``, or ``?token=T`` once, which sets a cookie) or gets 401.
"""

from __future__ import annotations

import errno
import logging
import socket
import threading
from collections.abc import Sequence
from types import TracebackType
from typing import Self

from dash import Dash
from flask import Flask, Response, request

from airhttp import Limits, bearer_token, is_loopback, token_ok
from dashboard.app import DEFAULT_REFRESH_MS, create_app
from dashboard.callback_body import callback_body_problem, parse_callback_body
from dashboard.errors import DashboardError
from dashboard.guard import TOKEN_COOKIE, HostOriginGuard, RequestScreen, dashboard_policy
from dashboard.ranges import DEFAULT_RANGE
from dashboard.reader import SyncReader
from dashboard.wsgi_server import DASHBOARD_LIMITS, LimitedWSGIServer

__all__ = ["DEFAULT_HOST", "DEFAULT_PORT", "DashboardServer", "is_loopback"]

logger = logging.getLogger(__name__)

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8050
_COOKIE = TOKEN_COOKIE


def _install_token_check(server: Flask, token: str) -> None:
    def _ok(candidate: str | None) -> bool:
        return token_ok(candidate, token)

    @server.before_request
    def _check() -> Response | None:
        bearer = bearer_token(request.headers.get("Authorization"))
        if _ok(bearer) or _ok(request.cookies.get(_COOKIE)):
            return None
        if _ok(request.args.get("token")):
            request.environ["air.set_cookie"] = True
            return None
        return Response(
            "401 Unauthorized: this dashboard needs its token "
            "(Authorization: Bearer <token>, or open the URL with ?token=<token>)\n",
            status=401,
            mimetype="text/plain",
            headers={"WWW-Authenticate": 'Bearer realm="air dashboard"'},
        )

    @server.after_request
    def _remember(response: Response) -> Response:
        if request.environ.get("air.set_cookie"):
            response.set_cookie(_COOKIE, token, httponly=True, samesite="Strict")
        return response


def _install_callback_check(app: Dash) -> None:
    """Answer 400 to a callback request Dash cannot dispatch (it would raise: 500 and a
    traceback in the log for a client's mistake)."""
    route = f"{app.config.routes_pathname_prefix}_dash-update-component"
    server: Flask = app.server

    @server.before_request
    def _check() -> Response | None:
        if request.method != "POST" or request.path != route:
            return None
        if request.is_json:
            body, problem = parse_callback_body(request.get_data(cache=True))
            if problem is None:
                problem = callback_body_problem(body, app.callback_map)
        else:
            problem = "the body is not a JSON object"
        if problem is None:
            return None
        return Response(
            f"400 Bad Request: not a callback request ({problem})\n",
            status=400,
            mimetype="text/plain",
        )


class DashboardServer:
    """The dashboard app on a threaded WSGI server. Use as a context manager or start/stop.

    Args:
        reader: the data reader; closed by :meth:`stop`.
        store_url: shown in the page header.
        host: address to bind (loopback by default).
        port: port to bind; 0 picks a free one.
        allow_remote: must be True to bind a non-loopback address.
        token: required with ``allow_remote``; every request must carry it.
        refresh_ms: the page's live refresh interval.
        initial_range: the range selected when the page opens.
        allowed_hosts: extra ``Host`` names accepted besides localhost (``--allow-host``).
        allowed_origins: extra browser ``Origin`` values besides localhost and the page's own.
        limits: connection cap, header/idle timeouts and body cap
            (:data:`~dashboard.wsgi_server.DASHBOARD_LIMITS` by default).

    Raises:
        DashboardError: a non-loopback host without ``allow_remote`` and a token, or the port
            cannot be bound.
    """

    def __init__(
        self,
        reader: SyncReader,
        *,
        store_url: str,
        host: str = DEFAULT_HOST,
        port: int = DEFAULT_PORT,
        allow_remote: bool = False,
        token: str | None = None,
        refresh_ms: int = DEFAULT_REFRESH_MS,
        initial_range: str = DEFAULT_RANGE,
        allowed_hosts: Sequence[str] = (),
        allowed_origins: Sequence[str] = (),
        limits: Limits = DASHBOARD_LIMITS,
    ) -> None:
        if not is_loopback(host):
            if not allow_remote:
                raise DashboardError(
                    f"refusing to bind {host}: the dashboard binds loopback only unless "
                    "--allow-remote is given together with --token"
                )
            if not token:
                raise DashboardError(f"binding {host} with --allow-remote needs --token")
        self._reader = reader
        self.app = create_app(
            reader, store_url=store_url, refresh_ms=refresh_ms, initial_range=initial_range
        )
        if token:
            _install_token_check(self.app.server, token)
        _install_callback_check(self.app)
        flask_app = self.app.server
        flask_app.config["MAX_CONTENT_LENGTH"] = limits.max_body  # chunked bodies too (413)
        policy = dashboard_policy(
            host, allowed_hosts=allowed_hosts, allowed_origins=allowed_origins
        )  # refused before the token is looked at, as on /mcp
        guard = HostOriginGuard(flask_app.wsgi_app, policy=policy, max_body=limits.max_body)
        flask_app.wsgi_app = guard
        screen = RequestScreen(guard, token=token or None)  # at the head, before any body
        self._token = token
        logging.getLogger("werkzeug").setLevel(logging.WARNING)
        # Bind here so a busy port is a DashboardError (werkzeug would print and sys.exit).
        try:
            family = socket.AF_INET6 if ":" in host else socket.AF_INET
            listener = socket.create_server((host, port), family=family)
        except OSError as exc:
            reason = "the port is in use" if exc.errno == errno.EADDRINUSE else exc.strerror
            raise DashboardError(f"cannot listen on {host}:{port}: {reason}") from exc
        with listener:  # werkzeug works on a duplicate of this socket
            self._wsgi = LimitedWSGIServer(
                host, port, flask_app, fd=listener.fileno(), limits=limits, screen=screen.refusal
            )
        self.host = host
        self.port = int(self._wsgi.server_address[1])
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        """The address to open in a browser (with the token when one is set)."""
        shown = f"[{self.host}]" if ":" in self.host else self.host
        base = f"http://{shown}:{self.port}/"
        return f"{base}?token={self._token}" if self._token else base

    def start(self) -> Self:
        """Start serving on a background thread."""
        if self._thread is None:
            self._thread = threading.Thread(
                target=self._wsgi.serve_forever, name="air-dashboard-http", daemon=True
            )
            self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving, close the socket and the reader. Idempotent."""
        if self._thread is not None:
            self._wsgi.shutdown()
            self._thread.join(timeout=10)
            self._thread = None
        self._wsgi.server_close()
        self._reader.close()

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    def __repr__(self) -> str:
        return f"DashboardServer(url={self.url!r})"
