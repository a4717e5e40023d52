"""The caller's identity (``send_caller``) reaches only the upstreams the configuration opted
in, and only the gateway's own idea of it: a client's own ``io.air/caller`` is removed on
``tasks/*`` as on ``tools/call``, and a replica taken from the shared registry never gets it."""

from __future__ import annotations

from typing import Any

import pytest

from airgateway.config import parse_config
from airgateway.gateway import Gateway
from airhttp.identity import Identity, use_identity
from airstore.memory import MemoryStore
from tests.airgateway.procs import free_port, http_replica, started
from tests.airgateway.recorder import Recorder
from tests.airgateway.rpc import envelope

pytestmark = pytest.mark.slow
QUIET = "health:\n  interval_s: 600\nbalancer:\n  strategy: round_robin\n"
TASKS: dict[str, Any] = {"extensions": {"io.modelcontextprotocol/tasks": {}}}
SPOOF = {"io.air/caller": {"client_id": "admin-spoof", "subject": "root-spoof"}}


async def test_a_clients_own_caller_never_reaches_an_upstream_on_tasks() -> None:
    port = free_port()
    with started(http_replica("a", port), env={"REPLICA": "a"}):
        rec = Recorder(port)
        gw = Gateway(parse_config(
            f"servers:\n  - name: notes\n    url: http://127.0.0.1:{rec.port}/mcp\n"
            "    send_caller: true\n" + QUIET), store=MemoryStore())  # fmt: skip
        try:
            async with gw:
                use_identity(Identity(auth="oauth", client_id="desk", subject="alice-real"))
                call = envelope("tools/call", {"name": "background", "arguments": {}},
                                capabilities=TASKS)[0]["params"]  # fmt: skip
                created = await gw.call_tool(call)
                assert created["resultType"] == "task", created
                for method in ("tasks/get", "tasks/cancel"):
                    params = envelope(method, {"taskId": created["taskId"]}, capabilities=TASKS)[0][
                        "params"
                    ]
                    params["_meta"] = {**params["_meta"], **SPOOF}
                    await gw.task_request(method, params, client=None)
                    sent = bytes(rec.sent)
                    assert method.encode() in sent
                    assert b"root-spoof" not in sent  # the client's own caller was removed
                    assert b"admin-spoof" not in sent
                    assert sent.count(b"alice-real") >= 2  # the real one is sent instead
        finally:
            rec.close()


async def test_a_send_caller_server_never_adopts_a_replica_from_the_store() -> None:
    good_port, evil_port = free_port(), free_port()
    with (
        started(http_replica("good", good_port), env={"REPLICA": "good"}),
        started(http_replica("evil", evil_port), env={"REPLICA": "evil"}),
    ):
        rec = Recorder(evil_port)
        store = MemoryStore()
        a = Gateway(parse_config(
            f"servers:\n  - name: notes\n    url: http://127.0.0.1:{good_port}/mcp\n"
            "    send_caller: true\n" + QUIET), store=store)  # fmt: skip
        b = Gateway(parse_config(
            f"servers:\n  - name: notes\n    url: http://127.0.0.1:{rec.port}/mcp\n" + QUIET),
            store=store)  # fmt: skip
        try:
            async with a, b:
                for g in (a, b):
                    await g.registry.publish()
                for g in (a, b):
                    await g.registry.refresh()
                    for r in g.registry.adopted():
                        await g.health.check(r)
                assert [r.config.url for r in a.router.all()] == [
                    f"http://127.0.0.1:{good_port}/mcp"]  # fmt: skip
                # nor is A's send_caller replica published for B to adopt
                assert [r.config.url for r in b.router.all()] == [
                    f"http://127.0.0.1:{rec.port}/mcp"]  # fmt: skip
                use_identity(Identity(auth="oauth", client_id="desk", subject="alice@example.com"))
                answers = []
                for _ in range(6):
                    res = await a.call_tool({"name": "whoami", "arguments": {}})
                    answers.append(res["content"][0]["text"])
                assert set(answers) == {"good"}
                assert b"alice@example.com" not in bytes(rec.sent)
        finally:
            rec.close()
