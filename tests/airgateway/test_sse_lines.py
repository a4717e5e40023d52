"""Lines of an upstream's event stream: split from pieces with a bound held while reading
(:func:`airgateway._sse.lines`), so a legacy SSE upstream's big answer arrives whole and a
line that never ends closes the stream with its reason."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterable
from pathlib import Path

import pytest

from airgateway import Gateway, parse_config
from airgateway._sse import lines
from airgateway.errors import UpstreamUnavailableError
from airgateway.upstream_sse import SseUpstream
from airstore import MemoryStore
from tests.airgateway.procs import UPSTREAM, air, started


async def _pieces(parts: Iterable[bytes]) -> AsyncIterator[bytes]:
    for part in parts:
        yield part


async def _lines(parts: Iterable[bytes], max_line: int = 1024) -> list[bytes]:
    return [line async for line in lines(_pieces(parts), max_line=max_line)]


async def test_lines_are_split_across_pieces_and_keep_their_newline() -> None:
    parts = [b"event: a\ndat", b"a: 1", b"\n\nda", b"ta: 2\n", b"\n", b"tail"]
    assert await _lines(parts) == [b"event: a\n", b"data: 1\n", b"\n", b"data: 2\n", b"\n",
                                   b"tail"]  # fmt: skip


async def test_a_line_over_the_limit_ends_the_stream_before_it_is_held_whole() -> None:
    taken: list[int] = []

    async def endless() -> AsyncIterator[bytes]:
        for _ in range(10_000):  # 10 MB would come; the splitter stops at about 1 KiB
            taken.append(1)
            yield b"x" * 1000

    with pytest.raises(ValueError, match="an SSE line over 1024 bytes"):
        async for _line in lines(endless(), max_line=1024):
            pass
    assert len(taken) == 2


async def _raw_sse_server(sent: list[int], closed: asyncio.Event) -> asyncio.Server:
    """A legacy SSE server by hand: the endpoint event, an ``initialize`` answer, then, for
    any other request, an event whose line never ends (1 MiB pieces until the client goes)."""
    stream: list[asyncio.StreamWriter] = []

    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        head = await reader.readuntil(b"\r\n\r\n")
        if head.startswith(b"GET"):
            writer.write(b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n\r\n"
                         b"event: endpoint\ndata: /messages\n\n")  # fmt: skip
            stream.append(writer)
            await reader.read()
            return
        length = int(head.lower().split(b"content-length:")[1].split(b"\r\n")[0])
        body = await reader.readexactly(length)
        writer.write(b"HTTP/1.1 202 Accepted\r\ncontent-length: 0\r\nconnection: close\r\n\r\n")
        await writer.drain()
        writer.close()
        out = stream[0]
        if b'"initialize"' in body:
            answer = (
                b'{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"2024-11-05",'
                b'"capabilities":{},"serverInfo":{"name":"raw","version":"1"}}}'
            )
            out.write(b"event: message\ndata: " + answer + b"\n\n")
        elif b'"tools/call"' in body:
            out.write(b"event: message\ndata: ")
            try:
                for _ in range(256):
                    out.write(b"x" * (1024 * 1024))
                    await out.drain()
                    sent.append(1)
            except OSError:
                pass
            closed.set()

    return await asyncio.start_server(serve, "127.0.0.1", 0)


async def test_a_legacy_sse_line_that_never_ends_fails_the_call_with_its_reason() -> None:
    sent: list[int] = []
    closed = asyncio.Event()
    server = await _raw_sse_server(sent, closed)
    port = server.sockets[0].getsockname()[1]
    upstream = SseUpstream("raw#0", f"http://127.0.0.1:{port}/sse")
    try:
        await upstream.connect()
        with pytest.raises(UpstreamUnavailableError, match="an SSE line over 16777216 bytes"):
            await upstream.request("tools/call", {"name": "endless"}, timeout=60)
        await asyncio.wait_for(closed.wait(), 30)
    finally:
        await upstream.close()
        server.close()
    assert len(sent) < 64  # MiB: the stream was closed near the 16 MiB line limit


@pytest.mark.slow
async def test_a_legacy_sse_upstreams_answer_of_1_mb_arrives_whole(tmp_path: Path) -> None:
    """aiohttp's own line limit ended the stream (and every call on it) at such an answer."""
    argv = air("serve", UPSTREAM, "--transport", "sse", "--port", "0")
    with started(argv, env={"REPLICA": "sse"}) as upstream:
        config = parse_config(f"servers:\n  - name: s\n    url: {upstream.url}\n"
                              "    transport: sse\nhealth:\n  interval_s: 600\n")  # fmt: skip
        gateway = Gateway(config, store=MemoryStore())
        await gateway.start()
        try:
            text = "x" * 1_000_000  # (a request over 1 MiB makes aiohttp warn)
            result = await gateway.call_tool({"name": "echo", "arguments": {"text": text}})
            assert result["content"][0]["text"] == f"sse:{text}"
            assert (await gateway.call_tool({"name": "whoami"}))["content"][0]["text"] == "sse"
        finally:
            await gateway.stop()
