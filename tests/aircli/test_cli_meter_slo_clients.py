"""``air meter slo`` with client objectives: a real ``air serve --auth-config`` called by the
official client as two OAuth clients (tokens of a local issuer), one failing most of its calls,
read back by the real ``air`` command."""

from __future__ import annotations

import asyncio
from pathlib import Path

import orjson
import pytest

from aircli.meter_slo import EXIT_FAILING
from tests.air_process import run_air
from tests.airhttp.oauth_serve import OAuthServed, bearer_client, oauth_serving, stored_calls

SERVER = """
from aircore import define_server, define_tool

def read_note(params):
    if params["id"].startswith("bad"):
        raise RuntimeError("no such note")
    return "note " + params["id"]

server = define_server(
    name="notes",
    meter=True,
    tools=[define_tool(name="read_note", params={"id": "string"}, handler=read_note)],
)
"""

OBJECTIVES = """objectives:
  - {tool: read_note, client: "ci-*", availability: 0.99, period: 1d}
  - {tool: read_note, client: "reports-*", availability: 0.99, period: 1d}
"""

# client -> (good calls, failing calls)
CALLS = {"ci-bot": (2, 8), "reports-app": (10, 0)}


async def _call(served: OAuthServed) -> int:
    for client_id, (good, bad) in CALLS.items():
        token = served.token(client_id=client_id, sub="someone")
        async with bearer_client(served.url, token) as client:
            for i in range(good):
                assert not (await client.call_tool("read_note", {"id": str(i)})).is_error
            for i in range(bad):
                assert (await client.call_tool("read_note", {"id": f"bad{i}"})).is_error
    return sum(good + bad for good, bad in CALLS.values())


@pytest.fixture
async def recorded(tmp_path: Path) -> str:
    async with oauth_serving(tmp_path, SERVER) as served:
        total = await _call(served)
        for _ in range(600):  # the server delivers its records within its flush interval
            if await stored_calls(served.store) >= total:
                break
            await asyncio.sleep(0.05)
        return served.store


def test_the_failing_clients_objective_is_breached_and_the_others_fine(
    recorded: str, tmp_path: Path
) -> None:
    config = tmp_path / "slo.yml"
    config.write_text(OBJECTIVES)
    done = run_air("meter", "slo", "--config", str(config), "--store", recorded,
                   "--format", "json")  # fmt: skip
    assert done.returncode == EXIT_FAILING, done.stderr  # an objective in breach
    rows = {r["client"]: r for r in orjson.loads(done.stdout)["objectives"]}
    ci, reports = rows["ci-*"], rows["reports-*"]
    assert (ci["valid_calls"], ci["bad_calls"], ci["state"]) == (10, 8, "breach")
    assert (reports["valid_calls"], reports["bad_calls"], reports["state"]) == (10, 0, "ok")
    assert ci["evaluated_over"] == "raw log"
    assert ci["partial"] is False
    table = run_air("meter", "slo", "--config", str(config), "--store", recorded)
    lines = table.stdout.splitlines()
    assert lines[0].split()[:3] == ["server/tool", "client", "kind"]
    by_client = {line.split()[1]: line.split() for line in lines[2:]}
    assert by_client["ci-*"][-1] == "breach"
    assert by_client["reports-*"][-1] == "ok"
    assert "evaluated over the raw log" not in table.stdout  # the log covers the whole day


def test_a_client_that_is_not_a_glob_is_a_clear_error(recorded: str, tmp_path: Path) -> None:
    config = tmp_path / "slo.yml"
    config.write_text("objectives:\n  - {tool: read_note, client: 5, availability: 0.99}\n")
    done = run_air("meter", "slo", "--config", str(config), "--store", recorded)
    assert done.returncode == 1
    assert "objectives[0]: client must be a glob string" in done.stderr
    assert "got 5" in done.stderr
    assert "Traceback" not in done.stderr
