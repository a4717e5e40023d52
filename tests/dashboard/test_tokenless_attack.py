"""A client without the token cannot lock a token-protected dashboard out (issue 31, item 5):
300 reconnecting slowloris connections once left 0 of 8 real requests served, an endless
chunked body 1 of 8. Requests are refused at their headers, before any body is read, and
slow heads and bodies are bounded as on ``air serve`` (a real dashboard server)."""

from __future__ import annotations

import asyncio
import socket
from collections.abc import Iterator

import httpx
import pytest

from airmeter import CALLS_NAMESPACE
from airstore import FileStore
from dashboard.reader import SyncReader
from dashboard.server import DashboardServer
from tests.slow_clients import Attack

TOKEN = "s3cret-token"
ATTEMPTS = 8
WAIT = 30.0  # per real request: generous, never a measure


def _store(tmp_path_factory: pytest.TempPathFactory) -> str:
    data = tmp_path_factory.mktemp("locked") / "data"

    async def create() -> None:
        async with FileStore(data) as store:
            await store.append(CALLS_NAMESPACE, {"tool": "echo", "layer": "L1", "ok": True})

    asyncio.run(create())
    return f"file://{data}"


@pytest.fixture
def dashboard(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DashboardServer]:
    url = _store(tmp_path_factory)
    # loopback, with the token every request must carry: the policy of a remote bind
    with DashboardServer(SyncReader.open(url), store_url=url, port=0, token=TOKEN) as server:
        yield server


def _served(server: DashboardServer) -> list[str]:
    """Real clients (with the token when one is set), a fresh connection each: what each
    got."""
    outcomes = []
    base = f"http://127.0.0.1:{server.port}"
    for _ in range(ATTEMPTS):
        try:
            with httpx.Client(base_url=base, timeout=WAIT) as client:
                answer = client.get("/_dash-layout", headers={"Authorization": f"Bearer {TOKEN}"})
                outcomes.append(str(answer.status_code))
        except httpx.HTTPError as exc:
            outcomes.append(repr(exc))
    return outcomes


@pytest.mark.parametrize(("mode", "count"), [("slowloris", 300), ("endless-chunked", 100)])
def test_a_client_without_the_token_cannot_lock_the_dashboard_out(
    dashboard: DashboardServer, mode: str, count: int
) -> None:
    path = "/_dash-update-component"
    with Attack(dashboard.port, mode, count, path=path) as attack:
        outcomes = _served(dashboard)
        assert attack.connects >= count
    served = outcomes.count("200")
    assert served == ATTEMPTS, f"{served}/{ATTEMPTS} served under {mode}: {outcomes}"


def test_a_tokenless_request_is_refused_before_its_body_is_read(
    dashboard: DashboardServer,
) -> None:
    head = (
        f"POST /_dash-update-component HTTP/1.1\r\nHost: 127.0.0.1:{dashboard.port}\r\n"
        "Content-Type: application/json\r\nContent-Length: 100000\r\n\r\n"
    )
    with socket.create_connection(("127.0.0.1", dashboard.port), timeout=WAIT) as sock:
        sock.sendall(head.encode())  # and never a byte of the body
        answer = _until_closed(sock)
    assert answer.startswith(b"HTTP/1.1 401"), answer[:200]
    assert b"needs its token" in answer
    assert b"www-authenticate: bearer" in answer.lower()


def _until_closed(sock: socket.socket) -> bytes:
    got = b""
    while chunk := sock.recv(65536):
        got += chunk
    return got


@pytest.mark.parametrize("mode", ["slow-body", "endless-chunked", "slowloris"])
def test_slow_heads_and_bodies_cannot_lock_out_a_dashboard_without_a_token(
    tmp_path_factory: pytest.TempPathFactory, mode: str
) -> None:
    # loopback without a token: every client gets to send a body, and slow ones are bounded
    url = _store(tmp_path_factory)
    with (
        DashboardServer(SyncReader.open(url), store_url=url, port=0) as server,
        Attack(server.port, mode, 200, path="/_dash-update-component") as attack,
    ):
        outcomes = _served(server)
        assert attack.connects >= 200
    served = outcomes.count("200")
    assert served == ATTEMPTS, f"{served}/{ATTEMPTS} served under {mode}: {outcomes}"
