"""Hostile HTTP clients against a real ``air serve`` process (loopback only, bounded waits).

Each attack is one that once took a server down or held it: idle sockets exhausting file
descriptors (and tracebacks flooding the log), a header sent a byte at a time, huge headers,
huge bodies, deep nesting, a flood of ``initialize`` calls, and more calls than the in-flight
cap. Later changes must keep all of them passing.
"""

from __future__ import annotations

import json
import re
import resource
import select
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.aircore.conftest import DEMO, ROOT, STARTUP_TIMEOUT, serve_args

# real air serve processes, hostile clients: make test, not test-fast
pytestmark = pytest.mark.slow

WAIT = 30.0
V = "2026-07-28"
META = {
    "io.modelcontextprotocol/protocolVersion": V,
    "io.modelcontextprotocol/clientCapabilities": {},
}
JSON_HEADERS = {"content-type": "application/json", "accept": "application/json"}


class Served:
    """``air serve DEMO --transport http`` with its stderr in a file we can measure."""

    def __init__(self, tmp: Path, *extra: str, nofile: int | None = None) -> None:
        self.log = tmp / "stderr.txt"
        self._fh = self.log.open("wb")

        def limit() -> None:
            if nofile is not None:
                resource.setrlimit(resource.RLIMIT_NOFILE, (nofile, nofile))

        self.proc = subprocess.Popen(
            serve_args(DEMO, "--transport", "http", "--port", "0", "--store", "memory://", *extra),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=self._fh,
            cwd=ROOT,
            preexec_fn=limit,
        )
        deadline = time.monotonic() + STARTUP_TIMEOUT
        while True:
            found = re.search(rb"http://127\.0\.0\.1:(\d+)/mcp", self.log.read_bytes())
            if found:
                self.port = int(found.group(1))
                break
            if self.proc.poll() is not None or time.monotonic() > deadline:
                self.close()
                raise RuntimeError(f"server did not start: {self.log.read_bytes()[-2000:]!r}")
            time.sleep(0.05)
        self.base = f"http://127.0.0.1:{self.port}"

    def connect(self) -> socket.socket:
        return socket.create_connection(("127.0.0.1", self.port), timeout=WAIT)

    def discover(self, client: httpx.Client | None = None) -> int:
        """One 2026-07-28 ``server/discover`` on a fresh connection; the HTTP status."""
        body = {"jsonrpc": "2.0", "id": 1, "method": "server/discover", "params": {"_meta": META}}
        headers = {**JSON_HEADERS, "mcp-protocol-version": V, "mcp-method": "server/discover"}
        with httpx.Client(base_url=self.base, timeout=WAIT) as fresh:
            return (client or fresh).post("/mcp", json=body, headers=headers).status_code

    def close(self) -> int:
        if self.proc.poll() is None:
            self.proc.terminate()
        try:
            return self.proc.wait(timeout=STARTUP_TIMEOUT)
        finally:
            self._fh.close()


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    srv = Served(tmp_path_factory.mktemp("served"), "--header-timeout", "1", "--max-inflight", "2")
    try:
        yield srv
    finally:
        assert srv.close() == 0


def _closed_by_peer(sock: socket.socket) -> bytes:
    """Read until the server closes the connection; what it said before closing."""
    got = b""
    sock.settimeout(WAIT)
    while True:
        chunk = sock.recv(65536)
        if not chunk:
            return got
        got += chunk


def test_300_idle_sockets_neither_exhaust_descriptors_nor_flood_the_log(tmp_path: Path) -> None:
    srv = Served(tmp_path, "--header-timeout", "2", nofile=256)
    idle: list[socket.socket] = []
    try:
        for _ in range(300):
            idle.append(srv.connect())
        assert srv.discover() == 200  # still answering with every slot taken
        for sock in idle:  # each idle one is closed by the server (evicted or timed out)
            _closed_by_peer(sock)
        assert srv.discover() == 200
    finally:
        for sock in idle:
            sock.close()
        assert srv.close() == 0
    assert srv.log.stat().st_size < 64 * 1024, srv.log.read_text()[-3000:]


def test_a_header_sent_a_byte_at_a_time_is_cut_off(served: Served) -> None:
    head = b"POST /mcp HTTP/1.1\r\nHost: localhost\r\n" + b"X-Slow: " + b"a" * 4000
    sent = 0
    with served.connect() as sock:
        for byte in head:
            readable, _, _ = select.select([sock], [], [], 0.02)
            if readable:
                break  # the server answered (and hangs up)
            try:
                sock.sendall(bytes([byte]))
            except OSError:
                break
            sent += 1
        answer = _closed_by_peer(sock)
    assert answer.startswith(b"HTTP/1.1 408"), answer
    assert sent < len(head)  # the server hung up long before the header was complete


def test_a_connection_that_never_sends_a_byte_is_closed(served: Served) -> None:
    with served.connect() as sock:
        assert _closed_by_peer(sock).startswith(b"HTTP/1.1 408")


def test_headers_beyond_the_size_cap_are_refused(served: Served) -> None:
    with served.connect() as sock:
        sock.sendall(b"GET / HTTP/1.1\r\nHost: localhost\r\nX-Big: " + b"a" * (200 * 1024))
        assert _closed_by_peer(sock).startswith(b"HTTP/1.1 431")
    assert served.discover() == 200


def test_a_100_mb_body_is_refused_before_it_is_read(served: Served) -> None:
    with served.connect() as sock:
        sock.sendall(
            b"POST /mcp HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n"
            b"Content-Length: 104857600\r\n\r\n" + b"[" * 65536
        )
        answer = sock.recv(65536)
    assert answer.startswith(b"HTTP/1.1 413"), answer


def test_a_chunked_body_past_the_limit_is_refused(served: Served) -> None:
    def chunks() -> Iterator[bytes]:
        for _ in range(8):
            yield b" " * (1024 * 1024)

    with httpx.Client(base_url=served.base, timeout=WAIT) as client:
        r = client.post("/mcp", content=chunks(), headers=JSON_HEADERS)
    assert r.status_code == 413


@pytest.mark.parametrize(
    ("body", "code"),
    [
        (b"[" * 2_000_000, -32700),
        (b'{"a":' * 100_000 + b"1" + b"}" * 100_000, -32700),
        (b"{not json", -32700),
        (b'[{"jsonrpc":"2.0","id":1,"method":"ping"}]', -32600),
        (b"\xff\xfe", -32700),
    ],
)
def test_malformed_bodies_each_get_a_json_rpc_error(served: Served, body: bytes, code: int) -> None:
    with httpx.Client(base_url=served.base, timeout=WAIT) as client:
        r = client.post("/mcp", content=body, headers=JSON_HEADERS)
    assert r.json()["error"]["code"] == code
    assert served.discover() == 200


def test_calls_beyond_the_in_flight_cap_get_503_with_retry_after(served: Served) -> None:
    call = json.dumps(
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "tools/call",
            "params": {"name": "slow_task", "arguments": {"seconds": 60}, "_meta": META},
        }
    ).encode()
    head = (
        "POST /mcp HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n"
        f"Accept: application/json\r\nMcp-Protocol-Version: {V}\r\nMcp-Method: tools/call\r\n"
        f"Mcp-Name: slow_task\r\nContent-Length: {len(call)}\r\n\r\n"
    ).encode()
    slow = [served.connect() for _ in range(2)]  # the cap is two
    try:
        for sock in slow:
            sock.sendall(head + call)
        deadline = time.monotonic() + WAIT
        status = 200
        while status != 503 and time.monotonic() < deadline:
            status = served.discover()
        assert status == 503
        with httpx.Client(base_url=served.base, timeout=WAIT) as client:
            body = {"jsonrpc": "2.0", "id": 2, "method": "ping"}
            busy = client.post("/mcp", json=body, headers=JSON_HEADERS)
        assert busy.status_code == 503
        assert busy.headers["retry-after"] == "1"
    finally:
        for sock in slow:  # closing the POST cancels a 2026-07-28 call
            sock.close()
    deadline = time.monotonic() + WAIT
    while served.discover() != 200 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert served.discover() == 200


def _initialize(client: httpx.Client, name: str) -> str:
    body = {
        "jsonrpc": "2.0",
        "id": 0,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": name, "version": "1"},
        },
    }
    r = client.post("/mcp", json=body, headers=JSON_HEADERS)
    assert r.status_code == 200
    return r.headers["mcp-session-id"]


def _ping(client: httpx.Client, sid: str) -> int:
    body: dict[str, Any] = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
    headers = {**JSON_HEADERS, "mcp-session-id": sid, "mcp-protocol-version": "2025-06-18"}
    return client.post("/mcp", json=body, headers=headers).status_code


def test_a_flood_of_initialize_calls_does_not_evict_a_session_in_use(served: Served) -> None:
    with httpx.Client(base_url=served.base, timeout=WAIT) as client:
        mine = _initialize(client, "me")
        assert _ping(client, mine) == 200  # in use
        for i in range(1100):
            _initialize(client, f"flood-{i}")
        assert _ping(client, mine) == 200
        assert json.loads(client.get("/").text)["name"] == "air-demo"
