"""airhttp's server holds clients to the limits: slow or oversized heads, stalled bodies and
idle keep-alive connections are cut off (real loopback sockets, short timeouts)."""

from __future__ import annotations

import select
from collections.abc import Iterator

import pytest

from airhttp import Limits
from tests.airhttp.served import Probe, ResponseReader, Served, request, served, until_closed

LIMITS = Limits(header_timeout=0.5, idle_timeout=0.5, max_header_bytes=8192)


@pytest.fixture(scope="module")
def srv() -> Iterator[Served]:
    with served(Probe(), limits=LIMITS) as server:
        yield server


def test_a_connection_that_never_sends_is_answered_408_and_closed(srv: Served) -> None:
    before = srv.server.stats.header_timeouts
    with srv.connect() as sock:
        assert until_closed(sock).startswith(b"HTTP/1.1 408")
    assert srv.server.stats.header_timeouts == before + 1


def test_a_head_sent_a_byte_at_a_time_is_cut_off(srv: Served) -> None:
    head = b"POST /echo HTTP/1.1\r\nHost: localhost\r\nX-Slow: " + b"a" * 4000
    sent = 0
    with srv.connect() as sock:
        for byte in head:
            readable, _, _ = select.select([sock], [], [], 0.01)
            if readable:
                break  # the server answered (and hangs up)
            sock.sendall(bytes([byte]))
            sent += 1
        assert until_closed(sock).startswith(b"HTTP/1.1 408")
    assert sent < len(head)


@pytest.mark.parametrize("pieces", [1, 40])
def test_a_head_over_the_size_cap_is_answered_431(srv: Served, pieces: int) -> None:
    head = b"GET /echo HTTP/1.1\r\nHost: localhost\r\n" + b"X-Big: " + b"a" * 20000
    step = len(head) // pieces + 1
    with srv.connect() as sock:
        for i in range(0, len(head), step):
            try:
                sock.sendall(head[i : i + step])
            except OSError:
                break  # the server hung up already
        assert until_closed(sock).startswith(b"HTTP/1.1 431")


def test_a_complete_head_over_the_cap_is_answered_431(srv: Served) -> None:
    many = tuple((f"X-H{i}", "v" * 100) for i in range(100))  # 100 headers, ~10 KiB
    with srv.connect() as sock:
        sock.sendall(request("GET", "/echo", headers=many))
        assert until_closed(sock).startswith(b"HTTP/1.1 431")


def test_a_head_under_the_cap_is_served(srv: Served) -> None:
    some = tuple((f"X-H{i}", "v" * 100) for i in range(40))  # ~4 KiB
    with srv.connect() as sock:
        sock.sendall(request("GET", "/echo", headers=some))
        assert ResponseReader(sock).read(1)[0].status == 200


def test_an_idle_keep_alive_connection_is_closed_quietly(srv: Served) -> None:
    with srv.connect() as sock:
        sock.sendall(request())
        reader = ResponseReader(sock)
        assert reader.read(1)[0].status == 200
        assert reader.read_to_eof() == reader.done[:1]  # closed, no 408 after an answer


def test_a_body_that_stops_arriving_is_cut_off(srv: Served) -> None:
    before = srv.server.stats.body_timeouts
    with srv.connect() as sock:
        head = request("POST", "/echo", length=False)[:-2] + b"Content-Length: 100\r\n\r\n"
        sock.sendall(head + b"x" * 10)
        assert until_closed(sock).startswith(b"HTTP/1.1 408")
    assert srv.server.stats.body_timeouts == before + 1


def test_a_body_trickled_a_byte_at_a_time_is_cut_off(srv: Served) -> None:
    # a byte every 50 ms never stops arriving for the header timeout, so the body once held
    # its connection as long as the client liked (a slowloris on the body)
    before = srv.server.stats.body_timeouts
    with srv.connect() as sock:
        sock.sendall(
            request("POST", "/echo", length=False)[:-2] + b"Content-Length: 100000\r\n\r\n"
        )
        cut_while_trickling = False
        for _ in range(400):  # 20 s of trickling: a bound that only a server that never cuts hits
            readable, _, _ = select.select([sock], [], [], 0.05)
            if readable:
                cut_while_trickling = True  # the server answered (and hangs up)
                break
            sock.sendall(b"x")
        assert until_closed(sock).startswith(b"HTTP/1.1 408")
        assert cut_while_trickling
    assert srv.server.stats.body_timeouts == before + 1


def test_the_server_still_answers_after_every_attack(srv: Served) -> None:
    with srv.connect() as sock:
        sock.sendall(request())
        assert ResponseReader(sock).read(1)[0].status == 200
    srv.wait_until(lambda: srv.server.connections == 0, "every connection to close")
