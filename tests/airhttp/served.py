"""A real :class:`airhttp.HttpServer` on a loopback port, run on its own event loop in a
thread, with a probe app whose routes exercise the server; raw-socket client helpers."""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import socket
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import httptools
import orjson

from airhttp import HttpServer, Limits, Receive, Scope, Send, listen_socket

WAIT = 20.0


class Probe:
    """The probe app and what it saw (read from the test's thread).

    Routes: ``/echo`` (the request as JSON), ``/stream?n=K`` (K chunks), ``/forever`` (64 KiB
    chunks until the client is gone), ``/fail`` (raises), ``/silent`` (returns without an
    answer), ``/badheader`` (a header with CRLF), ``/noread`` (answers without reading the
    body), ``/hold`` (answers once :meth:`release` is called), ``/watch`` (reads the body, then
    waits for ``http.disconnect``), ``/head``, ``/nocontent``.
    """

    def __init__(self) -> None:
        self.active = 0
        self.disconnects = 0
        self.sent_chunks = 0
        self.disconnected = threading.Event()
        self.holding = threading.Event()
        self.loop: asyncio.AbstractEventLoop | None = None
        self._release: asyncio.Event | None = None

    def release(self) -> None:
        """Let every ``/hold`` request answer."""
        assert self.loop is not None
        assert self._release is not None
        self.loop.call_soon_threadsafe(self._release.set)

    async def _body(self, receive: Receive) -> bytes | None:
        body = b""
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                return None
            body += bytes(message.get("body", b""))
            if not message.get("more_body"):
                return body

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return
        self.active += 1
        try:
            await self._route(scope, receive, send)
        finally:
            self.active -= 1

    async def _answer(self, send: Send, status: int, body: bytes, *extra: Any) -> None:
        headers = [(b"content-type", b"application/json"), *extra]
        await send({"type": "http.response.start", "status": status, "headers": headers})
        await send({"type": "http.response.body", "body": body})

    async def _route(self, scope: Scope, receive: Receive, send: Send) -> None:
        path = scope["path"]
        if path == "/noread":
            await self._answer(send, 200, b"{}")
            return
        if path == "/fail":
            raise RuntimeError("the probe fails on purpose")
        if path == "/silent":
            return
        if path == "/badheader":
            await self._answer(send, 200, b"{}", (b"x-evil", b"a\r\nset-cookie: b"))
            return
        if path == "/nocontent":
            await send({"type": "http.response.start", "status": 204, "headers": []})
            await send({"type": "http.response.body", "body": b""})
            return
        body = await self._body(receive)
        if body is None:
            self.disconnects += 1
            self.disconnected.set()
            return
        if path == "/hold":
            if self._release is None:
                self._release = asyncio.Event()
            self.holding.set()
            await self._release.wait()
            await self._answer(send, 200, b'{"held":true}')
        elif path in ("/stream", "/forever"):
            await self._stream(scope, receive, send, forever=path == "/forever")
        elif path == "/watch":
            if (await receive())["type"] == "http.disconnect":  # waits for the client to go
                self.disconnects += 1
                self.disconnected.set()
            await self._answer(send, 200, b"{}")  # to nobody: dropped
        elif path == "/head":
            await self._answer(send, 200, b"hello")
        else:
            await self._answer(send, 200, _describe(scope, body))

    async def _stream(self, scope: Scope, receive: Receive, send: Send, *, forever: bool) -> None:
        query = dict(p.split(b"=", 1) for p in scope["query_string"].split(b"&") if b"=" in p)
        count = int(query.get(b"n", b"3"))
        start = {"type": "http.response.start", "status": 200, "headers": []}
        await send(start)
        chunk = b"x" * 65536
        i = 0
        gone = asyncio.ensure_future(receive())  # http.disconnect once the client leaves
        try:
            while forever or i < count:
                if gone.done():
                    self.disconnects += 1
                    self.disconnected.set()
                    return
                await send(
                    {
                        "type": "http.response.body",
                        "body": chunk if forever else b"chunk %d\n" % i,
                        "more_body": True,
                    }
                )
                self.sent_chunks += 1
                i += 1
                await asyncio.sleep(0)
            await send({"type": "http.response.body", "body": b""})
        finally:
            gone.cancel()


def _describe(scope: Scope, body: bytes) -> bytes:
    return orjson.dumps(
        {
            "method": scope["method"],
            "path": scope["path"],
            "raw_path": scope["raw_path"].decode("latin-1"),
            "query": scope["query_string"].decode("latin-1"),
            "version": scope["http_version"],
            "headers": [[k.decode("latin-1"), v.decode("latin-1")] for k, v in scope["headers"]],
            "len": len(body),
            "sha": hashlib.sha256(body).hexdigest(),
            "client": scope["client"],
            "server": scope["server"],
            "state": scope.get("state"),
        }
    )


class Served:
    """An :class:`HttpServer` serving ``app`` on 127.0.0.1 in a thread of its own.

    Attributes:
        port: the port.
        server: the server (read its ``stats`` and ``connections``).
    """

    def __init__(self, app: Any, *, limits: Limits | None = None, **options: Any) -> None:
        self.app = app
        self.sock = listen_socket("127.0.0.1", 0)
        self.port: int = self.sock.getsockname()[1]
        self.loop = asyncio.new_event_loop()
        self.server = HttpServer(app, limits=limits, **options)
        if isinstance(app, Probe):
            app.loop = self.loop
        self.error: BaseException | None = None
        self._started = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()
        if not self._started.wait(WAIT):
            raise RuntimeError("the server did not start")
        if self.error is not None:
            self.sock.close()
            raise self.error

    def _run(self) -> None:
        async def main() -> None:
            task = asyncio.ensure_future(self.server.serve(self.sock))
            ready = asyncio.ensure_future(self.server.ready.wait())
            await asyncio.wait({task, ready}, return_when=asyncio.FIRST_COMPLETED)
            ready.cancel()
            if task.done():
                task.result()  # the server failed to start: raise its error
            self._started.set()
            await task

        try:
            self.loop.run_until_complete(main())
        except BaseException as exc:
            self.error = exc
            self._started.set()
        finally:
            self.loop.close()

    def call(self, fn: Callable[[], Any]) -> None:
        """Run ``fn`` on the server's loop."""
        self.loop.call_soon_threadsafe(fn)

    def stop(self) -> None:
        """Stop the server (gracefully; a second call forces) and wait for it."""
        if self._thread.is_alive():
            self.call(self.server.stop)

    def join(self) -> None:
        self._thread.join(WAIT)
        assert not self._thread.is_alive(), "the server did not stop"
        self.sock.close()

    def close(self) -> None:
        self.stop()
        self.join()

    def connect(self) -> socket.socket:
        return socket.create_connection(("127.0.0.1", self.port), timeout=WAIT)

    def wait_until(self, predicate: Callable[[], bool], what: str) -> None:
        """Wait (bounded) until ``predicate()`` holds."""
        deadline = time.monotonic() + WAIT
        while not predicate():
            assert time.monotonic() < deadline, f"timed out waiting for {what}"
            time.sleep(0.01)


@contextlib.contextmanager
def served(app: Any, **options: Any) -> Iterator[Served]:
    srv = Served(app, **options)
    try:
        yield srv
    finally:
        srv.close()


class Response:
    """One parsed HTTP response."""

    def __init__(self) -> None:
        self.status = 0
        self.headers: dict[bytes, bytes] = {}
        self.body = b""
        self.complete = False

    def json(self) -> Any:
        return orjson.loads(self.body)


class ResponseReader:
    """Parses the responses arriving on a socket, in order (chunked coding decoded)."""

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self.done: list[Response] = []
        self.eof = False
        self._current = Response()
        self._parser = httptools.HttpResponseParser(self)

    def on_header(self, name: bytes, value: bytes) -> None:
        self._current.headers[name.lower()] = value

    def on_body(self, body: bytes) -> None:
        self._current.body += body

    def on_headers_complete(self) -> None:
        self._current.status = self._parser.get_status_code()

    def on_message_complete(self) -> None:
        self._current.complete = True
        self.done.append(self._current)
        self._current = Response()

    def read(self, count: int) -> list[Response]:
        """Read until ``count`` responses are in, or the server closes (then fewer)."""
        while len(self.done) < count and not self.eof:
            self._feed()
        return self.done[:count]

    def read_to_eof(self) -> list[Response]:
        """Read until the server closes the connection."""
        while not self.eof:
            self._feed()
        return self.done

    def _feed(self) -> None:
        try:
            data = self.sock.recv(65536)
        except ConnectionResetError:
            data = b""
        if not data:
            self.eof = True
            with contextlib.suppress(httptools.HttpParserError):
                self._parser.feed_data(b"")  # ends a close-delimited body
            return
        self._parser.feed_data(data)


def request(
    method: str = "GET",
    path: str = "/echo",
    body: bytes = b"",
    *,
    headers: tuple[tuple[str, str], ...] = (),
    version: str = "1.1",
    length: bool = True,
) -> bytes:
    """The bytes of one request (``Host`` included; a ``Content-Length`` for a body)."""
    lines = [f"{method} {path} HTTP/{version}", "Host: localhost"]
    lines += [f"{k}: {v}" for k, v in headers]
    if body and length:
        lines.append(f"Content-Length: {len(body)}")
    return ("\r\n".join(lines) + "\r\n\r\n").encode() + body


def chunked(parts: list[bytes]) -> bytes:
    """``parts`` in chunked transfer coding, last chunk included."""
    return b"".join(b"%x\r\n%b\r\n" % (len(p), p) for p in parts if p) + b"0\r\n\r\n"


def until_closed(sock: socket.socket) -> bytes:
    """Everything the server sends until it closes the connection."""
    got = b""
    sock.settimeout(WAIT)
    while True:
        try:
            chunk = sock.recv(65536)
        except ConnectionResetError:
            return got
        if not chunk:
            return got
        got += chunk
