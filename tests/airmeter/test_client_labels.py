"""The Prometheus ``client`` label is bounded: the busiest N clients by name, the rest
``other``; unit level here, end to end through ``air serve --auth-config`` below."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path
from typing import Any

import httpx
import pytest

from airmeter import MeterConfigError
from airmeter.client_labels import CLIENT_CALLS, CLIENT_COST, OTHER, TopClients
from airmeter.settings import prom_top_clients
from tests.airhttp.oauth_serve import OAuthServed, oauth_serving
from tests.airmeter.prom_parser import parse


def _calls(text: str) -> dict[str, float]:
    """``client`` -> calls (ok and failed) of the exposition, checked by a strict parser."""
    out: dict[str, float] = {}
    for sample in parse(text)[CLIENT_CALLS].samples:
        client = sample.labels["client"]
        out[client] = out.get(client, 0) + sample.value
    return out


def test_a_thousand_clients_make_at_most_top_plus_one_label_values() -> None:
    clients = TopClients(top=10)
    for i in range(1000):
        clients.observe(f"client-{i}", ok=True, cost=1.0)
        if i % 10 == 0:
            clients.observe("busy", ok=i % 20 == 0, cost=3.0)
    text = "\n".join(clients.render()) + "\n"
    calls = _calls(text)
    assert len(calls) <= 11
    assert OTHER in calls
    assert calls["busy"] == 100  # the busiest client is named, every call of it counted
    assert sum(calls.values()) == 1100  # nothing lost: the rest is in "other"
    costs = {s.labels["client"] for s in parse(text)[CLIENT_COST].samples}
    assert costs == set(calls)


def test_every_series_only_grows_while_the_top_changes() -> None:
    clients = TopClients(top=2, track=20)
    before: dict[str, float] = {}
    for round_ in range(30):
        for i in range(5):  # the busiest client changes from round to round
            for _ in range(1 + (round_ + i) % 5):
                clients.observe(f"c{i}", ok=True, cost=0.5)
        now = _calls("\n".join(clients.render()) + "\n")
        assert len(now) <= 3
        for name, value in now.items():
            assert value >= before.get(name, 0), (name, round_)
        before = now


def test_top_zero_names_no_client_and_bad_settings_are_refused() -> None:
    clients = TopClients(top=0)
    clients.observe("a", ok=False, cost=1.0)
    assert clients.labels() == [OTHER]
    with pytest.raises(MeterConfigError):
        TopClients(top=-1)
    with pytest.raises(MeterConfigError):
        TopClients(top=5, track=5)
    assert prom_top_clients({}) == 10
    assert prom_top_clients({"AIR_METER_PROM_TOP_CLIENTS": "3"}) == 3
    for bad in ("x", "-1", "1001"):
        with pytest.raises(MeterConfigError, match="AIR_METER_PROM_TOP_CLIENTS"):
            prom_top_clients({"AIR_METER_PROM_TOP_CLIENTS": bad})


SERVER = """
from aircore import define_server, define_tool

server = define_server(
    name="notes",
    meter=True,
    tools=[define_tool(name="read_note", params={"id": "string"},
                       handler=lambda p: "note " + p["id"])],
)
"""

V = "2026-07-28"


def _call(i: int) -> dict[str, Any]:
    meta = {"io.modelcontextprotocol/protocolVersion": V,
            "io.modelcontextprotocol/clientCapabilities": {}}  # fmt: skip
    params = {"name": "read_note", "arguments": {"id": str(i)}, "_meta": meta}
    return {"jsonrpc": "2.0", "id": i, "method": "tools/call", "params": params}


async def _post(http: httpx.AsyncClient, served: OAuthServed, token: str, i: int) -> None:
    headers = {
        "Authorization": f"Bearer {token}",
        "Accept": "application/json, text/event-stream",
        "MCP-Protocol-Version": V,
        "Mcp-Method": "tools/call",
        "Mcp-Name": "read_note",
    }
    answer = await http.post(served.url, json=_call(i), headers=headers)  # fmt: skip
    assert answer.status_code == 200, answer.text
    assert "note" in answer.text


async def test_air_serve_names_at_most_n_clients_of_a_thousand(tmp_path: Path) -> None:
    env = {**os.environ, "AIR_METER_PROM_TOP_CLIENTS": "5"}
    async with (
        oauth_serving(tmp_path, SERVER, env=env) as served,
        httpx.AsyncClient(timeout=30) as http,
    ):
        busy = served.token(client_id="busy-app", sub="someone")
        for i in range(1000):
            await _post(http, served, served.token(client_id=f"client-{i}", sub=f"u{i}"), i)
            if i % 20 == 0:
                await _post(http, served, busy, i)
        calls: dict[str, float] = {}
        for _ in range(600):  # the meter's delivery task counts within its flush interval
            scrape = await http.get(served.url.replace("/mcp", "/metrics"),
                                    headers={"Authorization": f"Bearer {busy}"})  # fmt: skip
            assert scrape.status_code == 200, scrape.text
            calls = _calls(scrape.text)
            if sum(calls.values()) >= 1050:
                break
            await asyncio.sleep(0.05)
        assert sum(calls.values()) == 1050
        assert len(calls) <= 6
        assert calls["busy-app"] == 50
        assert OTHER in calls


def test_a_client_named_like_airs_own_names_gets_a_series_and_a_row_of_its_own() -> None:
    from airmeter.clients import client_key

    labels = TopClients(top=3)
    for client in ("other", "(other)", "(none)", "a", "b"):
        labels.observe(client_key(client, "oauth"), ok=True, cost=1.0)
    samples = [line for line in labels.render() if line.startswith(CLIENT_CALLS + "{")]
    label_sets = [line.split("{", 1)[1].split("}", 1)[0] for line in samples]
    assert len(label_sets) == len(set(label_sets)), samples  # no label set twice
    assert client_key("(none)", "oauth") != client_key(None, None)
    assert client_key("(token)", "oauth") != client_key(None, "token")
    assert client_key("\\(none)", "oauth") != client_key("(none)", "oauth")
    assert client_key("alice", "oauth") == "alice"
