"""A 2026-07-28 HTTP upstream whose tools attack the gateway's memory (raw asyncio, so every
byte is ours). ``ok`` answers normally; ``huge_chunk`` declares a chunk of ``fffffffff`` bytes
in a JSON answer and streams it; ``huge_sse_chunk`` does the same in an SSE answer;
``endless_line`` streams an SSE answer in normal chunks that never hold a newline;
``other_id`` answers with a result for another request id (JSON), ``other_id_sse`` streams such
a result before its own answer (SSE; ``other_id_sse_sized`` sends that stream with a
Content-Length, as a buffering server does). The
attacks stream up to ``ATTACK_MB`` (default 1024) MiB, then stop; the gateway should have
closed the connection long before. Prints its URL on stderr (``procs.started`` reads it)."""

from __future__ import annotations

import asyncio
import json
import os
import sys

MODERN = "2026-07-28"
BLOCK = b"x" * (1024 * 1024)
ATTACK_MB = int(os.environ.get("ATTACK_MB", "1024"))
TOOLS = [
    {"name": name, "inputSchema": {"type": "object"}}
    for name in (
        "ok",
        "huge_chunk",
        "huge_sse_chunk",
        "endless_line",
        "other_id",
        "other_id_sse",
        "other_id_sse_sized",
    )
]


async def _request(reader: asyncio.StreamReader) -> dict[str, object]:
    head = await reader.readuntil(b"\r\n\r\n")
    length = 0
    for line in head.split(b"\r\n"):
        if line.lower().startswith(b"content-length:"):
            length = int(line.split(b":", 1)[1])
    message: dict[str, object] = json.loads(await reader.readexactly(length))
    return message


def _json(body: dict[str, object]) -> bytes:
    data = json.dumps(body).encode()
    return (b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\n"
            b"content-length: %d\r\n\r\n%s" % (len(data), data))  # fmt: skip


def _result(msg_id: object, result: dict[str, object]) -> bytes:
    return _json({"jsonrpc": "2.0", "id": msg_id, "result": {**result, "resultType": "complete"}})


async def _stream(writer: asyncio.StreamWriter, kind: bytes, first: bytes, block: bytes) -> None:
    writer.write(b"HTTP/1.1 200 OK\r\ncontent-type: " + kind + b"\r\n"
                 b"transfer-encoding: chunked\r\n\r\n" + first)  # fmt: skip
    for _ in range(ATTACK_MB):
        writer.write(block)
        await writer.drain()  # raises once the gateway closed the connection


def _other(msg_id: object) -> object:
    """An id that is not ``msg_id``."""
    return f"{msg_id}-not-yours"


async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        while True:
            message = await _request(reader)
            msg_id, method = message.get("id"), message.get("method")
            params = message.get("params")
            name = params.get("name") if isinstance(params, dict) else None
            if method == "server/discover":
                writer.write(_result(msg_id, {
                    "supportedVersions": [MODERN], "capabilities": {"tools": {}},
                    "serverInfo": {"name": "hostile", "version": "1"}}))  # fmt: skip
            elif method == "tools/list":
                writer.write(_result(msg_id, {"tools": TOOLS}))
            elif method == "tools/call" and name == "ok":
                writer.write(_result(msg_id, {"content": [{"type": "text", "text": "fine"}]}))
            elif method == "tools/call" and name == "huge_chunk":
                await _stream(writer, b"application/json", b"fffffffff\r\n", BLOCK)
            elif method == "tools/call" and name == "huge_sse_chunk":
                await _stream(writer, b"text/event-stream", b"fffffffff\r\ndata: ", BLOCK)
            elif method == "tools/call" and name == "endless_line":
                chunk = b"%x\r\n%s\r\n" % (len(BLOCK), BLOCK)
                await _stream(writer, b"text/event-stream", b"6\r\ndata: \r\n", chunk)
            elif method == "tools/call" and name == "other_id":
                writer.write(
                    _result(_other(msg_id), {"content": [{"type": "text", "text": "not yours"}]})
                )
            elif method == "tools/call" and name in ("other_id_sse", "other_id_sse_sized"):
                events = b"".join(
                    b"event: message\r\ndata: " + json.dumps(
                        {"jsonrpc": "2.0", "id": answered, "result": {
                            "content": [{"type": "text", "text": text}], "resultType": "complete"}}
                    ).encode() + b"\r\n\r\n"
                    for answered, text in ((_other(msg_id), "not yours"), (msg_id, "yours"))
                )  # fmt: skip
                head = b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n"
                if name == "other_id_sse_sized":  # the whole stream at once, its length said
                    writer.write(head + b"content-length: %d\r\n\r\n%s" % (len(events), events))
                else:
                    writer.write(head + b"transfer-encoding: chunked\r\n\r\n%x\r\n%s\r\n0\r\n\r\n"
                                 % (len(events), events))  # fmt: skip
            elif "id" in message:
                writer.write(_json({"jsonrpc": "2.0", "id": msg_id,
                                    "error": {"code": -32601, "message": "no"}}))  # fmt: skip
            else:
                writer.write(b"HTTP/1.1 202 Accepted\r\ncontent-length: 0\r\n\r\n")
            await writer.drain()
    except (OSError, asyncio.IncompleteReadError):
        pass
    finally:
        writer.close()


async def main() -> None:
    server = await asyncio.start_server(serve, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    print(f"hostile upstream on http://127.0.0.1:{port}/mcp", file=sys.stderr, flush=True)
    async with server:
        await server.serve_forever()


if __name__ == "__main__":
    asyncio.run(main())
