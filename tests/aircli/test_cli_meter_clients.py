"""``air meter report --by client``: calls, errors, cost, latency and subjects per OAuth client,
from a real ``air serve --auth-config`` called by the official client with a local issuer's
tokens, read back by the real ``air`` command."""

from __future__ import annotations

import asyncio
from pathlib import Path

import orjson
import pytest

from tests.air_process import run_air
from tests.airhttp.oauth_serve import OAuthServed, bearer_client, oauth_serving, stored_calls

SERVER = """
from aircore import define_server, define_tool

def read_note(params):
    return "note " + params["id"]

def fail_note(params):
    raise RuntimeError("no such note")

server = define_server(
    name="notes",
    meter=True,
    tools=[
        define_tool(name="read_note", params={"id": "string"}, handler=read_note),
        define_tool(name="fail_note", params={"id": "string"}, handler=fail_note),
    ],
)
"""

# client -> (subject, calls of read_note, calls of fail_note), one token per subject
CALLS = {
    "reports-app": [("alice", 4, 1), ("bob", 2, 0)],
    "ci-bot": [("svc-ci", 1, 2)],
}


async def _call_everything(served: OAuthServed) -> int:
    total = 0
    for client_id, people in CALLS.items():
        for subject, reads, fails in people:
            token = served.token(client_id=client_id, sub=subject)
            async with bearer_client(served.url, token) as client:
                for i in range(reads):
                    assert not (await client.call_tool("read_note", {"id": str(i)})).is_error
                for i in range(fails):
                    assert (await client.call_tool("fail_note", {"id": str(i)})).is_error
            total += reads + fails
    return total


@pytest.fixture
async def recorded(tmp_path: Path) -> str:
    async with oauth_serving(tmp_path, SERVER) as served:
        total = await _call_everything(served)
        for _ in range(600):  # the server delivers its records within its flush interval
            if await stored_calls(served.store) >= total:
                break
            await asyncio.sleep(0.05)
        return served.store


def test_report_by_client_counts_each_clients_calls_errors_and_subjects(recorded: str) -> None:
    done = run_air("meter", "report", "--store", recorded, "--by", "client", "--format", "json",
                   "--since", "all")  # fmt: skip
    assert done.returncode == 0, done.stderr
    report = orjson.loads(done.stdout)
    rows = {row["client"]: row for row in report["clients"]}
    assert set(rows) == {"reports-app", "ci-bot"}
    app, bot = rows["reports-app"], rows["ci-bot"]
    assert (app["calls"], app["errors"], app["subjects"], app["tools"]) == (7, 1, 2, 2)
    assert (bot["calls"], bot["errors"], bot["subjects"], bot["tools"]) == (3, 2, 1, 2)
    assert app["auth"] == bot["auth"] == "oauth"
    assert app["cost"] > 0
    assert app["p95_ms"] is not None
    assert report["calls"] == 10
    assert report["subjects"] == 3
    assert not report["truncated"]
    assert [row["client"] for row in report["clients"]] == ["reports-app", "ci-bot"]

    table = run_air("meter", "report", "--store", recorded, "--by", "client", "--since", "all")
    assert table.returncode == 0, table.stderr
    lines = table.stdout.splitlines()
    assert "subjects   3 distinct" in lines
    app_line = next(line for line in lines if line.startswith("reports-app"))
    assert app_line.split()[:5] == ["reports-app", "oauth", "7", "1", "14.3%"]
    # subjects are pseudonyms: the report never shows a user's name
    assert "alice" not in table.stdout
    assert "alice" not in done.stdout


def test_report_by_client_filters_by_tool(recorded: str) -> None:
    done = run_air("meter", "report", "--store", recorded, "--by", "client", "--format", "json",
                   "--since", "all", "--tool", "fail_note")  # fmt: skip
    rows = {row["client"]: row["calls"] for row in orjson.loads(done.stdout)["clients"]}
    assert rows == {"reports-app": 1, "ci-bot": 2}


def test_report_by_client_has_no_prometheus_form(tmp_path: Path) -> None:
    done = run_air("meter", "report", "--store", "memory://", "--by", "client",
                   "--format", "prometheus")  # fmt: skip
    assert done.returncode == 2
    assert "--by client prints a table or JSON" in done.stderr
