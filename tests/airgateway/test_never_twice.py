"""A call that may have reached an upstream is never run again unless its tool is read-only or
idempotent: twelve official clients call a side-effect tool through a real ``air gateway``
in front of two real replicas (``retries: 1``) while one replica is SIGKILLed mid-call, round
after round. Every id the tool logged is logged once; a client told "ok" has its call in the
log once, on the replica that answered; a client told ``-32003`` hears that the call may have
run."""

from __future__ import annotations

import asyncio
import collections
import itertools
import sys
import time
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import httpx
import pytest
from mcp import Client, MCPError

from tests.airgateway.procs import HERE, Proc, air, free_port, started

pytestmark = pytest.mark.slow
SIDE = str(HERE / "side_effect_server.py")
CLIENTS = 12
ROUNDS = 4
KILL_AFTER = 24
"""Answers from the victim in a round before it is killed (traffic is flowing by then)."""
AFTER_KILL = 3
"""Calls each client makes once the victim is dead, before the round ends."""
WAIT_S = 60.0


def _replica(port: int, name: str, log: Path, stack: ExitStack) -> Proc:
    argv = air("serve", SIDE, "--transport", "http", "--port", str(port))
    return stack.enter_context(started(argv, env={"REPLICA": name, "SIDE_LOG": str(log)}))


def _wait_healthy(url: str, count: int) -> None:
    deadline = time.monotonic() + WAIT_S
    status: Any = None
    while time.monotonic() < deadline:
        status = httpx.get(url.replace("/mcp", "/status"), timeout=10).json()
        if sum(u["state"] == "healthy" for u in status["upstreams"]) == count:
            return
        time.sleep(0.05)  # polling the gateway's own status: nothing to wait on
    raise AssertionError(f"replicas never all healthy: {status}")


async def _round(url: str, victim: Proc, victim_name: str, ids: itertools.count[int],
                 outcomes: dict[str, tuple[str, Any]]) -> None:  # fmt: skip
    from_victim = 0
    enough = asyncio.Event()
    killed = asyncio.Event()

    async def client_loop() -> None:
        nonlocal from_victim
        async with Client(url) as client:
            after = 0
            while after < AFTER_KILL:
                if killed.is_set():
                    after += 1
                call_id = f"c{next(ids)}"
                try:
                    result = await client.call_tool("record", {"id": call_id, "seconds": 0.05})
                except MCPError as exc:
                    outcomes[call_id] = ("error", (exc.error.code, exc.error.message))
                    continue
                text = str(result.content[0].text)  # type: ignore[union-attr]
                outcomes[call_id] = ("ok", text)
                if text.startswith(f"{victim_name}:"):
                    from_victim += 1
                    if from_victim >= KILL_AFTER:
                        enough.set()

    async def killer() -> None:
        await enough.wait()
        victim.kill()  # SIGKILL while about half the clients' calls run on it
        killed.set()

    await asyncio.wait_for(
        asyncio.gather(killer(), *(client_loop() for _ in range(CLIENTS))), WAIT_S
    )


async def test_a_non_idempotent_call_never_runs_twice_when_a_replica_is_sigkilled_mid_call(
    tmp_path: Path,
) -> None:
    log = tmp_path / "side.log"
    ports = [free_port(), free_port()]
    config = tmp_path / "gateway.yml"
    config.write_text(
        "servers:\n"
        + "".join(
            f"  - name: side\n    url: http://127.0.0.1:{p}/mcp\n    timeout_s: 20\n" for p in ports
        )
        + "health:\n  interval_s: 0.2\n  timeout_s: 5\n  unhealthy_after: 1\n"
        "  healthy_after: 1\n"
        "balancer:\n  strategy: round_robin\n  retries: 1\n"
    )
    outcomes: dict[str, tuple[str, Any]] = {}
    ids = itertools.count(1)
    with ExitStack() as stack:
        replicas = [_replica(p, f"r0-{i}", log, stack) for i, p in enumerate(ports)]
        names = [f"r0-{i}" for i in range(2)]
        argv = air("gateway", "--config", str(config), "--port", "0", "--store", "memory://",
                   "--no-meter")  # fmt: skip
        gateway = stack.enter_context(started(argv))
        _wait_healthy(gateway.url, 2)
        for n in range(ROUNDS):
            victim = n % 2
            await _round(gateway.url, replicas[victim], names[victim], ids, outcomes)
            names[victim] = f"r{n + 1}-{victim}"
            replicas[victim] = _replica(ports[victim], names[victim], log, stack)
            await asyncio.to_thread(_wait_healthy, gateway.url, 2)

    ran = collections.defaultdict(list)
    for line in log.read_text().splitlines():
        replica, call_id = line.split(" ")
        ran[call_id].append(replica)
    twice = {call_id: where for call_id, where in ran.items() if len(where) > 1}
    assert not twice, f"{len(twice)} calls ran twice: {sorted(twice.items())[:10]}"
    errors = 0
    for call_id, (kind, detail) in outcomes.items():
        if kind == "ok":  # the answer comes from the one replica that ran it
            replica = detail.split(":", 1)[0]
            assert ran[call_id] == [replica], (call_id, detail, ran[call_id])
        else:
            errors += 1
            code, message = detail
            assert code == -32003, (call_id, detail)
            assert "may have run" in message, (call_id, detail)
    assert len(outcomes) > ROUNDS * CLIENTS * AFTER_KILL
    print(f"{len(outcomes)} calls, {errors} answered -32003, {len(twice)} ran twice",
          file=sys.stderr)  # fmt: skip
