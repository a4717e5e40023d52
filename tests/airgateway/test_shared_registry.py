"""Gateway processes sharing a store share the Server Registry: a replica one gateway's config
lists joins the other gateway's pool, leaves it when that gateway stops (withdrawn) or dies
(expired), one tool name goes to the same server in every gateway whatever its config's order,
and a store that goes away only stops the sharing."""

from __future__ import annotations

import asyncio
import signal
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.airgateway.procs import Proc, air, free_port, http_replica, started, started_all
from tests.airgateway.rpc import envelope, modern_call
from tests.redis_server import RedisServer, shared_redis_server

pytestmark = pytest.mark.slow
QUICK = "health:\n  interval_s: 0.3\nbalancer:\n  strategy: round_robin\n"
"""Registrations renewed every 0.3 s and expiring after 1 s: a dead gateway leaves quickly."""
WAIT_S = 30.0
TASKS: dict[str, Any] = {"extensions": {"io.modelcontextprotocol/tasks": {}}}


def _config(path: Path, servers: list[tuple[str, int]]) -> str:
    lines = ["servers:"]
    for name, port in servers:
        lines += [f"  - name: {name}", f"    url: http://127.0.0.1:{port}/mcp"]
    path.write_text("\n".join(lines) + "\n" + QUICK)
    return str(path)


def _gateway(config: str, store: str) -> list[str]:
    return air("gateway", "--config", config, "--port", "0", "--store", store, "--no-meter")


def _status(gateway: Proc) -> dict[str, Any]:
    answer: dict[str, Any] = httpx.get(gateway.url.replace("/mcp", "/status"), timeout=10).json()
    return answer


def _wait(gateway: Proc, what: str, ok: Callable[[dict[str, Any]], bool]) -> dict[str, Any]:
    """Wait (bounded) until the gateway's status satisfies ``ok``."""
    deadline = time.monotonic() + WAIT_S
    while True:
        status = _status(gateway)
        if ok(status):
            return status
        if time.monotonic() > deadline:
            raise AssertionError(f"never {what}: {status}")
        time.sleep(0.1)  # polling the gateway's own status: nothing to wait on


def _table(url: str) -> str:
    """``air status --url URL`` as a table."""
    run = subprocess.run(air("status", "--url", url), capture_output=True, text=True,
                         timeout=60, check=True)  # fmt: skip
    return run.stdout


def _notes(status: dict[str, Any]) -> list[dict[str, Any]]:
    return [u for u in status["upstreams"] if u["name"] == "notes"]


def _live(status: dict[str, Any]) -> set[str]:
    return {g["id"] for g in status["registry"]["gateways"]}


async def _answers(gateway: Proc, tool: str, times: int) -> set[str]:
    async with httpx.AsyncClient(timeout=10) as http:
        found = set()
        for _ in range(times):
            answer = await modern_call(http, gateway.url, tool, {"text": "hi"})
            found.add(answer["result"]["content"][0]["text"])
        return found


async def _rpc(http: httpx.AsyncClient, url: str, method: str, params: dict[str, Any]) -> Any:
    body, headers = envelope(method, params, capabilities=TASKS)
    return (await http.post(url, json=body, headers=headers)).json()


async def _tasks_followed(start: Proc, follow: Proc) -> set[str]:
    """Start four tasks through ``start`` (round robin: on both replicas), follow each
    through ``follow`` to its end; the replicas that ran them."""
    ran = set()
    async with httpx.AsyncClient(timeout=WAIT_S) as http:
        call = {"name": "background", "arguments": {}}
        created = [(await _rpc(http, start.url, "tools/call", call))["result"] for _ in range(4)]
        for task in created:
            for _ in range(int(WAIT_S / 0.05)):
                got = await _rpc(http, follow.url, "tasks/get", {"taskId": task["taskId"]})
                assert "result" in got, got  # always the replica that holds the task
                if got["result"]["status"] == "completed":
                    ran.add(got["result"]["result"]["content"][0]["text"].split(":")[0])
                    break
                await asyncio.sleep(0.05)  # a task's status has no event to wait on over HTTP
            else:
                raise AssertionError(f"task {task} never finished")
    return ran


@pytest.fixture(scope="module")
def replicas() -> Iterator[tuple[int, int]]:
    """Two HTTP replicas of one server, answering ``whoami`` with r1 and r2 (started once: no
    test stops them, and what a test leaves in them, its tasks, no other one reads)."""
    one, two = free_port(), free_port()
    with started_all(
        (http_replica("r1", one), {"REPLICA": "r1"}),
        (http_replica("r2", two), {"REPLICA": "r2"}),
    ):
        yield one, two


def _flushed(db: int) -> str:
    import redis

    url = shared_redis_server().url(db)
    with redis.Redis.from_url(url) as client:
        client.flushdb()  # ranks and registrations of an earlier run
    return url


@pytest.mark.parametrize(
    ("kind", "sig"),
    [
        pytest.param("redis", signal.SIGKILL, marks=pytest.mark.redis, id="redis-sigkill"),
        pytest.param("file", signal.SIGTERM, id="file-sigterm"),
    ],
)
async def test_each_gateway_reaches_the_replicas_of_both_and_a_stopped_gateways_replica_leaves(
    replicas: tuple[int, int], tmp_path: Path, kind: str, sig: int
) -> None:
    store = _flushed(6) if kind == "redis" else f"file://{tmp_path / 'data'}"
    a_config = _config(tmp_path / "a.yml", [("notes", replicas[0])])
    b_config = _config(tmp_path / "b.yml", [("notes", replicas[1])])
    with started(_gateway(a_config, store)) as a, started(_gateway(b_config, store)) as b:
        a_id, b_id = _status(a)["registry"]["gateway"], _status(b)["registry"]["gateway"]

        def both_in(me: str, other: str) -> Callable[[dict[str, Any]], bool]:
            def ok(status: dict[str, Any]) -> bool:
                notes = _notes(status)
                return (
                    _live(status) == {me, other}
                    and len(notes) == 2
                    and all(u["state"] == "healthy" for u in notes)
                )

            return ok

        seen_a = _wait(a, "adopted B's replica", both_in(a_id, b_id))
        seen_b = _wait(b, "adopted A's replica", both_in(b_id, a_id))
        assert [u["registered_by"] for u in _notes(seen_a)] == [None, b_id]
        assert [u["registered_by"] for u in _notes(seen_b)] == [None, a_id]
        assert _notes(seen_a)[1]["url"] == f"http://127.0.0.1:{replicas[1]}/mcp"
        assert await _answers(a, "whoami", 6) == {"r1", "r2"}
        assert await _answers(b, "whoami", 6) == {"r1", "r2"}
        # A numbers B's replica 1, B numbers it 0: a task's route names its URL
        assert await _tasks_followed(a, b) == {"r1", "r2"}
        table = await asyncio.to_thread(_table, a.url)
        assert f"1 (gw {b_id})" in table
        assert f"gateways in the registry: {a_id} (this one), {b_id}" in table or (
            f"gateways in the registry: {b_id}, {a_id} (this one)" in table
        )
        b.stop(sig)
        left = _wait(a, "dropped B's replica", lambda s: _live(s) == {a_id} and len(_notes(s)) == 1)
        assert _notes(left)[0]["registered_by"] is None
        assert await _answers(a, "whoami", 4) == {"r1"}  # replica2 still runs: B's is gone
        said = "".join(a.lines)
        assert "notes#1 (http://127.0.0.1:" in said
        assert "leaves the pool" in said


@pytest.mark.redis
async def test_gateways_listing_conflicting_servers_in_different_orders_give_a_name_one_owner(
    replicas: tuple[int, int], tmp_path: Path
) -> None:
    store = _flushed(7)
    alpha, beta = ("alpha", replicas[0]), ("beta", replicas[1])  # both offer echo and whoami
    a_config = _config(tmp_path / "a.yml", [alpha, beta])
    b_config = _config(tmp_path / "b.yml", [beta, alpha])  # alone, B would give echo to beta
    with started(_gateway(a_config, store)) as a, started(_gateway(b_config, store)) as b:
        assert await _answers(a, "echo", 2) == {"r1:hi"}
        assert await _answers(b, "echo", 2) == {"r1:hi"}
        conflicts_a, conflicts_b = _status(a)["conflicts"], _status(b)["conflicts"]
        assert {"kind": "tool", "name": "echo", "kept": "alpha", "dropped": "beta"} in conflicts_a
        assert sorted(map(str, conflicts_a)) == sorted(map(str, conflicts_b))


@pytest.mark.redis
async def test_a_store_that_goes_away_stops_the_sharing_and_each_gateway_serves_its_own_config(
    replicas: tuple[int, int], tmp_path: Path
) -> None:
    with RedisServer() as redis_server:
        store = redis_server.url(0)
        a_config = _config(tmp_path / "a.yml", [("notes", replicas[0])])
        b_config = _config(tmp_path / "b.yml", [("notes", replicas[1])])
        with started(_gateway(a_config, store)) as a, started(_gateway(b_config, store)):
            _wait(a, "adopted B's replica", lambda s: len(_notes(s)) == 2)
            redis_server.kill()
            alone = _wait(
                a,
                "dropped what it can no longer read",
                lambda s: s["registry"]["error"] is not None and len(_notes(s)) == 1,
            )
            assert "could not" in alone["registry"]["error"]
            assert await _answers(a, "whoami", 3) == {"r1"}
            assert "the registry is not shared for now" in "".join(a.lines)
