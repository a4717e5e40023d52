"""The dashboard as an attacker sees it: DNS rebinding, foreign origins, slow headers, piles of
idle connections and oversized bodies are refused, and the page keeps answering."""

from __future__ import annotations

import asyncio
import contextlib
import os
import select
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from airhttp import Limits
from airmeter import CALLS_NAMESPACE
from airstore import FileStore
from dashboard.guard import HostOriginGuard, dashboard_policy
from dashboard.reader import SyncReader
from dashboard.server import DashboardServer
from dashboard.wsgi_server import LimitedWSGIServer
from tests.air_process import serving

WAIT_S = 20.0


@pytest.fixture
def store_url(tmp_path: Path) -> str:
    async def create() -> None:
        async with FileStore(tmp_path / "data") as store:
            await store.append(CALLS_NAMESPACE, {"tool": "echo", "layer": "L1", "ok": True})

    asyncio.run(create())
    return f"file://{tmp_path}/data"


@contextmanager
def _dashboard(store_url: str, limits: Limits) -> Iterator[DashboardServer]:
    reader = SyncReader.open(store_url)
    with DashboardServer(reader, store_url=store_url, port=0, limits=limits) as server:
        yield server


def _update_body() -> dict[str, object]:
    return {"output": "custom-range.style", "outputs": {"id": "custom-range", "property": "style"},
            "inputs": [{"id": "range", "property": "value", "value": "1h"}],
            "changedPropIds": ["range.value"]}  # fmt: skip


def test_a_dns_rebinding_request_or_a_foreign_origin_is_refused(store_url: str) -> None:
    with serving("dashboard", "--store", store_url, "--port", "0") as url:
        port = url.rsplit(":", 1)[1].strip("/")
        with httpx.Client(base_url=url, timeout=WAIT_S) as http:
            assert http.get("/").status_code == 200
            assert http.get("/", headers={"Host": f"localhost:{port}"}).status_code == 200
            rebound = http.get("/_dash-layout", headers={"Host": f"attacker.example:{port}"})
            assert rebound.status_code == 421
            assert "store-url" not in rebound.text
            update = "/_dash-update-component"
            own = http.post(update, json=_update_body(), headers={"Origin": url.rstrip("/")})
            assert own.status_code == 200
            foreign = http.post(
                update, json=_update_body(), headers={"Origin": "https://attacker.example"}
            )
            assert foreign.status_code == 403
            evil = f"attacker.example:{port}"  # a rebound page: its own origin, not our Host
            same_name = http.post(
                update, json=_update_body(), headers={"Origin": f"http://{evil}", "Host": evil}
            )
            assert same_name.status_code == 421


def _closed_by_server(sock: socket.socket) -> bool:
    readable, _, _ = select.select([sock], [], [], 0)
    if not readable:
        return False
    try:
        return sock.recv(1024) == b""
    except ConnectionError:
        return True


def test_a_client_trickling_its_headers_is_cut_off(store_url: str) -> None:
    limits = Limits(header_timeout=1.0, idle_timeout=1.0)
    with _dashboard(store_url, limits) as server:
        sock = socket.create_connection(("127.0.0.1", server.port), timeout=WAIT_S)
        try:
            sock.sendall(b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ")
            closed = False
            give_up = time.monotonic() + WAIT_S
            while not closed and time.monotonic() < give_up:
                try:
                    sock.sendall(b"a")  # one byte at a time, never finishing the headers
                except OSError:
                    closed = True
                    break
                closed = _closed_by_server(sock)
                time.sleep(0.1)
            assert closed, "the server kept a connection that never finished its headers"
        finally:
            sock.close()
        assert httpx.get(server.url, timeout=WAIT_S).status_code == 200


def test_busy_connections_beyond_the_cap_get_503_and_service_resumes(store_url: str) -> None:
    limits = Limits(max_connections=3, max_inflight=3, header_timeout=60.0)
    with _dashboard(store_url, limits) as server:
        release = threading.Event()
        held = threading.Semaphore(0)

        def hold() -> str:  # a request the app is still answering
            held.release()
            release.wait(WAIT_S)
            return "held"

        server.app.server.add_url_rule("/hold", "hold", hold)
        busy_socks = [socket.create_connection(("127.0.0.1", server.port)) for _ in range(3)]
        try:
            for sock in busy_socks:
                sock.sendall(b"GET /hold HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
            for _ in busy_socks:
                assert held.acquire(timeout=WAIT_S)
            busy = httpx.get(server.url, timeout=WAIT_S)
            assert busy.status_code == 503
            assert busy.headers["retry-after"] == "1"
        finally:
            release.set()
            for sock in busy_socks:
                sock.close()
        deadline = time.monotonic() + WAIT_S
        while time.monotonic() < deadline:  # the slots come back as the handlers finish
            if httpx.get(server.url, timeout=WAIT_S).status_code == 200:
                break
            time.sleep(0.05)
        else:
            pytest.fail("the dashboard did not answer again after the busy clients left")
        assert server._wsgi.refused >= 1


def _until_waiting(wsgi: LimitedWSGIServer, client: socket.socket) -> None:
    """Until the server holds ``client``'s connection as waiting for the rest of its head,
    every byte sent so far taken (unread bytes make a connection "not idle", skipped when room
    is made: which one goes first would otherwise depend on its thread's timing)."""
    deadline = time.monotonic() + WAIT_S
    while time.monotonic() < deadline:
        with wsgi._lock:
            waiting = list(wsgi._idle)
        for sock in waiting:
            with contextlib.suppress(OSError):
                if (
                    sock.getpeername() == client.getsockname()
                    and not select.select([sock], [], [], 0)[0]
                ):
                    return
        time.sleep(0.01)  # the server's threads give no event to wait on
    raise AssertionError("the server never held the connection as waiting for its head")


def test_connections_whose_head_is_still_arriving_make_room_at_the_cap(store_url: str) -> None:
    # a head trickled in (slowloris) once held its slot as if it were being answered
    limits = Limits(max_connections=3, max_inflight=3, header_timeout=60.0)
    with _dashboard(store_url, limits) as server:
        slow = [socket.create_connection(("127.0.0.1", server.port)) for _ in range(3)]
        try:
            for sock in slow:
                sock.sendall(b"GET / HTTP/1.1\r\n")  # and never the rest of the head
                _until_waiting(server._wsgi, sock)  # so the oldest is the first one sent
            for _ in range(6):
                assert httpx.get(server.url, timeout=WAIT_S).status_code == 200
            assert server._wsgi.evicted >= 1
            slow[0].settimeout(WAIT_S)
            assert slow[0].recv(1) == b""  # the oldest went first
        finally:
            for sock in slow:
                sock.close()


def test_a_declared_body_above_the_cap_gets_413(store_url: str) -> None:
    limits = Limits(max_body=1024)
    with _dashboard(store_url, limits) as server:
        sock = socket.create_connection(("127.0.0.1", server.port), timeout=WAIT_S)
        try:
            sock.sendall(
                b"POST /_dash-update-component HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                b"Content-Type: application/json\r\nContent-Length: 104857600\r\n\r\n{"
            )
            assert sock.recv(64).startswith(b"HTTP/1.1 413 ")
        finally:
            sock.close()


_HEADER = st.text(st.characters(min_codepoint=32, max_codepoint=126), max_size=80)


@settings(max_examples=300, deadline=None)
@given(host=st.one_of(st.none(), _HEADER), origin=st.one_of(st.none(), _HEADER))
def test_the_guard_never_lets_a_foreign_host_or_origin_through(
    host: str | None, origin: str | None
) -> None:
    guard = HostOriginGuard(
        lambda env, start: [b"ok"], policy=dashboard_policy("127.0.0.1"), max_body=1024
    )
    environ = {k: v for k, v in (("HTTP_HOST", host), ("HTTP_ORIGIN", origin)) if v is not None}
    refused = guard.refusal(environ)
    if refused is None:  # let through: the Host names this machine, the Origin is local or ours
        assert host is not None
        assert any(name in host.lower() for name in ("localhost", "127.0.0.1", "::1"))
        if origin is not None:
            assert any(name in origin.lower() for name in ("localhost", "127.0.0.1", "::1"))
    else:
        assert refused.status in (403, 421)


@pytest.mark.parametrize("host", ["127.0.0.1:8050", "localhost:8050", "[::1]:8050", "localhost"])
def test_the_guard_lets_the_page_itself_through(host: str) -> None:
    guard = HostOriginGuard(
        lambda env, start: [b"ok"], policy=dashboard_policy("127.0.0.1"), max_body=1024
    )
    assert guard.refusal({"HTTP_HOST": host}) is None
    assert guard.refusal({"HTTP_HOST": host, "HTTP_ORIGIN": f"http://{host}"}) is None


def test_the_token_can_come_from_the_environment_out_of_the_process_list(
    store_url: str, tmp_path: Path
) -> None:
    env = {**os.environ, "AIR_DASHBOARD_TOKEN": "s3cret-from-env"}
    with (
        serving("dashboard", "--store", store_url, "--port", "0", env=env) as url,
        httpx.Client(base_url=url, timeout=WAIT_S) as http,
    ):
        assert http.get("/").status_code == 401
        bearer = {"Authorization": "Bearer s3cret-from-env"}
        assert http.get("/", headers=bearer).status_code == 200
