"""airhttp's server starts and stops cleanly: graceful shutdown (answers in flight finish,
streams are told the client is gone, a second stop or the grace's end cancels the rest),
SIGTERM through :func:`airhttp.serve` in a real process, the ASGI lifespan, and a clear error
without httptools."""

from __future__ import annotations

import signal
import subprocess
import sys
import textwrap
from typing import Any

import pytest

from airhttp import Message, Receive, Scope, Send, ServerError
from tests.airhttp.served import (
    WAIT,
    Probe,
    ResponseReader,
    Served,
    request,
    served,
    until_closed,
)


def test_stop_lets_an_answer_in_flight_finish_and_closes_idle_connections() -> None:
    probe = Probe()
    srv = Served(probe)
    try:
        idle = srv.connect()
        busy = srv.connect()
        busy.sendall(request("POST", "/hold", b"{}"))
        assert probe.holding.wait(WAIT)
        srv.stop()
        assert until_closed(idle) == b""  # idle: closed at once
        with pytest.raises(OSError):  # no longer accepting
            srv.connect().close()
        probe.release()
        answers = ResponseReader(busy).read_to_eof()
        assert [a.status for a in answers] == [200]
        assert answers[0].headers[b"connection"] == b"close"
        srv.join()
        idle.close()
        busy.close()
    finally:
        srv.close()


def test_stop_tells_a_streaming_app_the_client_is_gone() -> None:
    probe = Probe()
    srv = Served(probe)
    try:
        with srv.connect() as sock:
            sock.sendall(request("GET", "/stream?n=100000000"))
            sock.recv(100)
            srv.stop()
            assert probe.disconnected.wait(WAIT)
            until_closed(sock)
        srv.join()
    finally:
        srv.close()


def test_a_second_stop_cancels_what_is_still_running() -> None:
    probe = Probe()
    srv = Served(probe)
    try:
        with srv.connect() as busy:
            busy.sendall(request("POST", "/hold", b"{}"))
            assert probe.holding.wait(WAIT)
            srv.stop()
            srv.stop()
            assert until_closed(busy) == b""
        srv.join()
        assert probe.active == 0
    finally:
        srv.close()


def test_what_runs_past_the_grace_is_cancelled() -> None:
    probe = Probe()
    srv = Served(probe, grace=0.2)
    try:
        with srv.connect() as busy:
            busy.sendall(request("POST", "/hold", b"{}"))
            assert probe.holding.wait(WAIT)
            srv.stop()
            assert until_closed(busy) == b""
        srv.join()
        assert probe.active == 0
    finally:
        srv.close()


SERVE_SCRIPT = textwrap.dedent(
    """
    import asyncio, sys
    from airhttp import serve

    async def app(scope, receive, send):
        if scope["type"] != "http":
            return
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b"ok"})

    asyncio.run(serve(app, port=0, ready=lambda url: print(url, flush=True)))
    print("stopped", flush=True)
    """
)


def test_serve_answers_then_stops_on_sigterm() -> None:
    proc = subprocess.Popen([sys.executable, "-c", SERVE_SCRIPT], stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        url = proc.stdout.readline().strip()
        assert url.startswith("http://127.0.0.1:")
        import socket

        port = int(url.rsplit(":", 1)[1])
        with socket.create_connection(("127.0.0.1", port), timeout=WAIT) as sock:
            sock.sendall(request("GET", "/"))
            assert ResponseReader(sock).read(1)[0].body == b"ok"
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(WAIT) == 0
        assert proc.stdout.read().strip() == "stopped"
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait(WAIT)
        if proc.stdout is not None:
            proc.stdout.close()


class LifespanApp:
    """An app with a lifespan: startup fills the state (or fails), shutdown is recorded."""

    def __init__(self, *, fail: bool = False) -> None:
        self.fail = fail
        self.events: list[str] = []
        self.probe = Probe()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            while True:
                message: Message = await receive()
                if message["type"] == "lifespan.startup":
                    if self.fail:
                        await send({"type": "lifespan.startup.failed", "message": "no db"})
                        return
                    scope["state"]["db"] = "ready"
                    self.events.append("startup")
                    await send({"type": "lifespan.startup.complete"})
                else:
                    self.events.append("shutdown")
                    await send({"type": "lifespan.shutdown.complete"})
                    return
        await self.probe(scope, receive, send)


def test_the_lifespan_runs_around_serving_and_its_state_reaches_requests() -> None:
    app = LifespanApp()
    with served(app, lifespan=True) as srv, srv.connect() as sock:
        assert app.events == ["startup"]
        sock.sendall(request())
        [answer] = ResponseReader(sock).read(1)
        assert answer.json()["state"] == {"db": "ready"}
    assert app.events == ["startup", "shutdown"]


def test_a_failed_lifespan_startup_is_a_server_error() -> None:
    with pytest.raises(ServerError, match="no db"):
        Served(LifespanApp(fail=True), lifespan=True)


def test_without_httptools_the_server_says_what_to_install() -> None:
    script = textwrap.dedent(
        """
        import sys
        sys.modules["httptools"] = None
        from airhttp import HttpServer, ServerError
        try:
            HttpServer(lambda *a: None)
        except ServerError as exc:
            print(exc.reason)
        """
    )
    out = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=WAIT, check=True
    )
    assert "pip install httptools" in out.stdout


def test_a_lifespan_app_that_ends_at_once_fails_the_startup() -> None:
    async def no_lifespan(scope: Scope, receive: Receive, send: Send) -> Any:
        if scope["type"] == "lifespan":
            raise RuntimeError("lifespan not supported")

    with pytest.raises(ServerError, match="lifespan not supported"):
        Served(no_lifespan, lifespan=True)
