"""airhttp's HTTP/1.1 server over real loopback sockets: framing, keep-alive, pipelining,
streaming, errors and the app's view (scope, body, disconnect)."""

from __future__ import annotations

import socket
from collections.abc import Iterator

import pytest

from airhttp import Limits
from airhttp.connection import MAX_PIPELINE
from tests.airhttp.served import (
    Probe,
    ResponseReader,
    Served,
    chunked,
    request,
    served,
    until_closed,
)


@pytest.fixture(scope="module")
def probe() -> Probe:
    return Probe()


@pytest.fixture(scope="module")
def srv(probe: Probe) -> Iterator[Served]:
    with served(probe) as server:
        yield server


def test_one_connection_answers_requests_in_turn(srv: Served) -> None:
    with srv.connect() as sock:
        reader = ResponseReader(sock)
        for i in range(3):
            sock.sendall(request("POST", f"/echo?i={i}", b"body %d" % i))
            [answer] = reader.read(i + 1)[i:]
            assert answer.status == 200
            assert answer.json()["query"] == f"i={i}"
            assert answer.json()["len"] == len(b"body %d" % i)


def test_the_scope_describes_the_request(srv: Served) -> None:
    with srv.connect() as sock:
        sock.sendall(request("GET", "/echo%20me?a=1&b=%20", headers=(("X-Mixed-Case", "v"),)))
        [answer] = ResponseReader(sock).read(1)
    seen = answer.json()
    assert seen["method"] == "GET"
    assert seen["path"] == "/echo me"  # percent-decoded
    assert seen["raw_path"] == "/echo%20me"
    assert seen["query"] == "a=1&b=%20"
    assert seen["version"] == "1.1"
    assert ["x-mixed-case", "v"] in seen["headers"]  # names lower-case, as ASGI says
    assert seen["client"][0] == "127.0.0.1"
    assert seen["server"] == ["127.0.0.1", srv.port]
    assert answer.headers[b"content-length"] == str(len(answer.body)).encode()
    assert answer.headers[b"date"].endswith(b" GMT")


def test_pipelined_requests_are_answered_in_order(srv: Served) -> None:
    burst = b"".join(request("POST", f"/echo?i={i}", b"x" * i) for i in range(6))
    with srv.connect() as sock:
        sock.sendall(burst)
        answers = ResponseReader(sock).read(6)
    assert [a.json()["query"] for a in answers] == [f"i={i}" for i in range(6)]
    assert [a.json()["len"] for a in answers] == list(range(6))


def test_a_pipeline_deeper_than_the_cap_is_answered_in_part_then_closed(srv: Served) -> None:
    many = MAX_PIPELINE * 3
    with srv.connect() as sock:
        sock.sendall(b"".join(request("GET", f"/echo?i={i}") for i in range(many)))
        reader = ResponseReader(sock)
        answers = reader.read_to_eof()
    assert MAX_PIPELINE < len(answers) < many
    assert [a.json()["query"] for a in answers] == [f"i={i}" for i in range(len(answers))]
    assert answers[-1].headers.get(b"connection") == b"close"


def test_a_chunked_request_body_reaches_the_app_whole(srv: Served) -> None:
    parts = [b"a" * 10, b"b" * 70000, b"c"]
    head = request("POST", "/echo", headers=(("Transfer-Encoding", "chunked"),))
    with srv.connect() as sock:
        sock.sendall(head + chunked(parts))
        [answer] = ResponseReader(sock).read(1)
    assert answer.json()["len"] == sum(len(p) for p in parts)


def test_a_large_body_in_small_writes_arrives_intact(srv: Served) -> None:
    body = bytes(range(256)) * 2048  # 512 KiB: past the buffer, so reading pauses and resumes
    with srv.connect() as sock:
        data = request("POST", "/echo", body)
        for i in range(0, len(data), 8192):
            sock.sendall(data[i : i + 8192])
        [answer] = ResponseReader(sock).read(1)
    assert answer.json()["len"] == len(body)
    import hashlib

    assert answer.json()["sha"] == hashlib.sha256(body).hexdigest()


def test_a_streamed_answer_goes_out_in_chunked_coding(srv: Served) -> None:
    with srv.connect() as sock:
        sock.sendall(request("GET", "/stream?n=4") + request("GET", "/echo"))
        first, second = ResponseReader(sock).read(2)
    assert first.headers[b"transfer-encoding"] == b"chunked"
    assert first.body == b"chunk 0\nchunk 1\nchunk 2\nchunk 3\n"
    assert second.status == 200  # the connection went on after the stream


def test_an_http_1_0_stream_ends_with_the_connection(srv: Served) -> None:
    with srv.connect() as sock:
        sock.sendall(request("GET", "/stream?n=2", version="1.0"))
        raw = until_closed(sock)
    assert raw.startswith(b"HTTP/1.1 200")
    assert b"transfer-encoding" not in raw.lower()
    assert raw.endswith(b"\r\n\r\nchunk 0\nchunk 1\n")


def test_an_http_1_0_keep_alive_request_is_told_the_connection_stays(srv: Served) -> None:
    with srv.connect() as sock:
        sock.sendall(
            request("GET", "/echo", version="1.0", headers=(("Connection", "keep-alive"),))
        )
        [answer] = ResponseReader(sock).read(1)
        assert answer.headers[b"connection"] == b"keep-alive"
        sock.sendall(request("GET", "/echo", version="1.0"))  # no keep-alive: closed after
        raw = until_closed(sock)
    assert raw.startswith(b"HTTP/1.1 200")
    assert b"connection: close" in raw


def test_head_and_204_answers_carry_no_body(srv: Served) -> None:
    with srv.connect() as sock:
        sock.sendall(request("HEAD", "/head") + request("GET", "/nocontent") + request())
        sock.settimeout(5)
        raw = b""
        while raw.count(b"HTTP/1.1 ") < 3 or not raw.endswith(b"}"):
            raw += sock.recv(65536)
    head, nocontent, echo = raw.split(b"HTTP/1.1 ")[1:]
    assert head.startswith(b"200")
    assert head.endswith(b"\r\n\r\n")
    assert b"content-length: 5" in head
    assert nocontent.startswith(b"204")
    assert nocontent.endswith(b"\r\n\r\n")
    assert b"content-length" not in nocontent
    assert b"transfer-encoding" not in nocontent
    assert echo.startswith(b"200")


def test_expect_100_continue_gets_the_interim_answer_when_the_app_reads(srv: Served) -> None:
    body = b"x" * 100
    head = request("POST", "/echo", headers=(("Expect", "100-continue"),), length=False)
    head = head[:-2] + f"Content-Length: {len(body)}\r\n\r\n".encode()
    with srv.connect() as sock:
        sock.sendall(head)
        interim = sock.recv(65536)
        assert interim == b"HTTP/1.1 100 Continue\r\n\r\n"
        sock.sendall(body)
        [answer] = ResponseReader(sock).read(1)
    assert answer.json()["len"] == 100


@pytest.mark.parametrize("path", ["/fail", "/silent", "/badheader"])
def test_an_app_that_fails_to_answer_gets_500_and_the_server_goes_on(
    srv: Served, path: str
) -> None:
    before = srv.server.stats.app_errors
    with srv.connect() as sock:
        sock.sendall(request("GET", path))
        raw = until_closed(sock)
    assert raw.startswith(b"HTTP/1.1 500"), raw
    assert b"set-cookie" not in raw  # nothing of a header with CRLF went out
    assert srv.server.stats.app_errors == before + 1
    with srv.connect() as sock:
        sock.sendall(request())
        assert ResponseReader(sock).read(1)[0].status == 200


def test_an_unread_small_body_is_dropped_and_the_connection_stays(srv: Served) -> None:
    with srv.connect() as sock:
        head = request("POST", "/noread", length=False)[:-2] + b"Content-Length: 1000\r\n\r\n"
        sock.sendall(head)  # the body comes after the answer
        reader = ResponseReader(sock)
        [first] = reader.read(1)
        assert b"connection" not in first.headers
        sock.sendall(b"z" * 1000 + request("POST", "/echo", b"next"))
        [_, second] = reader.read(2)
    assert second.json()["len"] == 4


def test_an_unread_large_body_closes_the_connection_after_the_answer(srv: Served) -> None:
    with srv.connect() as sock:
        head = request("POST", "/noread", length=False)[:-2] + b"Content-Length: 9999999\r\n\r\n"
        sock.sendall(head + b"z" * 1000)
        answers = ResponseReader(sock).read_to_eof()
    assert [a.status for a in answers] == [200]
    assert answers[0].headers[b"connection"] == b"close"


def test_a_client_that_leaves_mid_call_is_a_disconnect_to_the_app(
    srv: Served, probe: Probe
) -> None:
    probe.disconnected.clear()
    before = probe.disconnects
    sock = srv.connect()
    sock.sendall(request("POST", "/watch", b"{}"))
    sock.close()
    assert probe.disconnected.wait(20)
    assert probe.disconnects == before + 1


def test_a_malformed_request_line_is_answered_400(srv: Served) -> None:
    with srv.connect() as sock:
        sock.sendall(b"GET / HTTP/1.1 extra\r\n\r\n")
        assert until_closed(sock).startswith(b"HTTP/1.1 400")
    with srv.connect() as sock:
        sock.sendall(b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03")  # a TLS client hello
        assert until_closed(sock).startswith(b"HTTP/1.1 400")


def test_an_absolute_form_target_that_does_not_parse_is_answered_400(srv: Served) -> None:
    """The parser lets ``http://[::1`` through; its URL parse fails in our callback: that is
    the client's bad request (400, counted), never an error of the connection."""
    with srv.connect() as sock:
        sock.sendall(b"GET http://[::1 HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        assert until_closed(sock).startswith(b"HTTP/1.1 400")
    with srv.connect() as sock:  # the server goes on
        sock.sendall(request("POST", "/echo?i=1", b"body"))
        [answer] = ResponseReader(sock).read(1)
        assert answer.status == 200
    assert srv.server.stats.bad_requests >= 1


def test_an_upgrade_request_is_answered_over_http_1_1_then_closed(srv: Served) -> None:
    with srv.connect() as sock:
        upgrade = (("Connection", "Upgrade"), ("Upgrade", "websocket"))
        sock.sendall(request("GET", "/echo", headers=upgrade) + b"\x81\x05hello")
        answers = ResponseReader(sock).read_to_eof()
    assert [a.status for a in answers] == [200]


def test_a_stream_the_client_does_not_read_stops_its_sender() -> None:
    probe = Probe()
    with served(probe) as srv, srv.connect() as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 65536)
        sock.sendall(request("GET", "/forever"))
        sock.recv(100)  # the stream started; now never read again
        srv.wait_until(lambda: _write_paused(srv), "write flow control to pause the stream")
        sent = probe.sent_chunks
        srv.wait_until(lambda: _write_paused(srv), "the stream to stay paused")
        assert probe.sent_chunks <= sent + 1  # the sender waits instead of buffering more
        assert probe.sent_chunks * 65536 < 64 * 1024 * 1024  # what was sent stayed bounded


def _write_paused(srv: Served) -> bool:
    site = srv.server._site
    return site is not None and any(c.write_paused for c in list(site.open))


def test_the_connection_cap_closes_the_oldest_idle_connection_to_make_room() -> None:
    probe = Probe()
    with served(probe, limits=Limits(max_connections=2)) as srv:
        idle = srv.connect()
        srv.wait_until(lambda: srv.server.connections == 1, "the first connection")
        busy = srv.connect()
        busy.sendall(request("POST", "/hold", b"{}"))
        assert probe.holding.wait(20)
        with srv.connect() as fresh:  # the cap is reached: the idle one is closed for it
            assert until_closed(idle) == b""
            fresh.sendall(request())
            assert ResponseReader(fresh).read(1)[0].status == 200
        assert srv.server.stats.evicted == 1
        probe.release()
        assert ResponseReader(busy).read(1)[0].status == 200  # the busy one was kept
        idle.close()
        busy.close()


def test_a_connection_beyond_the_cap_with_none_idle_gets_503() -> None:
    probe = Probe()
    with served(probe, limits=Limits(max_connections=1)) as srv:
        busy = srv.connect()
        busy.sendall(request("POST", "/hold", b"{}"))
        assert probe.holding.wait(20)
        with srv.connect() as extra:
            raw = until_closed(extra)
        assert raw.startswith(b"HTTP/1.1 503")
        assert b"retry-after: 1" in raw
        assert srv.server.stats.refused == 1
        probe.release()
        assert ResponseReader(busy).read(1)[0].status == 200
        busy.close()
