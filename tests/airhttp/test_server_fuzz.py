"""Fuzzing airhttp's server where it meets client bytes: request heads, bodies, chunked coding
and pipelined requests, sent in arbitrary pieces over real loopback sockets. It must answer
well-formed requests exactly and in order, never hang or crash on anything else, and hold
nothing once the client is gone."""

from __future__ import annotations

import contextlib
import hashlib
import socket
from collections.abc import Iterator
from typing import Any
from urllib.parse import unquote

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from airhttp import Limits, Receive, Scope, Send
from tests.airhttp.served import WAIT, ResponseReader, Served, served


class EchoApp:
    """Answers every request with what it received; counts the requests it is handling."""

    def __init__(self) -> None:
        self.active = 0

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return
        self.active += 1
        try:
            body = b""
            while True:
                message = await receive()
                if message["type"] == "http.disconnect":
                    return
                body += message.get("body", b"")
                if not message.get("more_body"):
                    break
            answer = orjson.dumps(
                {
                    "path": scope["path"],
                    "query": scope["query_string"].decode("latin-1"),
                    "len": len(body),
                    "sha": hashlib.sha256(body).hexdigest(),
                }
            )
            start = {"type": "http.response.start", "status": 200, "headers": []}
            await send(start)
            await send({"type": "http.response.body", "body": answer})
        finally:
            self.active -= 1


@pytest.fixture(scope="module")
def echo() -> EchoApp:
    return EchoApp()


@pytest.fixture(scope="module")
def srv(echo: EchoApp) -> Iterator[Served]:
    with served(echo, limits=Limits(header_timeout=5.0, max_header_bytes=16384)) as server:
        yield server


# ---- strategies ---------------------------------------------------------------------------
_UNRESERVED = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~"
segments = st.lists(
    st.text(_UNRESERVED, min_size=1, max_size=8)
    | st.binary(min_size=1, max_size=3).map(lambda b: "".join(f"%{x:02X}" for x in b)),
    max_size=4,
)
queries = st.text(_UNRESERVED + "=&%", max_size=20).filter(lambda q: "%" not in q)
header_names = st.text("abcdefghijklmnopqrstuvwxyzABCXYZ-", min_size=1, max_size=12).filter(
    lambda n: (
        n.lower() not in ("content-length", "transfer-encoding", "connection", "expect")
        and not n.lower().startswith(("upgrade", "proxy-"))
    )
)
header_values = st.text(
    "abcdefghijklmnopqrstuvwxyz ABCXYZ0123456789!#$%&'*+-.^_`|~/;=,", max_size=30
).map(str.strip)


@st.composite
def valid_request(draw: Any) -> tuple[bytes, str, str, bytes]:
    """One well-formed request: its bytes, and the path, query and body the app must see."""
    method = draw(st.sampled_from(["GET", "POST", "PUT", "DELETE", "PATCH", "OPTIONS"]))
    raw_path = "/" + "/".join(draw(segments))
    query = draw(queries)
    target = raw_path + (f"?{query}" if query else "")
    body = draw(st.binary(max_size=3000))
    headers = draw(st.lists(st.tuples(header_names, header_values), max_size=5))
    lines = [f"{method} {target} HTTP/1.1", "Host: localhost"]
    lines += [f"{k}: {v}" for k, v in headers]
    use_chunked = bool(body) and draw(st.booleans())
    if use_chunked:
        lines.append("Transfer-Encoding: chunked")
        cuts = sorted(draw(st.lists(st.integers(0, len(body)), max_size=6)))
        pieces = [body[a:b] for a, b in zip([0, *cuts], [*cuts, len(body)], strict=True)]
        ext = draw(st.sampled_from(["", ";a=b", ";x"]))
        framed = b"".join(b"%x%s\r\n%b\r\n" % (len(p), ext.encode(), p) for p in pieces if p)
        framed += b"0\r\n\r\n"
    else:
        if body or method in ("POST", "PUT", "PATCH"):
            lines.append(f"Content-Length: {len(body)}")
        framed = body
    data = ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + framed
    return data, unquote(raw_path), query, body


def _pieces(data: bytes, cuts: list[int]) -> list[bytes]:
    points = sorted({c % (len(data) + 1) for c in cuts})
    return [data[a:b] for a, b in zip([0, *points], [*points, len(data)], strict=True) if b > a]


def _send(sock: socket.socket, pieces: list[bytes]) -> None:
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    for piece in pieces:
        try:
            sock.sendall(piece)
        except OSError:
            return  # the server hung up on us: allowed for bad input


def _settled(srv: Served, echo: EchoApp) -> None:
    """Nothing is held once the client is gone: no connection, no running request."""
    srv.wait_until(lambda: srv.server.connections == 0, "every connection to close")
    srv.wait_until(lambda: echo.active == 0, "every request to end")


# ---- properties ---------------------------------------------------------------------------
@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    requests=st.lists(valid_request(), min_size=1, max_size=6),
    cuts=st.lists(st.integers(0, 1 << 20), max_size=8),
)
def test_well_formed_requests_in_any_pieces_are_answered_exactly_and_in_order(
    srv: Served, echo: EchoApp, requests: list[tuple[bytes, str, str, bytes]], cuts: list[int]
) -> None:
    stream = b"".join(r[0] for r in requests)
    with srv.connect() as sock:
        _send(sock, _pieces(stream, cuts))
        answers = ResponseReader(sock).read(len(requests))
    assert len(answers) == len(requests)
    for answer, (_data, path, query, body) in zip(answers, requests, strict=True):
        assert answer.status == 200
        seen = answer.json()
        assert seen["path"] == path
        assert seen["query"] == query
        assert seen["len"] == len(body)
        assert seen["sha"] == hashlib.sha256(body).hexdigest()
    _settled(srv, echo)


def _mutate(data: bytes, at: int, cut: int, noise: bytes) -> bytes:
    at %= len(data) + 1
    return data[:at] + noise + data[at + cut % 16 :]


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    prefix=st.lists(valid_request(), max_size=2),
    noise=st.binary(max_size=64)
    | st.sampled_from(
        [
            b"Content-Length: 5\r\nContent-Length: 6\r\n",
            b"Transfer-Encoding: chunked\r\nContent-Length: 3\r\n",
            b"Transfer-Encoding: gzip, chunked\r\n",
            b"Content-Length: -1\r\n",
            b"Content-Length: 99999999999999999999999\r\n",
            b"\r\n\r\n\r\n",
            b"ffffffffffffffffff\r\n",
            b" folded\r\n",
            b"X: \x00\r\n",
            b"GET /\r\n",
            b"Expect: 100-continue\r\n",
        ]
    ),
    at=st.integers(0, 1 << 16),
    cut=st.integers(0, 15),
    cuts=st.lists(st.integers(0, 1 << 20), max_size=6),
)
def test_damaged_requests_never_hang_crash_or_leak(
    srv: Served,
    echo: EchoApp,
    prefix: list[tuple[bytes, str, str, bytes]],
    noise: bytes,
    at: int,
    cut: int,
    cuts: list[int],
) -> None:
    stream = b"".join(r[0] for r in prefix) + b"POST /echo HTTP/1.1\r\nHost: x\r\n"
    stream = _mutate(stream + b"Content-Length: 3\r\n\r\nabc", at, cut, noise)
    with srv.connect() as sock:
        _send(sock, _pieces(stream, cuts))
        with contextlib.suppress(OSError):  # the server may have hung up already
            sock.shutdown(socket.SHUT_WR)  # no more from us: the server must close
        reader = ResponseReader(sock)
        reader.read_to_eof()  # parses as HTTP/1.1 (a malformed answer raises here)
    assert all(a.status in (200, 400, 408, 431, 500, 503) for a in reader.done)
    _settled(srv, echo)
    with srv.connect() as sock:  # still serving
        sock.sendall(b"GET /after HTTP/1.1\r\nHost: x\r\n\r\n")
        assert ResponseReader(sock).read(1)[0].status == 200


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.binary(max_size=2048), cuts=st.lists(st.integers(0, 4096), max_size=6))
def test_arbitrary_bytes_never_hang_crash_or_leak(
    srv: Served, echo: EchoApp, data: bytes, cuts: list[int]
) -> None:
    with srv.connect() as sock:
        _send(sock, _pieces(data, cuts))
        with contextlib.suppress(OSError):
            sock.shutdown(socket.SHUT_WR)
        sock.settimeout(WAIT)
        reader = ResponseReader(sock)
        reader.read_to_eof()
    _settled(srv, echo)


def test_many_pipelined_requests_in_one_write_stay_bounded(srv: Served, echo: EchoApp) -> None:
    tiny = b"GET / HTTP/1.1\r\nHost: x\r\n\r\n"
    with srv.connect() as sock:
        _send(sock, [tiny * 20000])  # ~540 KB of requests at once
        reader = ResponseReader(sock)
        answers = reader.read_to_eof()
    assert 0 < len(answers) < 100  # answered in part, then closed: not 20,000 queued
    _settled(srv, echo)
