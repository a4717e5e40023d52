"""Long-lived streams against a real ``air serve`` process with its default limits.

A stream (a 2026-07-28 ``subscriptions/listen``, a legacy ``GET /sse``) is a request in flight
for as long as the client keeps it open. With as many stream slots as in-flight slots, 256
held streams once answered every other client 503 until they were closed. The stream caps sit
below the in-flight cap: the streams beyond are refused at once, calls go on.
"""

from __future__ import annotations

import json
import re
import select
import socket
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from tests.aircore.conftest import DEMO, ROOT, STARTUP_TIMEOUT, serve_args

V = "2026-07-28"
META = {
    "io.modelcontextprotocol/protocolVersion": V,
    "io.modelcontextprotocol/clientCapabilities": {},
}
STREAMS = 300  # more than the default in-flight cap (256)
WAIT_S = 30.0


@contextmanager
def _served(tmp: Path, transport: str) -> Iterator[int]:
    log = tmp / f"{transport}.txt"
    with log.open("wb") as err:
        proc = subprocess.Popen(
            serve_args(DEMO, "--transport", transport, "--port", "0", "--store", "memory://"),
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=err, cwd=ROOT,
        )  # fmt: skip
        try:
            deadline = time.monotonic() + STARTUP_TIMEOUT
            while not (found := re.search(rb"http://127\.0\.0\.1:(\d+)/", log.read_bytes())):
                assert proc.poll() is None, log.read_text()
                assert time.monotonic() < deadline, "the server did not start"
                time.sleep(0.05)
            yield int(found.group(1))
        finally:
            proc.terminate()
            assert proc.wait(timeout=STARTUP_TIMEOUT) == 0


def _exchange(port: int, request: bytes) -> bytes:
    """Send one request on a fresh connection (closed after the answer); the answer."""
    with socket.create_connection(("127.0.0.1", port), timeout=WAIT_S) as sock:
        sock.sendall(request)
        got = b""
        while chunk := sock.recv(65536):
            got += chunk
        return got


def _post(method: str, params: dict[str, object], *, close: bool) -> bytes:
    body = json.dumps(
        {"jsonrpc": "2.0", "id": 1, "method": method, "params": {**params, "_meta": META}}
    ).encode()
    return (
        "POST /mcp HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n"
        f"Accept: application/json, text/event-stream\r\nMcp-Protocol-Version: {V}\r\n"
        f"Mcp-Method: {method}\r\nContent-Length: {len(body)}\r\n"
        f"{'Connection: close' if close else ''}\r\n\r\n"
    ).encode() + body


def _open_streams(port: int, request: bytes) -> list[socket.socket]:
    """Open STREAMS connections sending ``request``; return once each got its answer head."""
    held = []
    for _ in range(STREAMS):
        sock = socket.create_connection(("127.0.0.1", port), timeout=WAIT_S)
        sock.sendall(request)
        held.append(sock)
    for sock in held:
        readable, _, _ = select.select([sock], [], [], WAIT_S)
        assert readable, "a stream got no answer"
        assert sock.recv(12).startswith(b"HTTP/1.1 "), "not an HTTP answer"
    return held


def test_held_listen_streams_leave_room_for_calls(tmp_path: Path) -> None:
    listen = _post("subscriptions/listen", {"notifications": {"toolsListChanged": True}},
                   close=False)  # fmt: skip
    with _served(tmp_path, "http") as port:
        held = _open_streams(port, listen)
        try:
            answer = _exchange(port, _post("server/discover", {}, close=True))
            assert answer.startswith(b"HTTP/1.1 200"), answer[:200]
        finally:
            for sock in held:
                sock.close()


def test_held_sse_streams_leave_room_for_calls(tmp_path: Path) -> None:
    stream = b"GET /sse HTTP/1.1\r\nHost: localhost\r\nAccept: text/event-stream\r\n\r\n"
    status = b"GET / HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n"
    with _served(tmp_path, "sse") as port:
        held = _open_streams(port, stream)
        try:
            answer = _exchange(port, status)
            assert answer.startswith(b"HTTP/1.1 200"), answer[:200]
        finally:
            for sock in held:
                sock.close()
