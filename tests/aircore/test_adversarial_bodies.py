"""Slow and endless request bodies from a local client, against a real ``air serve`` on
loopback without a token (issue 31, item 6): they once starved it (4 of 12 and 3 of 12 real
requests served). Loopback is not trust: other local users and browser pages reach it."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.aircore.test_adversarial_http import JSON_HEADERS, META, Served, V
from tests.slow_clients import Attack, idle_connections

ATTEMPTS = 12
WAIT = 30.0  # per real request: generous, never a measure


@pytest.fixture
def server(tmp_path: Path) -> Iterator[Served]:
    srv = Served(tmp_path)
    try:
        yield srv
    finally:
        assert srv.close() == 0


def _served(srv: Served) -> list[str]:
    """Real clients: ``server/discover`` on a fresh connection each; what each got."""
    body = {"jsonrpc": "2.0", "id": 1, "method": "server/discover", "params": {"_meta": META}}
    headers = {**JSON_HEADERS, "mcp-protocol-version": V, "mcp-method": "server/discover"}
    outcomes = []
    for _ in range(ATTEMPTS):
        try:
            with httpx.Client(base_url=srv.base, timeout=WAIT) as client:
                answer = client.post("/mcp", json=body, headers=headers)
                outcomes.append(str(answer.status_code))
        except httpx.HTTPError as exc:
            outcomes.append(repr(exc))
    return outcomes


@pytest.mark.parametrize("mode", ["slow-body", "endless-chunked"])
def test_slow_bodies_from_a_local_client_do_not_starve_real_clients(
    server: Served, mode: str
) -> None:
    with idle_connections(server.port, 1000), Attack(server.port, mode, 400) as attack:
        outcomes = _served(server)
        assert attack.connects >= 400
    served = outcomes.count("200")
    assert served == ATTEMPTS, f"{served}/{ATTEMPTS} served under {mode}: {outcomes}"
