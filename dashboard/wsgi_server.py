"""A threaded WSGI server that bounds what a client can hold (werkzeug's, with airhttp limits).

- **Connections**: at most ``max_connections`` at once (each is one thread, so this also caps
  the requests in flight); one more is answered ``503`` with ``Retry-After`` and closed at once.
- **Header time**: a connection must deliver a request's line and headers within
  ``header_timeout`` seconds (its first request) or within ``idle_timeout + header_timeout``
  (the next ones, kept alive). One watchdog thread shuts a late connection down, so a client
  sending one header byte a second ("slowloris") is cut off however slowly it trickles.
- **Reads and writes**: every socket operation times out after ``header_timeout`` seconds.
"""

from __future__ import annotations

import contextlib
import logging
import socket
import threading
import time
from typing import Any

from werkzeug.serving import ThreadedWSGIServer, WSGIRequestHandler

from airhttp import Limits

__all__ = ["DASHBOARD_LIMITS", "LimitedWSGIServer"]

logger = logging.getLogger(__name__)

DASHBOARD_LIMITS = Limits(max_connections=64, max_inflight=64, max_body=1024 * 1024)
"""The dashboard's defaults: a local page needs few connections and small request bodies."""

_BUSY = (
    b"HTTP/1.1 503 Service Unavailable\r\nRetry-After: 1\r\nContent-Type: text/plain\r\n"
    b"Content-Length: 38\r\nConnection: close\r\n\r\ntoo many connections to the dashboard\n"
)
_WATCH_EVERY = 0.2


class _Deadlines:
    """One watchdog thread that shuts down sockets whose deadline passed."""

    def __init__(self) -> None:
        self._due: dict[socket.socket, float] = {}
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._watch, name="air-dashboard-deadlines")
        self._thread.daemon = True
        self._thread.start()

    def arm(self, sock: socket.socket, seconds: float) -> None:
        with self._lock:
            self._due[sock] = time.monotonic() + seconds

    def disarm(self, sock: socket.socket) -> None:
        with self._lock:
            self._due.pop(sock, None)

    def _watch(self) -> None:
        while not self._stop.wait(_WATCH_EVERY):
            now = time.monotonic()
            with self._lock:
                late = [s for s, due in self._due.items() if due <= now]
                for sock in late:
                    del self._due[sock]
            for sock in late:
                with contextlib.suppress(OSError):
                    sock.shutdown(socket.SHUT_RDWR)  # the handler's blocked read returns

    def close(self) -> None:
        self._stop.set()
        self._thread.join(timeout=5)


class _Handler(WSGIRequestHandler):
    """werkzeug's handler, under the server's deadlines."""

    protocol_version = "HTTP/1.1"  # keep-alive, as werkzeug does for threaded servers
    server: LimitedWSGIServer

    def setup(self) -> None:
        self._requests = 0
        super().setup()

    def handle_one_request(self) -> None:
        limits = self.server.limits
        wait = limits.header_timeout + (limits.idle_timeout if self._requests else 0.0)
        self.server.deadlines.arm(self.connection, wait)
        try:
            super().handle_one_request()
        finally:
            self.server.deadlines.disarm(self.connection)
            self._requests += 1

    def parse_request(self) -> bool:
        parsed = super().parse_request()  # the request line and every header are in
        self.server.deadlines.disarm(self.connection)
        return parsed

    def log_request(self, code: int | str = "-", size: int | str = "-") -> None:
        """Quiet: the dashboard logs nothing per request."""


class LimitedWSGIServer(ThreadedWSGIServer):
    """werkzeug's threaded server with a connection cap and deadlines (see the module).

    Args:
        host: the bound address (for werkzeug's bookkeeping).
        port: the bound port.
        app: the WSGI app.
        fd: the listening socket's file descriptor (bound by the caller).
        limits: the caps and timeouts.
    """

    def __init__(self, host: str, port: int, app: Any, *, fd: int, limits: Limits) -> None:
        self.limits = limits
        self._slots = threading.BoundedSemaphore(limits.max_connections)
        self.refused = 0
        """Connections answered 503 because the cap was reached."""
        # every socket operation of a connection times out (StreamRequestHandler.timeout)
        handler = type("_LimitedHandler", (_Handler,), {"timeout": limits.header_timeout})
        super().__init__(host, port, app, handler=handler, fd=fd)  # (calls server_close once)
        self.deadlines = _Deadlines()

    def process_request(self, request: Any, client_address: Any) -> None:
        if not self._slots.acquire(blocking=False):
            self.refused += 1
            with contextlib.suppress(OSError):
                request.setblocking(False)
                request.send(_BUSY)
            self.shutdown_request(request)
            return
        try:
            super().process_request(request, client_address)
        except BaseException:
            self._slots.release()
            raise

    def process_request_thread(self, request: Any, client_address: Any) -> None:
        try:
            super().process_request_thread(request, client_address)
        finally:
            self._slots.release()

    def server_close(self) -> None:
        super().server_close()
        deadlines: _Deadlines | None = getattr(self, "deadlines", None)
        if deadlines is not None:
            deadlines.close()
