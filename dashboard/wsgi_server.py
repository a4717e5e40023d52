"""A threaded WSGI server that bounds what a client can hold (werkzeug's, with airhttp limits).

- **Connections**: at most ``max_connections`` at once (each is one thread, so this also caps
  the requests in flight). At the cap, the oldest connection that is not running the app (one
  waiting for its next request's first byte, kept alive or just opened, or one whose head or
  body is still arriving) is closed to make room; only when every one is running the app is the
  new one answered ``503`` with ``Retry-After`` and closed at once. Connections are never
  capped per peer.
- **Refused at the head**: with a ``screen`` (:class:`dashboard.guard.RequestScreen`), a
  request is checked (Host, Origin, declared length, token) as soon as its head is in, and a
  refused one is answered and closed before any of its body is read, so a client without the
  token holds a connection no longer than its head takes.
- **Idle time**: a connection whose first request does not start within ``header_timeout``
  seconds, or whose next one (kept alive) does not within ``idle_timeout``, is closed.
- **Request time**: a request's line, headers and body (declared or chunked) must all
  arrive within ``header_timeout`` seconds of its first byte (of the connection's opening, for
  its first request). One watchdog thread shuts down a connection whose head is late, so a
  client sending one header byte a second ("slowloris") is cut off however slowly it trickles;
  a late body is answered ``408`` and the connection closed. A chunked body is decoded and
  read in whole under the same deadline (up to one byte past the body cap: the app answers
  ``413``). A ``Content-Length`` that is not a decimal number, or a chunked body that is not
  chunked coding, is answered ``400``.
- **Reads and writes**: every socket operation times out after ``header_timeout`` seconds.
"""

from __future__ import annotations

import contextlib
import io
import logging
import select
import socket
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from http import HTTPStatus
from typing import Any, cast

from werkzeug.serving import ThreadedWSGIServer, WSGIRequestHandler

from airhttp import Limits, Refusal

__all__ = ["DASHBOARD_LIMITS", "LimitedWSGIServer", "Screen"]

Screen = Callable[[Mapping[str, Any]], Refusal | None]
"""Checks a request from its head alone (WSGI-style keys); a refusal is answered at once."""

logger = logging.getLogger(__name__)

DASHBOARD_LIMITS = Limits(max_connections=64, max_inflight=64, max_body=1024 * 1024)
"""The dashboard's defaults: a local page needs few connections and small request bodies."""

_BUSY = (
    b"HTTP/1.1 503 Service Unavailable\r\nRetry-After: 1\r\nContent-Type: text/plain\r\n"
    b"Content-Length: 38\r\nConnection: close\r\n\r\ntoo many connections to the dashboard\n"
)
_SLOW = (
    b"HTTP/1.1 408 Request Timeout\r\nContent-Type: text/plain\r\n"
    b"Content-Length: 17\r\nConnection: close\r\n\r\nrequest too slow\n"
)
_BAD_LENGTH = (
    b"HTTP/1.1 400 Bad Request\r\nContent-Type: text/plain\r\n"
    b"Content-Length: 19\r\nConnection: close\r\n\r\nbad Content-Length\n"
)
_BAD_CHUNK = (
    b"HTTP/1.1 400 Bad Request\r\nContent-Type: text/plain\r\n"
    b"Content-Length: 17\r\nConnection: close\r\n\r\nbad chunked body\n"
)
_HEAD_KEYS = {
    "host": "HTTP_HOST",
    "origin": "HTTP_ORIGIN",
    "authorization": "HTTP_AUTHORIZATION",
    "cookie": "HTTP_COOKIE",
    "content-length": "CONTENT_LENGTH",
}
_WATCH_EVERY = 0.2
_CHUNK = 64 * 1024


class _SlowBodyError(Exception):
    """A declared request body did not arrive before the request's deadline."""


class _BadLengthError(Exception):
    """A ``Content-Length`` that is not a decimal number."""


class _BadChunkError(_BadLengthError):
    """A chunked body that is not chunked coding (a bad chunk size or terminator)."""


def _refusal_bytes(refusal: Refusal) -> bytes:
    try:
        phrase = HTTPStatus(refusal.status).phrase
    except ValueError:
        phrase = "Refused"
    body = refusal.reason.encode() + b"\n"
    lines = [f"HTTP/1.1 {refusal.status} {phrase}"]
    lines += [f"{name}: {value}" for name, value in refusal.headers]
    lines += [
        "Content-Type: text/plain; charset=utf-8",
        f"Content-Length: {len(body)}",
        "Connection: close",
    ]
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + body


class _Deadlines:
    """One watchdog thread that shuts down sockets whose deadline passed."""

    def __init__(self) -> None:
        self._due: dict[socket.socket, tuple[float, int]] = {}
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._watch, name="air-dashboard-deadlines")
        self._thread.daemon = True
        self._thread.start()

    def arm(self, sock: socket.socket, seconds: float, how: int = socket.SHUT_RDWR) -> None:
        """Shut ``sock`` down (``how``: both ways, or only reading) in ``seconds``."""
        with self._lock:
            self._due[sock] = (time.monotonic() + seconds, how)

    def disarm(self, sock: socket.socket) -> None:
        with self._lock:
            self._due.pop(sock, None)

    def _watch(self) -> None:
        while not self._stop.wait(_WATCH_EVERY):
            now = time.monotonic()
            with self._lock:
                late = [(s, how) for s, (due, how) in self._due.items() if due <= now]
                for sock, _how in late:
                    del self._due[sock]
            for sock, how in late:
                with contextlib.suppress(OSError):
                    sock.shutdown(how)  # the handler's blocked read returns

    def close(self) -> None:
        self._stop.set()
        self._thread.join(timeout=5)


class _Handler(WSGIRequestHandler):
    """werkzeug's handler, under the server's deadlines."""

    protocol_version = "HTTP/1.1"  # keep-alive, as werkzeug does for threaded servers
    server: LimitedWSGIServer

    def setup(self) -> None:
        self._requests = 0
        self._opened = time.monotonic()
        self._due = 0.0
        super().setup()

    def handle_one_request(self) -> None:
        limits = self.server.limits
        wait = limits.idle_timeout if self._requests else limits.header_timeout
        if not self._next_request_starts(wait):
            self.close_connection = True
            return
        start = time.monotonic() if self._requests else self._opened
        self._due = start + limits.header_timeout
        self.server.deadlines.arm(self.connection, self._due - time.monotonic())
        try:
            super().handle_one_request()
        except (_SlowBodyError, _BadLengthError) as exc:
            self.close_connection = True
            slow = isinstance(exc, _SlowBodyError)
            self.server.slow_bodies += slow
            with contextlib.suppress(OSError):
                self.connection.settimeout(0.0)
                bad = _BAD_CHUNK if isinstance(exc, _BadChunkError) else _BAD_LENGTH
                self.connection.send(_SLOW if slow else bad)
        finally:
            self.server.deadlines.disarm(self.connection)
            self._requests += 1

    def _next_request_starts(self, wait: float) -> bool:
        """Wait up to ``wait`` seconds, idle (evictable), for a request's first byte; False
        when none came or the connection was evicted meanwhile. It stays evictable until its
        head is in (:meth:`parse_request`)."""
        sock = self.connection
        self.server.went_idle(sock)
        try:
            sock.settimeout(wait)
            reader = cast(io.BufferedReader, self.rfile)  # makefile("rb", -1)
            started = bool(reader.peek(1))  # buffered bytes, or one blocking read
        except OSError:
            started = False
        finally:
            with contextlib.suppress(OSError):
                sock.settimeout(self.timeout)
        return started and self.server.evictable(sock)

    def make_environ(self) -> Any:
        """werkzeug's environ, with a declared body read in whole before the request's
        deadline (so the app never waits on a trickling client)."""
        environ = super().make_environ()
        length = self.headers.get("Content-Length", "").strip(" \t")
        chunked = "chunked" in self.headers.get("Transfer-Encoding", "").lower()
        if chunked:
            body = self._read_chunked(environ["wsgi.input"])
            environ["wsgi.input"] = io.BytesIO(body)  # past the cap: the app answers 413
            environ["CONTENT_LENGTH"] = str(len(body))
            return environ
        if not length:
            return environ
        if not (length.isascii() and length.isdigit()):  # HTTP's 1*DIGIT, no "²", no sign
            raise _BadLengthError
        if int(length) > self.server.limits.max_body:
            return environ  # the app answers 413 without reading it
        environ["wsgi.input"] = io.BytesIO(self._read_body(int(length)))
        return environ

    @contextlib.contextmanager
    def _evictable(self) -> Iterator[None]:
        """While a body arrives the connection may be closed to make room (it is not running
        the app yet); evicted meanwhile, the request is dropped."""
        sock = self.connection
        self.server.went_idle(sock)
        try:
            yield
        except BaseException:
            self.server.went_busy(sock)
            raise
        if not self.server.went_busy(sock):
            raise ConnectionResetError("closed to make room while its body arrived")

    def _read_body(self, length: int) -> bytes:
        with self._evictable():
            return self._read_declared(length)

    def _read_declared(self, length: int) -> bytes:
        sock = self.connection
        parts: list[bytes] = []
        left = length
        try:
            while left:
                remaining = self._due - time.monotonic()
                if remaining <= 0:
                    raise _SlowBodyError
                sock.settimeout(remaining)
                part = self.rfile.read1(min(left, _CHUNK))
                if not part:
                    raise ConnectionResetError("the client closed during the request body")
                parts.append(part)
                left -= len(part)
        except TimeoutError as exc:
            raise _SlowBodyError from exc
        finally:
            with contextlib.suppress(OSError):
                sock.settimeout(self.timeout)
        return b"".join(parts)

    def _read_chunked(self, dechunked: Any) -> bytes:
        """A chunked body, decoded, read in whole before the request's deadline (up to one
        byte past the cap; then the connection closes after the answer)."""
        with self._evictable():
            return self._read_chunks(dechunked)

    def _read_chunks(self, dechunked: Any) -> bytes:
        sock = self.connection
        cap = self.server.limits.max_body
        parts: list[bytes] = []
        got = 0
        # the watchdog bounds the whole body (one read may wait on several socket reads); it
        # shuts only the reading side, so the 408 can still be sent
        self.server.deadlines.arm(sock, self._due - time.monotonic(), socket.SHUT_RD)
        try:
            while got <= cap:
                remaining = self._due - time.monotonic()
                if remaining <= 0:
                    raise _SlowBodyError
                sock.settimeout(remaining)
                part = dechunked.read(min(_CHUNK, cap + 1 - got))
                if time.monotonic() >= self._due:
                    raise _SlowBodyError  # the watchdog cut the read short
                if not part:
                    return b"".join(parts)
                parts.append(part)
                got += len(part)
            self.close_connection = True  # the rest of the body is never read
            return b"".join(parts)
        except OSError as exc:  # a timeout, the watchdog's shutdown, or a bad chunk
            if isinstance(exc, TimeoutError) or time.monotonic() >= self._due:
                raise _SlowBodyError from exc
            raise _BadChunkError from exc
        finally:
            self.server.deadlines.disarm(sock)
            with contextlib.suppress(OSError):
                sock.settimeout(self.timeout)

    def parse_request(self) -> bool:
        parsed = super().parse_request()  # the request line and every header are in
        sock = self.connection
        self.server.deadlines.disarm(sock)
        if not parsed:
            return False
        if not self.server.went_busy(sock):  # closed to make room while its head arrived
            self.close_connection = True
            return False
        screen = self.server.screen
        refused = None if screen is None else screen(self._head())
        if refused is None:
            return True
        self.close_connection = True  # its body, if any, is never read
        self.server.screened += 1
        with contextlib.suppress(OSError):
            sock.sendall(_refusal_bytes(refused))
        return False

    def _head(self) -> dict[str, str]:
        """The head's keys a screen reads, WSGI-style."""
        head = {"QUERY_STRING": self.path.partition("?")[2]}
        for name, key in _HEAD_KEYS.items():
            value = self.headers.get(name)
            if value is not None:
                head[key] = value
        return head

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
        screen: checks each request from its head, before its body is read (``None``: none).
    """

    def __init__(
        self,
        host: str,
        port: int,
        app: Any,
        *,
        fd: int,
        limits: Limits,
        screen: Screen | None = None,
    ) -> None:
        self.limits = limits
        self.screen = screen
        self.screened = 0
        """Requests refused from their head (by the screen), their body never read."""
        self._lock = threading.Lock()
        self._open = 0  # connections holding a slot
        self._idle: dict[socket.socket, None] = {}  # oldest first
        self._evicted: set[socket.socket] = set()  # closed for room; their slot was handed on
        self.refused = 0
        """Connections answered 503 because the cap was reached and none was idle."""
        self.evicted = 0
        """Connections not running the app (idle, or a head or body arriving) closed to make
        room for a new one."""
        self.slow_bodies = 0
        """Requests answered 408 because their body did not arrive in time."""
        # every socket operation of a connection times out (StreamRequestHandler.timeout)
        handler = type("_LimitedHandler", (_Handler,), {"timeout": limits.header_timeout})
        super().__init__(host, port, app, handler=handler, fd=fd)  # (calls server_close once)
        self.deadlines = _Deadlines()

    def went_idle(self, sock: socket.socket) -> None:
        """``sock`` waits for a request (its first byte, its head or its body), not running
        the app: it may be evicted."""
        with self._lock:
            self._idle[sock] = None

    def evictable(self, sock: socket.socket) -> bool:
        """``sock`` is still open and evictable (not closed to make room)."""
        with self._lock:
            return sock in self._idle

    def went_busy(self, sock: socket.socket) -> bool:
        """``sock`` stopped waiting; False when it was evicted meanwhile."""
        with self._lock:
            return self._idle.pop(sock, False) is None

    def _evict_oldest_idle(self) -> socket.socket | None:
        for sock in self._idle:  # (called under the lock)
            with contextlib.suppress(OSError, ValueError):
                if select.select([sock], [], [], 0)[0]:
                    continue  # its next request is arriving: not idle
            del self._idle[sock]
            self._evicted.add(sock)
            self.evicted += 1
            return sock
        return None

    def process_request(self, request: Any, client_address: Any) -> None:
        victim = None
        with self._lock:
            admitted = self._open < self.limits.max_connections
            if admitted:
                self._open += 1
            else:
                victim = self._evict_oldest_idle()  # its slot passes to this connection
                admitted = victim is not None
                if not admitted:
                    self.refused += 1
        if victim is not None:
            with contextlib.suppress(OSError):
                victim.shutdown(socket.SHUT_RDWR)  # its blocked read returns; its thread ends
        if not admitted:
            with contextlib.suppress(OSError):
                request.setblocking(False)
                request.send(_BUSY)
            self.shutdown_request(request)
            return
        try:
            super().process_request(request, client_address)
        except BaseException:
            self._release(request)
            raise

    def process_request_thread(self, request: Any, client_address: Any) -> None:
        try:
            super().process_request_thread(request, client_address)
        finally:
            self._release(request)

    def _release(self, request: Any) -> None:
        with self._lock:
            self._idle.pop(request, None)
            if request in self._evicted:
                self._evicted.discard(request)  # its slot already went to a newcomer
            else:
                self._open -= 1

    def server_close(self) -> None:
        super().server_close()
        deadlines: _Deadlines | None = getattr(self, "deadlines", None)
        if deadlines is not None:
            deadlines.close()
