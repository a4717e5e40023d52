"""Bodies being received are bounded and must keep a minimum rate after a short grace, whoever
sends them (loopback included): the body arriving longest is cut when the bound is reached,
and a request whose body arrived whole is served meanwhile (real loopback sockets)."""

from __future__ import annotations

import select
import socket
from collections.abc import Iterator

import pytest

from airhttp import Limits
from tests.airhttp.served import Probe, ResponseReader, Served, request, served, until_closed

# long header/idle timeouts: only the bound on bodies (or the body rate) can cut a body here
LIMITS = Limits(header_timeout=60, idle_timeout=60, max_receiving=2, max_inflight=16)


@pytest.fixture
def srv() -> Iterator[Served]:
    with served(Probe(), limits=LIMITS) as server:
        yield server


def _slow_body(srv: Served, socks: list[socket.socket]) -> socket.socket:
    """A connection whose POST declared 1000 bytes and sent 10 (the body is arriving)."""
    sock = srv.connect()
    socks.append(sock)
    before, cut = srv.server.receiving, srv.server.stats.bodies_cut
    sock.sendall(request("POST", "/echo", length=False)[:-2] + b"Content-Length: 1000\r\n\r\n")
    sock.sendall(b"x" * 10)
    srv.wait_until(
        lambda: srv.server.receiving > before or srv.server.stats.bodies_cut > cut,
        "the body to be counted",
    )
    return sock


def _open(sock: socket.socket) -> bool:
    readable, _, _ = select.select([sock], [], [], 0)
    return not readable


@pytest.fixture
def socks() -> Iterator[list[socket.socket]]:
    opened: list[socket.socket] = []
    try:
        yield opened
    finally:
        for sock in opened:
            sock.close()


def test_a_body_beyond_the_bound_cuts_the_one_arriving_longest(
    srv: Served, socks: list[socket.socket]
) -> None:
    first, second = _slow_body(srv, socks), _slow_body(srv, socks)
    assert srv.server.receiving == 2
    third = srv.connect()
    socks.append(third)
    third.sendall(request("POST", "/echo", length=False)[:-2] + b"Content-Length: 1000\r\n\r\n")
    assert until_closed(first).startswith(b"HTTP/1.1 408")
    assert srv.server.stats.bodies_cut == 1
    assert _open(second)
    third.sendall(b"y" * 1000)  # the newest body completes and is answered
    assert ResponseReader(third).read(1)[0].json()["len"] == 1000


def test_a_request_whose_body_arrives_whole_is_served_while_the_bound_is_full(
    srv: Served, socks: list[socket.socket]
) -> None:
    held = [_slow_body(srv, socks), _slow_body(srv, socks)]
    for _ in range(20):
        with srv.connect() as sock:
            sock.sendall(request("POST", "/echo", b'{"whole": true}'))
            assert ResponseReader(sock).read(1)[0].status == 200
    assert srv.server.stats.bodies_cut == 0
    assert all(_open(sock) for sock in held)


def test_a_body_slower_than_the_minimum_rate_is_cut_after_a_short_grace(srv: Served) -> None:
    # 20 bytes a second never stops arriving for the (60 s) header timeout; the grace before
    # the minimum rate applies was the header timeout, so it held its connection a minute
    before = srv.server.stats.body_timeouts
    with srv.connect() as sock:
        sock.sendall(request("POST", "/echo", length=False)[:-2] + b"Content-Length: 9999\r\n\r\n")
        cut_while_trickling = False
        for _ in range(400):  # 20 s: only a server that never cuts before the minute gets here
            readable, _, _ = select.select([sock], [], [], 0.05)
            if readable:
                cut_while_trickling = True
                break
            sock.sendall(b"x")
        assert cut_while_trickling
        assert until_closed(sock).startswith(b"HTTP/1.1 408")
    assert srv.server.stats.body_timeouts == before + 1


def test_connections_closing_after_an_error_answer_make_room_for_new_ones(
    socks: list[socket.socket],
) -> None:
    # a request held for the fast hook (small declared body) keeps its connection busy
    # after the cut, until it closes: it must not count against the cap meanwhile
    limits = Limits(header_timeout=60, idle_timeout=60, max_connections=4, max_receiving=1)
    with served(Probe(), limits=limits, fast=lambda scope, body: None) as srv:
        for _ in range(4):  # each new body cuts the previous one: it lingers, closing
            _slow_body(srv, socks)
        assert srv.server.stats.bodies_cut == 3
        with srv.connect() as sock:  # at the cap: a lingering one makes room
            sock.sendall(request())
            assert ResponseReader(sock).read(1)[0].status == 200
