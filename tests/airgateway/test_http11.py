"""The gateway's HTTP/1.1 client against real loopback servers: keep-alive reuse, a pooled
connection the server closed, chunked SSE streams, refused connections, broken answers."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager

import pytest

from airgateway._http11 import (
    MAX_BODY,
    MAX_LINE,
    AnswerTooLargeError,
    ConnectFailedError,
    ConnectionLostError,
    Http11Pool,
)
from airgateway.upstream_http import HttpUpstream

Handler = Callable[[asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]]


@asynccontextmanager
async def _server(handler: Handler) -> AsyncIterator[tuple[str, list[int]]]:
    connections: list[int] = []

    async def on_connect(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        connections.append(1)
        try:
            await handler(reader, writer)
        finally:
            writer.close()

    server = await asyncio.start_server(on_connect, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    try:
        yield f"http://127.0.0.1:{port}/mcp", connections
    finally:
        server.close()
        await server.wait_closed()


async def _read_request(reader: asyncio.StreamReader) -> bytes:
    head = await reader.readuntil(b"\r\n\r\n")
    length = 0
    for line in head.split(b"\r\n"):
        if line.lower().startswith(b"content-length:"):
            length = int(line.split(b":", 1)[1])
    return await reader.readexactly(length)


def _json_answer(body: bytes) -> bytes:
    return b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: %d\r\n\r\n%s" % (
        len(body),
        body,
    )


async def test_keep_alive_reuses_one_connection() -> None:
    async def echo(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        while True:
            try:
                body = await _read_request(reader)
            except asyncio.IncompleteReadError:
                return
            writer.write(_json_answer(body))

    async with _server(echo) as (url, connections):
        pool = Http11Pool(url, size=4, headers={"Accept": "application/json"})
        for i in range(5):
            resp = await pool.request("POST", b'{"n":%d}' % i)
            assert resp.status == 200
            assert resp.body == b'{"n":%d}' % i
        await pool.close()
    assert len(connections) == 1


async def test_a_pooled_connection_the_server_closed_is_replaced_and_the_request_sent_once() -> (
    None
):
    seen: list[bytes] = []

    async def one_shot(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        body = await _read_request(reader)
        seen.append(body)
        writer.write(_json_answer(body))
        await writer.drain()  # then close: the next request must use a new connection

    async with _server(one_shot) as (url, connections):
        pool = Http11Pool(url, size=4, headers={})
        assert (await pool.request("POST", b"1", resend=True)).body == b"1"
        assert (await pool.request("POST", b"2", resend=True)).body == b"2"
        await pool.close()
    assert seen == [b"1", b"2"]
    assert len(connections) == 2


async def test_a_chunked_sse_answer_streams_line_by_line() -> None:
    events = [b"event: message\n", b'data: {"a":1}\n', b"\n", b'data: {"b":2}\n', b"\n"]

    async def sse(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await _read_request(reader)
        writer.write(
            b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n"
            b"transfer-encoding: chunked\r\n\r\n"
        )
        payload = b"".join(events)
        for piece in (payload[:7], payload[7:30], payload[30:]):  # chunks split mid-line
            writer.write(b"%x\r\n%s\r\n" % (len(piece), piece))
            await writer.drain()
        writer.write(b"0\r\n\r\n")
        await _read_request(reader)  # the connection is reused after the stream
        writer.write(_json_answer(b"{}"))

    async with _server(sse) as (url, connections):
        pool = Http11Pool(url, size=4, headers={})
        resp = await pool.request("POST", b"{}")
        assert resp.body is None
        assert [line async for line in resp.lines()] == events
        assert (await pool.request("POST", b"{}")).body == b"{}"
        await pool.close()
    assert len(connections) == 1


async def test_a_refused_connection_and_a_cut_answer_are_told_apart() -> None:
    async def cut(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await _read_request(reader)
        writer.write(b"HTTP/1.1 200 OK\r\ncontent-length: 100\r\n\r\npartial")

    async with _server(cut) as (url, _connections):
        pool = Http11Pool(url, size=4, headers={})
        with pytest.raises(ConnectionLostError):
            await pool.request("POST", b"{}")
        await pool.close()
    refused = Http11Pool(url, size=4, headers={})
    with pytest.raises(ConnectFailedError):
        await refused.request("POST", b"{}")


async def test_a_non_http_answer_is_a_lost_connection() -> None:
    async def garbage(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await _read_request(reader)
        writer.write(b"SSH-2.0-OpenSSH\r\n\r\n")

    async with _server(garbage) as (url, _connections):
        pool = Http11Pool(url, size=4, headers={})
        with pytest.raises(ConnectionLostError):
            await pool.request("POST", b"{}")
        await pool.close()


async def _one_answer_then_silence(
    seen: list[bytes], second: asyncio.Event
) -> tuple[Handler, asyncio.Event]:
    """A server answering the first request on a connection, then reading the second and
    closing without a byte of answer (a server that died running it)."""
    done = asyncio.Event()

    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        body = await _read_request(reader)
        seen.append(body)
        writer.write(_json_answer(body))
        await writer.drain()
        try:
            seen.append(await _read_request(reader))
        except asyncio.IncompleteReadError:
            return
        second.set()
        done.set()

    return handler, done


async def test_a_request_written_on_a_pooled_connection_then_eof_is_lost_and_not_resent() -> None:
    """The bytes reached the server, which closed without answering: the request may have run,
    so it is not sent again (it was, and the gateway ran non-idempotent calls twice)."""
    seen: list[bytes] = []
    second = asyncio.Event()
    handler, _done = await _one_answer_then_silence(seen, second)
    async with _server(handler) as (url, connections):
        pool = Http11Pool(url, size=4, headers={})
        assert (await pool.request("POST", b"first")).body == b"first"
        with pytest.raises(ConnectionLostError, match="without answering"):
            await pool.request("POST", b"write")
        await pool.close()
    assert seen == [b"first", b"write"]  # the write reached the server once, never again
    assert len(connections) == 1


async def test_a_resendable_request_on_a_pooled_connection_closed_without_answer_is_resent() -> (
    None
):
    seen: list[bytes] = []
    second = asyncio.Event()
    handler, _done = await _one_answer_then_silence(seen, second)
    async with _server(handler) as (url, connections):
        pool = Http11Pool(url, size=4, headers={})
        assert (await pool.request("POST", b"first")).body == b"first"
        assert (await pool.request("POST", b"read", resend=True)).body == b"read"
        await pool.close()
    assert seen == [b"first", b"read", b"read"]
    assert len(connections) == 2


@pytest.mark.parametrize("resend", [False, True])
async def test_a_server_dying_mid_request_on_a_pooled_connection_is_a_lost_connection(
    resend: bool,
) -> None:
    """The pooled connection's empty read and then a refused reconnect: the request was written,
    so it is ``ConnectionLostError`` (may have run), never ``ConnectFailedError`` (not sent),
    which let the router run it on another replica."""
    seen: list[bytes] = []
    second = asyncio.Event()
    handler, _done = await _one_answer_then_silence(seen, second)
    async with _server(handler) as (url, _connections):
        pool = Http11Pool(url, size=4, headers={})
        assert (await pool.request("POST", b"first")).body == b"first"
    # the listening socket is closed: the pooled connection is all that is left
    with pytest.raises(ConnectionLostError):  # was ConnectFailedError: "nothing was sent"
        await pool.request("POST", b"write", resend=resend)
    assert seen == [b"first", b"write"]
    await pool.close()


async def test_a_refused_connection_before_any_byte_is_connect_failed() -> None:
    async with _server(_silent) as (url, _connections):
        pass
    pool = Http11Pool(url, size=4, headers={})
    for resend in (False, True):
        with pytest.raises(ConnectFailedError):
            await pool.request("POST", b"{}", resend=resend)
    await pool.close()


async def _silent(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    await reader.read()


async def test_a_body_without_a_length_is_read_to_the_end_of_the_connection() -> None:
    async def in_pieces(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await _read_request(reader)
        writer.write(b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\n\r\n[1,")
        await writer.drain()
        await asyncio.sleep(0.05)  # a second segment (it was cut at the first read)
        writer.write(b"2]")

    async with _server(in_pieces) as (url, _connections):
        pool = Http11Pool(url, size=4, headers={})
        assert (await pool.request("POST", b"{}")).body == b"[1,2]"
        await pool.close()


async def test_a_declared_huge_chunk_is_refused_at_the_body_limit_while_it_streams() -> None:
    """``fffffffff`` declared, then streamed: the answer is cut at 64 MiB as it is read (it was
    read as one chunk of 64 GiB), and the connection is closed, which stops the server."""
    sent: list[int] = []
    stopped = asyncio.Event()

    async def huge(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await _read_request(reader)
        writer.write(b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\nfffffffff\r\n")
        block = b"x" * (1024 * 1024)
        try:
            for _ in range(4 * MAX_BODY // len(block)):
                writer.write(block)
                await writer.drain()
                sent.append(len(block))
        except OSError:
            pass
        stopped.set()

    async with _server(huge) as (url, _connections):
        pool = Http11Pool(url, size=4, headers={})
        with pytest.raises(AnswerTooLargeError, match="an answer over the 64 MiB limit"):
            await pool.request("POST", b"{}")
        await asyncio.wait_for(stopped.wait(), 30)
        await pool.close()
    assert sum(sent) < 2 * MAX_BODY  # not the 256 MiB it would have sent


async def test_an_sse_line_that_never_ends_is_refused_at_the_line_limit() -> None:
    async def endless(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await _read_request(reader)
        writer.write(b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n"
                     b"transfer-encoding: chunked\r\n\r\n")  # fmt: skip
        block = b"x" * 65536
        try:
            for _ in range(MAX_LINE // len(block) * 4):
                writer.write(b"%x\r\n%s\r\n" % (len(block), block))
                await writer.drain()
        except OSError:
            return  # the client closed the connection: the point

    async with _server(endless) as (url, _connections):
        pool = Http11Pool(url, size=4, headers={})
        resp = await pool.request("POST", b"{}")
        lines: list[bytes] = []

        async def read_all() -> None:
            async for line in resp.lines():
                lines.append(line)

        with pytest.raises(AnswerTooLargeError, match="a streamed line over the 16 MiB limit"):
            await read_all()
        assert lines == []
        await pool.close()


async def test_an_informational_answer_before_the_answer_is_skipped() -> None:
    async def hints(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        for _ in range(2):
            body = await _read_request(reader)
            writer.write(b"HTTP/1.1 103 Early Hints\r\nlink: </x>; rel=preload\r\n\r\n")
            writer.write(_json_answer(body))

    async with _server(hints) as (url, connections):
        pool = Http11Pool(url, size=4, headers={})
        for body in (b"[1]", b"[2]"):
            resp = await pool.request("POST", body)
            assert (resp.status, resp.body) == (200, body)
            assert "link" not in resp.headers
        await pool.close()
    assert len(connections) == 1  # still in step: the connection was reused


@pytest.mark.parametrize("safe", [False, True])
async def test_the_fast_path_forward_resends_only_a_call_that_may_run_twice(safe: bool) -> None:
    """``HttpUpstream.forward`` (the fast path's ``tools/call``) on a pooled connection closed
    without an answer: sent again for a read-only / idempotent tool, else the call may have
    run and the error says it was sent (the router does not run it elsewhere)."""
    from airgateway import eras
    from airgateway.errors import UpstreamUnavailableError
    from airgateway.upstream_http import HttpUpstream

    seen: list[bytes] = []

    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        for answered in (True, False):  # each connection: one answer, then a silent close
            try:
                body = await _read_request(reader)
            except asyncio.IncompleteReadError:
                return
            seen.append(body)
            if answered:
                writer.write(_json_answer(b'{"jsonrpc":"2.0","id":1,"result":{"content":[]}}'))
                await writer.drain()

    call = b'{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"t"}}'
    async with _server(handler) as (url, connections):
        upstream = HttpUpstream("s#0", url)
        upstream.era = eras.MODERN  # as after its handshake
        await upstream.forward(call, "t", msg_id=1, timeout=10, resend=safe)
        if safe:
            message, _raw = await upstream.forward(call, "t", msg_id=1, timeout=10, resend=True)
            assert message["result"] == {"content": []}
        else:
            with pytest.raises(UpstreamUnavailableError) as raised:
                await upstream.forward(call, "t", msg_id=1, timeout=10)
            assert raised.value.sent is True
        await upstream.close()
    assert len(seen) == (3 if safe else 2)  # resent once on a new connection, or never
    assert len(connections) == (2 if safe else 1)


async def test_encoded_header_lines_go_with_the_mapped_headers() -> None:
    heads: list[bytes] = []

    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        for _ in range(2):
            head = await reader.readuntil(b"\r\n\r\n")
            heads.append(head)
            length = int(head.lower().split(b"content-length: ")[1].split(b"\r\n")[0])
            writer.write(_json_answer(await reader.readexactly(length)))

    async with _server(handler) as (url, _):
        pool = Http11Pool(url, size=4, headers={"Accept": "application/json"})
        lines = b"Mcp-Name: echo\r\nAuthorization: Bearer t\r\n"
        first = await pool.request("POST", b"{}", {"Mcp-Method": "tools/call"}, lines=lines)
        second = await pool.request("POST", b"[]", lines=b"Mcp-Name: echo\r\n")
        await pool.close()
    assert (first.body, second.body) == (b"{}", b"[]")
    sent = heads[0].split(b"\r\n")
    assert sent[0] == b"POST /mcp HTTP/1.1"
    for line in (b"Accept: application/json", b"Mcp-Method: tools/call", b"Mcp-Name: echo",
                 b"Authorization: Bearer t", b"Content-Length: 2"):  # fmt: skip
        assert line in sent, heads[0]
    assert b"\r\n\r\n" not in heads[0][:-4]  # one head: every line in it
    assert b"Mcp-Name: echo" in heads[1].split(b"\r\n")
    assert b"Mcp-Method" not in heads[1]
    assert b"Authorization" not in heads[1]


@pytest.mark.parametrize("when", ["idle", "with the answer"])
async def test_bytes_no_request_asked_for_retire_the_connection_instead_of_answering_the_next(
    when: str,
) -> None:
    # a buggy or hostile upstream sends one more answer on a keep-alive connection: reused, it
    # would answer the next caller's request, and each later caller would get the one before's
    stray_sent = asyncio.Event()

    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        while True:
            first = not stray_sent.is_set()  # one stray answer, after the very first
            try:
                body = await _read_request(reader)
            except (asyncio.IncompleteReadError, ConnectionError):
                return
            answer = _json_answer(b'{"for":"%s"}' % body)
            stray = _json_answer(b'{"for":"nobody"}') if first else b""
            if first and when == "with the answer":
                writer.write(answer + stray)  # in the same write: it arrives with the answer
            else:
                writer.write(answer)
                if first:
                    await writer.drain()
                    await asyncio.sleep(0.05)
                    writer.write(stray)  # later: it arrives while the connection is idle
            await writer.drain()
            if first:
                stray_sent.set()

    async with _server(handler) as (url, connections):
        pool = Http11Pool(url, size=4, headers={})
        try:
            assert (await pool.request("POST", b"A")).body == b'{"for":"A"}'
            await stray_sent.wait()
            for _ in range(100):  # until the stray bytes are in (or the connection retired)
                if not pool._idle or pool._idle[0]._pending:
                    break
                await asyncio.sleep(0.01)
            assert (await pool.request("POST", b"B")).body == b'{"for":"B"}'
            assert (await pool.request("POST", b"C")).body == b'{"for":"C"}'
            assert len(connections) == 2  # the first retired, a new one since
        finally:
            await pool.close()


async def test_a_stray_answer_after_a_sized_stream_cannot_rewrite_its_headers() -> None:
    """A sized SSE answer followed at once by a stray JSON answer on the same connection: the
    stream keeps its own headers (the stray one's ``content-type`` once overwrote them, and the
    stream was then read as a body)."""
    event = b'data: {"n": 1}\r\n\r\n'

    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await _read_request(reader)
        writer.write(b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n"
                     b"content-length: %d\r\n\r\n%s" % (len(event), event)
                     + _json_answer(b"{}"))  # fmt: skip
        await writer.drain()
        await reader.read()  # until the client closes

    async with _server(handler) as (url, _connections):
        pool = Http11Pool(url, size=2, headers={})
        resp = await pool.request("POST", b"{}")
        assert resp.headers["content-type"] == "text/event-stream"
        assert [line async for line in resp.lines()] == [b'data: {"n": 1}\r\n', b"\r\n"]
        await pool.close()


_CALL = b'{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"t"}}'


@asynccontextmanager
async def _upstream_of(handler: Handler) -> AsyncIterator[HttpUpstream]:
    """An ``HttpUpstream`` past its handshake (2026-07-28) on a server run by ``handler``."""
    from airgateway import eras

    async with _server(handler) as (url, _connections):
        upstream = HttpUpstream("s#0", url)
        upstream.era = eras.MODERN  # as after its handshake
        try:
            yield upstream
        finally:
            await upstream.close()


async def test_a_result_whose_id_is_ours_only_by_python_equality_is_no_answer() -> None:
    """``true`` and ``1.0`` equal ``1`` in Python; as JSON-RPC ids they are other requests'."""
    from airgateway.errors import UpstreamUnavailableError

    answers = [b'{"jsonrpc":"2.0","id":true,"result":{}}',
               b'{"jsonrpc":"2.0","id":1.0,"result":{}}',
               b'{"jsonrpc":"2.0","id":1,"result":{"content":[]}}']  # fmt: skip

    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        for answer in answers:
            await _read_request(reader)
            writer.write(_json_answer(answer))
            await writer.drain()
        await reader.read()

    async with _upstream_of(handler) as upstream:
        for shown in ("true", "1.0"):
            with pytest.raises(UpstreamUnavailableError) as raised:
                await upstream.forward(_CALL, "t", msg_id=1, timeout=10)
            assert f"answered request id {shown} where 1's answer belongs" in str(raised.value)
        message, _raw = await upstream.forward(_CALL, "t", msg_id=1, timeout=10)
        assert message["result"] == {"content": []}


@pytest.mark.parametrize("sized", [False, True])
async def test_an_sse_event_over_the_limit_is_an_answer_refused(
    sized: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An event of many lines past the event limit (chunked or sized): the call fails with the
    gateway's error saying so (it was a bare ValueError: an HTTP 500 on the fast path)."""
    from airgateway import _sse
    from airgateway.errors import UpstreamUnavailableError

    monkeypatch.setattr(_sse, "MAX_EVENT_BYTES", 1000)
    events = b"".join(b"data: %s\r\n" % (b"x" * 100) for _ in range(20)) + b"\r\n"

    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await _read_request(reader)
        head = b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n"
        if sized:
            writer.write(head + b"content-length: %d\r\n\r\n%s" % (len(events), events))
        else:
            writer.write(head + b"transfer-encoding: chunked\r\n\r\n%x\r\n%s\r\n0\r\n\r\n"
                         % (len(events), events))  # fmt: skip
        await writer.drain()
        await reader.read()

    async with _upstream_of(handler) as upstream:
        with pytest.raises(UpstreamUnavailableError) as raised:
            await upstream.forward(_CALL, "t", msg_id=1, timeout=10)
        assert "answer refused: an SSE event over 1000 bytes" in str(raised.value)
        assert raised.value.sent is True
