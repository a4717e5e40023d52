"""airhttp's raw-request hook (``HttpServer(fast=...)``) over real loopback sockets: it sees a
request once its whole body is in, answers in one piece or leaves the request (body and all) to
the ASGI app, keeps the order of a pipeline, is cancelled when the client goes, and sits behind
the same guard as the app."""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import socket
import threading
from collections.abc import Coroutine, Iterator
from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from airhttp import AccessPolicy, Answer, GuardedApp, Limits, Message, Scope
from airhttp.exchange import HIGH_WATER
from tests.airhttp.served import WAIT, ResponseReader, Served, chunked, request, served
from tests.airhttp.test_server_fuzz import EchoApp, _pieces, _send


def _describe(scope: Scope, body: bytes, via: str) -> bytes:
    return orjson.dumps(
        {
            "via": via,
            "path": scope["path"],
            "query": scope["query_string"].decode("latin-1"),
            "len": len(body),
            "sha": hashlib.sha256(body).hexdigest(),
        }
    )


class Fast:
    """A hook taking ``/fast…`` paths: ``/fast/hold`` waits for :meth:`release` (or the
    client to go), ``/fast/fail`` raises before answering, ``/fast/raise`` raises at once,
    ``/fast/evil`` answers a header with CRLF; the rest answer what they got."""

    def __init__(self) -> None:
        self.offered: list[tuple[str, int]] = []
        self.active = 0
        self.cancelled = threading.Event()
        self.holding = threading.Event()
        self.loop: asyncio.AbstractEventLoop | None = None
        self._release: asyncio.Event | None = None

    def release(self) -> None:
        assert self.loop is not None
        assert self._release is not None
        self.loop.call_soon_threadsafe(self._release.set)

    def __call__(self, scope: Scope, body: bytes) -> Coroutine[Any, Any, Answer] | None:
        self.offered.append((scope["path"], len(body)))
        if not scope["path"].startswith("/fast"):
            return None
        if scope["path"] == "/fast/raise":
            raise RuntimeError("the hook fails on purpose")
        return self._answer(scope, body)

    async def _answer(self, scope: Scope, body: bytes) -> Answer:
        self.active += 1
        try:
            path = scope["path"]
            if path == "/fast/hold":
                self.loop = asyncio.get_running_loop()
                if self._release is None:
                    self._release = asyncio.Event()
                self.holding.set()
                try:
                    await self._release.wait()
                except asyncio.CancelledError:
                    self.cancelled.set()
                    raise
            if path == "/fast/fail":
                await asyncio.sleep(0)
                raise ValueError("the answer fails on purpose")
            if path == "/fast/evil":
                return 200, [(b"x-evil", b"a\r\nset-cookie: b")], b"{}"
            headers = [(b"content-type", b"application/json")]
            return 200, headers, _describe(scope, body, "fast")
        finally:
            self.active -= 1


class App(EchoApp):
    """The echo app, saying it answered."""

    async def __call__(self, scope: Scope, receive: Any, send: Any) -> None:
        async def marked(message: Message) -> None:
            if message["type"] == "http.response.body":
                seen = orjson.loads(message["body"])
                message = {**message, "body": orjson.dumps({**seen, "via": "app"})}
            await send(message)

        await super().__call__(scope, receive, marked)


@pytest.fixture(scope="module")
def fast() -> Fast:
    return Fast()


@pytest.fixture(scope="module")
def app() -> App:
    return App()


@pytest.fixture(scope="module")
def srv(app: App, fast: Fast) -> Iterator[Served]:
    limits = Limits(header_timeout=5.0, max_header_bytes=16384)
    with served(app, limits=limits, fast=fast) as server:
        yield server


def _one(srv: Served, data: bytes) -> Any:
    with srv.connect() as sock:
        sock.sendall(data)
        [answer] = ResponseReader(sock).read(1)
    return answer


def _settled(srv: Served, app: App, fast: Fast) -> None:
    srv.wait_until(lambda: srv.server.connections == 0, "every connection to close")
    srv.wait_until(lambda: app.active == 0 and fast.active == 0, "every request to end")


def test_the_hook_answers_in_one_piece_with_the_servers_headers(srv: Served) -> None:
    answer = _one(srv, request("POST", "/fast/x?q=1", b"hello"))
    assert answer.status == 200
    expected = _describe({"path": "/fast/x", "query_string": b"q=1"}, b"hello", "fast")
    assert answer.json() == orjson.loads(expected)
    assert answer.headers[b"content-length"] == str(len(answer.body)).encode()
    assert answer.headers[b"date"].endswith(b" GMT")
    assert answer.headers[b"content-type"] == b"application/json"


def test_a_request_the_hook_leaves_reaches_the_app_with_its_body(srv: Served) -> None:
    body = b"z" * 5000
    answer = _one(srv, request("POST", "/other", body))
    seen = answer.json()
    assert (seen["via"], seen["len"], seen["sha"]) == (
        "app",
        5000,
        hashlib.sha256(body).hexdigest(),
    )


def test_the_hook_sees_a_body_sent_in_pieces_only_once_it_is_whole(srv: Served, fast: Fast) -> None:
    body = b"0123456789" * 100
    data = request("POST", "/fast/pieces", body)
    with srv.connect() as sock:
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        for i in range(0, len(data), 97):
            sock.sendall(data[i : i + 97])
        [answer] = ResponseReader(sock).read(1)
    assert answer.json()["len"] == len(body)
    assert ("/fast/pieces", len(body)) in fast.offered
    assert not [o for o in fast.offered if o[0] == "/fast/pieces" and o[1] != len(body)]


@pytest.mark.parametrize(
    "data",
    [
        request("POST", "/fast/big", b"b" * (HIGH_WATER + 1)),
        request("POST", "/fast/chunked", chunked([b"ab", b"cd"]),
                headers=(("Transfer-Encoding", "chunked"),), length=False),
        request("POST", "/fast/expect", b"abc", headers=(("Expect", "100-continue"),)),
    ],
    ids=["over-64KiB", "chunked", "expect-100-continue"],
)  # fmt: skip
def test_bodies_that_cannot_wait_go_to_the_app_without_the_hook(
    srv: Served, fast: Fast, data: bytes
) -> None:
    path = data.split(b" ")[1].decode()
    answer = _one(srv, data)
    assert answer.status == 200
    assert answer.json()["via"] == "app"
    assert all(p != path for p, _ in fast.offered)


def test_pipelined_requests_for_the_hook_and_the_app_are_answered_in_order(srv: Served) -> None:
    paths = ["/fast/a", "/b", "/fast/c", "/fast/d", "/e", "/f", "/fast/g"]
    burst = b"".join(request("POST", p, p.encode() * 3) for p in paths)
    with srv.connect() as sock:
        sock.sendall(burst)
        answers = ResponseReader(sock).read(len(paths))
    assert [a.json()["path"] for a in answers] == paths
    assert [a.json()["via"] for a in answers] == [
        "fast" if p.startswith("/fast") else "app" for p in paths
    ]
    assert [a.json()["len"] for a in answers] == [3 * len(p) for p in paths]


def test_a_head_request_answered_by_the_hook_has_no_body(srv: Served) -> None:
    with srv.connect() as sock:
        sock.sendall(request("HEAD", "/fast/h") + request("GET", "/fast/after"))
        data = b""
        sock.settimeout(WAIT)
        while data.count(b"HTTP/1.1 200") < 2 or not data.endswith(b"}"):
            chunk = sock.recv(65536)
            assert chunk, "the server closed early"
            data += chunk
    head, rest = data.split(b"\r\n\r\n", 1)
    assert b"content-length: " in head.lower()
    assert rest.startswith(b"HTTP/1.1 200")  # no body between the two answers
    assert b'"/fast/after"' in rest


def test_a_failing_hook_answers_500_and_the_server_keeps_serving(
    srv: Served, app: App, fast: Fast
) -> None:
    before = srv.server.stats.app_errors
    for path in ("/fast/raise", "/fast/fail", "/fast/evil"):
        answer = _one(srv, request("POST", path, b"x"))
        assert answer.status == 500
    assert srv.server.stats.app_errors == before + 3
    _settled(srv, app, fast)
    assert _one(srv, request("POST", "/fast/ok", b"y")).json()["via"] == "fast"


def test_the_clients_leaving_cancels_the_hooks_answer(srv: Served, app: App, fast: Fast) -> None:
    fast.cancelled.clear()
    fast.holding.clear()
    with srv.connect() as sock:
        sock.sendall(request("POST", "/fast/hold", b"wait"))
        assert fast.holding.wait(WAIT)
    assert fast.cancelled.wait(WAIT)
    _settled(srv, app, fast)


def test_an_answer_in_flight_finishes_when_the_server_stops(app: App) -> None:
    hook = Fast()
    srv = Served(app, fast=hook, grace=WAIT)  # the answer, not the grace, ends the stop
    try:
        with srv.connect() as sock:
            sock.sendall(request("POST", "/fast/hold", b"w"))
            assert hook.holding.wait(WAIT)
            srv.stop()
            srv.wait_until(lambda: srv.server._site is not None and srv.server._site.closing,
                           "the server to start stopping")  # fmt: skip
            hook.release()
            [answer] = ResponseReader(sock).read(1)
        assert answer.status == 200
        assert answer.headers[b"connection"] == b"close"
    finally:
        srv.close()


# ---- behind the guard -----------------------------------------------------------------------
@pytest.fixture(scope="module")
def guarded() -> Iterator[tuple[Served, GuardedApp, Fast]]:
    hook = Fast()
    guard = GuardedApp(App(), policy=AccessPolicy(token="s3cret-token-for-tests"),
                       limits=Limits(max_body=100, max_inflight=1))  # fmt: skip
    with served(guard, fast=guard.guard_fast(hook)) as server:
        yield server, guard, hook


_AUTH = ("Authorization", "Bearer s3cret-token-for-tests")


@pytest.mark.parametrize(
    ("headers", "body", "status"),
    [
        ((), b"x", 401),
        ((("Authorization", "Bearer wrong"),), b"x", 401),
        ((_AUTH, ("Origin", "https://evil.example")), b"x", 403),
        ((_AUTH,), b"x" * 101, 413),
    ],
    ids=["no-token", "wrong-token", "foreign-origin", "body-over-the-limit"],
)
def test_a_request_the_guard_refuses_never_reaches_the_hook(
    guarded: tuple[Served, GuardedApp, Fast],
    headers: tuple[tuple[str, str], ...],
    body: bytes,
    status: int,
) -> None:
    srv, guard, hook = guarded
    hook.offered.clear()
    refused = guard.refused
    answer = _one(srv, request("POST", "/fast/x", body, headers=headers))
    assert answer.status == status
    assert hook.offered == []
    assert guard.refused == refused + 1


def test_the_hooks_answers_count_in_flight_under_the_guard(
    guarded: tuple[Served, GuardedApp, Fast],
) -> None:
    srv, guard, hook = guarded
    hook.holding.clear()
    with srv.connect() as first:
        first.sendall(request("POST", "/fast/hold", b"1", headers=(_AUTH,)))
        assert hook.holding.wait(WAIT)
        assert guard.inflight == 1
        busy = _one(srv, request("POST", "/fast/x", b"2", headers=(_AUTH,)))
        assert busy.status == 503  # the cap is 1: the guard's app answers it
        hook.release()
        [answer] = ResponseReader(first).read(1)
    assert answer.status == 200
    srv.wait_until(lambda: guard.inflight == 0, "the in-flight count to fall")
    assert _one(srv, request("POST", "/fast/y", b"3", headers=(_AUTH,))).json()["via"] == "fast"


# ---- fuzzed ----------------------------------------------------------------------------------
@st.composite
def mixed_request(draw: Any) -> tuple[bytes, str, str, int]:
    """A well-formed request for the hook or the app, and what must answer it."""
    path = draw(st.sampled_from(["/fast/a", "/fast/b/c", "/x", "/fast"]))
    method = draw(st.sampled_from(["GET", "POST", "PUT", "DELETE"]))
    body = draw(st.binary(max_size=2000))
    use_chunked = bool(body) and draw(st.booleans())
    if use_chunked:
        data = request(method, path, chunked([body[:7], body[7:]]), length=False,
                       headers=(("Transfer-Encoding", "chunked"),))  # fmt: skip
    else:
        data = request(method, path, body)
    via = "fast" if path.startswith("/fast") and not use_chunked else "app"
    return data, path, via, len(body)


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    requests=st.lists(mixed_request(), min_size=1, max_size=6),
    cuts=st.lists(st.integers(0, 1 << 20), max_size=8),
)
def test_mixed_requests_in_any_pieces_are_answered_exactly_and_in_order(
    srv: Served, app: App, fast: Fast, requests: list[tuple[bytes, str, str, int]], cuts: list[int]
) -> None:
    stream = b"".join(r[0] for r in requests)
    with srv.connect() as sock:
        _send(sock, _pieces(stream, cuts))
        answers = ResponseReader(sock).read(len(requests))
    assert [(a.status, a.json()["path"], a.json()["via"], a.json()["len"]) for a in answers] == [
        (200, path, via, length) for _data, path, via, length in requests
    ]
    with contextlib.suppress(OSError):
        sock.close()
    _settled(srv, app, fast)
