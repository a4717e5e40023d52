"""Tasks and input rounds across replicas: ``tasks/*`` reach the replica that started the task
through any gateway sharing the store; stdio replicas the gateway starts share one
``AIR_REQUEST_STATE_KEY``, so an input round answered on another replica verifies."""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from airgateway import Gateway, parse_config
from airgateway.config import ServerConfig
from airgateway.replica import Replica
from airgateway.tasks import TaskRoute, replica_of
from airgateway.upstream_http import HttpUpstream
from airstore import MemoryStore
from tests.airgateway.procs import UPSTREAM, Proc, air, free_port, http_replica, started
from tests.airgateway.rpc import envelope

pytestmark = pytest.mark.slow
WAIT = 30.0
TOKENS = {"GW_ONE_TOKEN": "one-token-1", "GW_TWO_TOKEN": "two-token-2"}
TASKS: dict[str, Any] = {"extensions": {"io.modelcontextprotocol/tasks": {}}}
STDIO = f'[{json.dumps(sys.executable)}, "-m", "aircli", "serve", {json.dumps(UPSTREAM)}]'


@pytest.fixture(scope="module")
def gateways(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Proc, Proc]]:
    tmp = tmp_path_factory.mktemp("tasks")
    a, b = free_port(), free_port()
    config = tmp / "gw.yml"
    config.write_text(f"""
servers:
  - name: notes
    url: http://127.0.0.1:{a}/mcp
  - name: notes
    url: http://127.0.0.1:{b}/mcp
  - name: files
    command: {STDIO}
    prefix: files
    env: {{REPLICA: s0}}
  - name: files
    command: {STDIO}
    prefix: files
    env: {{REPLICA: s1}}
balancer:
  strategy: round_robin
clients:
  - name: one
    token_env: GW_ONE_TOKEN
    allow: ["*"]
  - name: two
    token_env: GW_TWO_TOKEN
    allow: ["*"]
""")  # fmt: skip
    store = f"file://{tmp / 'data'}"
    argv = air("gateway", "--config", str(config), "--port", "0", "--store", store, "--no-meter")
    with (
        started(http_replica("a", a), env={"REPLICA": "a"}),
        started(http_replica("b", b), env={"REPLICA": "b"}),
        started(argv, env=TOKENS) as g1,
        started(argv, env=TOKENS) as g2,
    ):
        yield g1, g2


async def _rpc(
    http: httpx.AsyncClient, url: str, method: str, params: dict[str, Any], *, token: str,
    capabilities: dict[str, Any] | None = None,
) -> dict[str, Any]:  # fmt: skip
    body, headers = envelope(method, params, capabilities=capabilities)
    headers["authorization"] = f"Bearer {token}"
    answer: dict[str, Any] = (await http.post(url, json=body, headers=headers)).json()
    return answer


async def _finished(http: httpx.AsyncClient, urls: list[str], task_id: str) -> dict[str, Any]:
    """Poll tasks/get, alternating between the gateways, until the task is terminal."""
    token = TOKENS["GW_ONE_TOKEN"]
    for turn in range(int(WAIT / 0.05)):
        got = await _rpc(http, urls[turn % 2], "tasks/get", {"taskId": task_id}, token=token,
                         capabilities=TASKS)  # fmt: skip
        assert "result" in got, got  # never "Task not found": always the right replica
        task: dict[str, Any] = got["result"]
        if task["status"] in ("completed", "failed", "cancelled"):
            return task
        await asyncio.sleep(0.05)  # a task's status has no event to wait on over HTTP
    raise AssertionError(f"task {task_id} never finished")


async def test_tasks_reach_the_replica_that_started_them_through_any_gateway(
    gateways: tuple[Proc, Proc],
) -> None:
    g1, g2 = gateways
    one = TOKENS["GW_ONE_TOKEN"]
    async with httpx.AsyncClient(timeout=WAIT) as http:
        call = {"name": "background", "arguments": {}}
        created = [
            (await _rpc(http, g1.url, "tools/call", call, token=one, capabilities=TASKS))["result"]
            for _ in range(4)
        ]
        assert all(c["resultType"] == "task" for c in created), created
        results = [await _finished(http, [g2.url, g1.url], c["taskId"]) for c in created]
        replicas = {r["result"]["content"][0]["text"].split(":")[0] for r in results}
        assert replicas == {"a", "b"}  # both replicas hold tasks, each was found
        other = await _rpc(http, g2.url, "tasks/get", {"taskId": created[0]["taskId"]},
                           token=TOKENS["GW_TWO_TOKEN"], capabilities=TASKS)  # fmt: skip
        assert other["error"]["code"] == -32602  # another client's task does not exist for it
        unknown = await _rpc(http, g2.url, "tasks/get", {"taskId": "x" * 32}, token=one,
                             capabilities=TASKS)  # fmt: skip
        assert unknown["error"]["code"] == -32602
        cancelled = await _rpc(http, g2.url, "tasks/cancel", {"taskId": created[1]["taskId"]},
                               token=one, capabilities=TASKS)  # fmt: skip
        assert cancelled["result"]["resultType"] == "complete"


async def test_an_input_round_verifies_on_the_other_stdio_replica(
    gateways: tuple[Proc, Proc],
) -> None:
    g1, _g2 = gateways
    one = TOKENS["GW_ONE_TOKEN"]
    caps: dict[str, Any] = {"elicitation": {}}
    async with httpx.AsyncClient(timeout=WAIT) as http:
        for _ in range(2):  # round robin: one of the two rounds crosses replicas
            first = (await _rpc(http, g1.url, "tools/call", {"name": "files__ask"}, token=one,
                                capabilities=caps))["result"]  # fmt: skip
            assert first["resultType"] == "input_required", first
            (key,) = first["inputRequests"]
            second = await _rpc(http, g1.url, "tools/call", {
                "name": "files__ask", "requestState": first["requestState"],
                "inputResponses": {key: {"action": "accept", "content": {"name": "Ann"}}},
            }, token=one, capabilities=caps)  # fmt: skip
            assert second["result"]["content"][0]["text"] == "accept:Ann", second


def _gateway(text: str, environ: dict[str, str] | None = None) -> Gateway:
    return Gateway(parse_config(text, environ=environ or {}), store=MemoryStore())


def test_stdio_replicas_get_one_shared_state_key_and_different_keys_are_reported(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("AIR_REQUEST_STATE_KEY", raising=False)
    two = (
        "servers:\n"
        + "  - name: files\n    command: [x]\n" * 2
        + "  - name: solo\n    command: [y]\n"
    )
    gateway = _gateway(two)
    envs = [r.client.env for r in gateway.router.all()]  # type: ignore[attr-defined]
    keys = [env.get("AIR_REQUEST_STATE_KEY") for env in envs]
    assert keys[0] is not None
    assert keys[0] == keys[1]
    assert keys[2] is not None
    assert keys[2] != keys[0]
    assert gateway.warnings == []
    odd = (
        "servers:\n"
        "  - name: files\n    command: [x]\n    env: {AIR_REQUEST_STATE_KEY: {env: K1}}\n"
        "  - name: files\n    command: [x]\n    env: {AIR_REQUEST_STATE_KEY: {env: K2}}\n"
    )
    warned = _gateway(odd, {"K1": "one", "K2": "two"})
    assert len(warned.warnings) == 1
    assert "AIR_REQUEST_STATE_KEY" in warned.warnings[0]
    assert warned.status()["warnings"] == warned.warnings
    monkeypatch.setenv("AIR_REQUEST_STATE_KEY", "set-for-the-gateway")
    inherited = _gateway(two)
    assert all("AIR_REQUEST_STATE_KEY" not in r.client.env for r in inherited.router.all())  # type: ignore[attr-defined]


def test_a_stdio_task_route_never_lands_on_a_network_replica_of_the_same_number() -> None:
    network = ServerConfig(name="s", transport="http", url="http://127.0.0.1:1/mcp")
    group = [Replica(network, 0, HttpUpstream("s#0", "http://127.0.0.1:1/mcp"))]
    route = TaskRoute(server="s", replica=0, tool="t", client=None)
    assert replica_of(route, group) is None
    with_url = TaskRoute(server="s", replica=5, tool="t", client=None, url=network.url)
    assert replica_of(with_url, group) is group[0]
