"""The gateway's HTTP serving over real loopback sockets: :class:`airhttp.HttpServer` with a
guarded raw-request hook (the fast path) beside the guarded ASGI app, as ``air gateway``
composes them — both paths on one keep-alive connection, pipelining, cancellation, and every
connection limit."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Coroutine
from contextlib import asynccontextmanager
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from airhttp import AccessPolicy, Answer, GuardedApp, HttpServer, Limits, listen_socket

WAIT = 10.0


_SLOW: dict[str, asyncio.Event] = {}


async def _app(scope: Any, receive: Any, send: Any) -> None:
    """ASGI: /stream streams three chunks, /echo answers the body, /slow waits for the client
    to leave."""
    event = await receive()
    path = scope["path"]
    if path == "/stream":
        await send({"type": "http.response.start", "status": 200,
                    "headers": [(b"content-type", b"text/event-stream")]})  # fmt: skip
        for part in (b"a", b"b", b"c"):
            await send({"type": "http.response.body", "body": part, "more_body": True})
        await send({"type": "http.response.body", "body": b""})
        return
    if path == "/slow":
        _SLOW["started"].set()
        if (await receive())["type"] == "http.disconnect":
            _SLOW["left"].set()
        return
    if event["type"] != "http.request":
        return  # the client left, or the guard cut an oversized body off (it answers 413)
    body = event["body"]
    while event.get("more_body"):
        event = await receive()
        if event["type"] != "http.request":
            return
        body += event["body"]
    await send({"type": "http.response.start", "status": 200,
                "headers": [(b"content-length", str(len(body)).encode())]})  # fmt: skip
    await send({"type": "http.response.body", "body": body})


class _Fast:
    def __init__(self) -> None:
        self.cancelled = asyncio.Event()
        self.entered = asyncio.Event()

    def __call__(self, scope: Any, body: bytes) -> Coroutine[Any, Any, Answer] | None:
        path = scope["path"]
        if path == "/fast" or (path == "/both" and body == b"fast"):
            return self._answer(body)
        if path == "/hang":
            return self._hang()
        return None

    async def _answer(self, body: bytes) -> Answer:
        return 200, [(b"content-type", b"application/json")], b'{"fast":' + (body or b"null") + b"}"

    async def _hang(self) -> Answer:
        self.entered.set()
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            self.cancelled.set()
            raise
        return 200, [], b""


@asynccontextmanager
async def _serving(limits: Limits | None = None) -> AsyncIterator[tuple[int, HttpServer, _Fast]]:
    limits = limits or Limits()
    sock = listen_socket("127.0.0.1", 0)
    fast = _Fast()
    guarded = GuardedApp(_app, policy=AccessPolicy(check_host=False), limits=limits)
    server = HttpServer(guarded, limits=limits, grace=1.0, fast=guarded.guard_fast(fast))
    serving = asyncio.ensure_future(server.serve(sock))
    await asyncio.wait_for(server.ready.wait(), WAIT)
    try:
        yield sock.getsockname()[1], server, fast
    finally:
        server.stop()
        await asyncio.wait_for(serving, WAIT)
        sock.close()


def _post(path: str, body: bytes, *extra: str) -> bytes:
    head = [f"POST {path} HTTP/1.1", "Host: 127.0.0.1", f"Content-Length: {len(body)}", *extra]
    return ("\r\n".join(head) + "\r\n\r\n").encode() + body


async def _answer(reader: asyncio.StreamReader) -> tuple[bytes, bytes]:
    """One Content-Length answer: (head, body)."""
    head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), WAIT)
    length = 0
    for line in head.split(b"\r\n"):
        if line.lower().startswith(b"content-length:"):
            length = int(line.split(b":", 1)[1])
    return head, await asyncio.wait_for(reader.readexactly(length), WAIT)


async def test_fast_and_asgi_answers_share_one_keep_alive_connection() -> None:
    async with _serving() as (port, _server, _fast):
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        for path, body, want in (("/fast", b"1", b'{"fast":1}'), ("/echo", b"xyz", b"xyz"),
                                 ("/fast", b"2", b'{"fast":2}')):  # fmt: skip
            writer.write(_post(path, body))
            head, got = await _answer(reader)
            assert head.startswith(b"HTTP/1.1 200 OK\r\n")
            assert b"connection: close" not in head
            assert got == want
        writer.close()


async def test_a_request_the_fast_path_reads_but_leaves_reaches_the_app_with_its_body() -> None:
    async with _serving() as (port, _server, _fast):
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        for body, want in ((b"fast", b'{"fast":fast}'), (b"x" * 30_000, b"x" * 30_000),
                           (b"x" * 70_000, b"x" * 70_000)):  # fmt: skip
            writer.write(_post("/both", body))
            head, got = await _answer(reader)
            assert head.startswith(b"HTTP/1.1 200 OK\r\n")
            assert got == want
        writer.close()


async def test_pipelined_requests_are_answered_in_order() -> None:
    async with _serving() as (port, _server, _fast):
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write(b"".join(_post("/echo" if i % 2 else "/fast", b"%d" % i) for i in range(6)))
        bodies = [(await _answer(reader))[1] for _ in range(6)]
        assert bodies == [b'{"fast":0}', b"1", b'{"fast":2}', b"3", b'{"fast":4}', b"5"]
        writer.close()


async def test_connection_close_is_honoured_on_both_paths() -> None:
    async with _serving() as (port, _server, _fast):
        for path in ("/fast", "/echo"):
            reader, writer = await asyncio.open_connection("127.0.0.1", port)
            writer.write(_post(path, b"7", "Connection: close"))
            head, _ = await _answer(reader)
            assert b"connection: close" in head
            assert await asyncio.wait_for(reader.read(), WAIT) == b""  # closed by the server
            writer.close()


async def test_a_streamed_answer_is_chunked_and_a_chunked_body_is_read() -> None:
    async with _serving() as (port, _server, _fast):
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write(b"GET /stream HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), WAIT)
        assert b"transfer-encoding: chunked" in head
        assert await asyncio.wait_for(reader.readuntil(b"0\r\n\r\n"), WAIT) == (
            b"1\r\na\r\n1\r\nb\r\n1\r\nc\r\n0\r\n\r\n"
        )
        writer.write(b"POST /echo HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
                     b"3\r\nabc\r\n2\r\nde\r\n0\r\n\r\n")  # fmt: skip
        assert (await _answer(reader))[1] == b"abcde"
        writer.close()


async def test_closing_the_connection_cancels_a_fast_call() -> None:
    async with _serving() as (port, _server, fast):
        _reader, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write(_post("/hang", b""))
        await asyncio.wait_for(fast.entered.wait(), WAIT)
        writer.close()
        await asyncio.wait_for(fast.cancelled.wait(), WAIT)


async def test_an_asgi_request_sees_the_disconnect() -> None:
    _SLOW.update(started=asyncio.Event(), left=asyncio.Event())
    async with _serving() as (port, _server, _fast):
        _reader, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write(_post("/slow", b""))
        await asyncio.wait_for(_SLOW["started"].wait(), WAIT)
        writer.close()
        await asyncio.wait_for(_SLOW["left"].wait(), WAIT)


async def test_a_slow_head_gets_408_and_a_huge_head_431() -> None:
    async with _serving(Limits(header_timeout=0.3)) as (port, server, _fast):
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write(b"POST /echo HTTP/1.1\r\nHost: 127.0.0.1\r\n")  # never finished
        assert (await asyncio.wait_for(reader.read(), WAIT)).startswith(b"HTTP/1.1 408")
        assert server.stats.header_timeouts == 1
        writer.close()
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write(b"GET / HTTP/1.1\r\nX-Big: " + b"a" * 70_000 + b"\r\n\r\n")
        assert (await asyncio.wait_for(reader.read(), WAIT)).startswith(b"HTTP/1.1 431")
        writer.close()


async def test_a_body_over_the_limit_gets_413_declared_or_chunked() -> None:
    # Each answer is read to the connection's end: a connection kept alive after the 413 ends
    # at the idle timeout (5 s by default, 0.3 s here).
    async with _serving(Limits(max_body=10, idle_timeout=0.3)) as (port, _server, _fast):
        for request in (
            _post("/echo", b"x" * 11),
            _post("/fast", b"x" * 11),
            b"POST /echo HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
            b"8\r\n12345678\r\n8\r\n12345678\r\n0\r\n\r\n",
        ):
            reader, writer = await asyncio.open_connection("127.0.0.1", port)
            writer.write(request)
            assert (await asyncio.wait_for(reader.read(), WAIT)).startswith(b"HTTP/1.1 413")
            writer.close()


async def test_the_connection_cap_closes_an_idle_connection_then_refuses() -> None:
    async with _serving(Limits(max_connections=2)) as (port, server, fast):
        idle_r, idle_w = await asyncio.open_connection("127.0.0.1", port)
        idle_w.write(_post("/fast", b"1"))
        await _answer(idle_r)  # now idle between requests
        _busy_r, busy_w = await asyncio.open_connection("127.0.0.1", port)
        busy_w.write(_post("/hang", b""))
        await asyncio.wait_for(fast.entered.wait(), WAIT)
        fast.entered.clear()
        _third_r, third_w = await asyncio.open_connection("127.0.0.1", port)
        assert await asyncio.wait_for(idle_r.read(), WAIT) == b""  # evicted to make room
        assert server.stats.evicted == 1
        third_w.write(_post("/hang", b""))
        await asyncio.wait_for(fast.entered.wait(), WAIT)  # both connections are busy now
        fourth_r, fourth_w = await asyncio.open_connection("127.0.0.1", port)
        assert (await asyncio.wait_for(fourth_r.read(), WAIT)).startswith(b"HTTP/1.1 503")
        assert server.stats.refused == 1
        for w in (idle_w, busy_w, third_w, fourth_w):
            w.close()


async def test_an_idle_keep_alive_connection_is_closed() -> None:
    async with _serving(Limits(idle_timeout=0.3)) as (port, _server, _fast):
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write(_post("/fast", b"1"))
        await _answer(reader)
        assert await asyncio.wait_for(reader.read(), WAIT) == b""
        writer.close()


@settings(max_examples=40, deadline=None)
@given(junk=st.binary(max_size=300) | st.sampled_from([
    b"GET / HTTP/1.1\r\n\r\n", b"POST /fast HTTP/1.1\r\nContent-Length: -1\r\n\r\n",
    b"POST /fast HTTP/1.1\r\nContent-Length: 5\r\n\r\nab", b"\x00\x01\r\n\r\n",
    b"GET / HTTP/1.1\r\nUpgrade: websocket\r\nConnection: upgrade\r\n\r\n",
]))  # fmt: skip
def test_any_bytes_get_an_answer_or_a_close_and_the_server_stays_up(junk: bytes) -> None:
    async def main() -> None:
        async with _serving(Limits(header_timeout=0.5)) as (port, _server, _fast):
            reader, writer = await asyncio.open_connection("127.0.0.1", port)
            writer.write(junk)
            writer.write_eof()
            data = await asyncio.wait_for(reader.read(), WAIT)
            assert data == b"" or data.startswith(b"HTTP/1.1 ")
            writer.close()
            reader, writer = await asyncio.open_connection("127.0.0.1", port)
            writer.write(_post("/fast", b"1"))
            assert (await _answer(reader))[1] == b'{"fast":1}'
            writer.close()

    asyncio.run(main())
