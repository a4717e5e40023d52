"""Three real ``air gateway`` processes share one registry on a real Redis Cluster while
official MCP clients call through every one of them. An upstream added to one gateway's
configuration (file edit + SIGHUP) is listed and routed to by all three; one gateway is
SIGKILLed; the upstream is removed again (edit + SIGHUP) and is gone everywhere. Nothing is
lost and nothing counted twice: every call is answered (by the one replica that ran it) or
refused with an error saying it did not run, the only exception being the call in flight at
the gateway that was killed; every call that ran is one line in the side-effect log and one
record in the meter (upstreams and gateways meter into the cluster)."""

from __future__ import annotations

import asyncio
import collections
import itertools
import signal
import time
from collections.abc import Callable
from contextlib import ExitStack, suppress
from pathlib import Path
from typing import Any

import httpx
import pytest
from mcp import Client, MCPError

from airmeter import CALLS_NAMESPACE
from airstore import create_storage
from tests.airgateway.procs import Proc, air, free_port, started_all

pytestmark = [pytest.mark.redis, pytest.mark.slow]
WAIT_S = 60.0
QUICK = "health:\n  interval_s: 0.3\n  timeout_s: 5\nbalancer:\n  retries: 1\n"
"""Registrations renewed every 0.3 s, expiring after about 1 s."""
METERED_SIDE = """\
import asyncio
import os

from aircore import define_server, define_tool

REPLICA = os.environ["REPLICA"]
LOG = os.environ["SIDE_LOG"]


async def record(p):
    fd = os.open(LOG, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, f"{REPLICA} {p['id']}\\n".encode())
    finally:
        os.close(fd)
    await asyncio.sleep(0.02)
    return f"{REPLICA}:{p['id']}"


server = define_server(
    name="side",
    meter=True,
    tools=[define_tool("record", handler=record, params={"id": "string"})],
)
"""
NOT_RUN = (-32602, -32003)
"""Unknown tool (not listed, or no longer); no replica to send it to."""


def _config(path: Path, servers: list[tuple[str, int, str | None]]) -> None:
    lines = ["servers:"]
    for name, port, prefix in servers:
        lines += [f"  - name: {name}", f"    url: http://127.0.0.1:{port}/mcp"]
        if prefix is not None:
            lines.append(f"    prefix: {prefix}")
    path.write_text("\n".join(lines) + "\n" + QUICK)


async def _status(http: httpx.AsyncClient, gateway: Proc) -> dict[str, Any]:
    answer: dict[str, Any] = (await http.get(gateway.url.replace("/mcp", "/status"))).json()
    return answer


async def _until(
    http: httpx.AsyncClient, gateways: list[Proc], what: str, ok: Callable[[dict[str, Any]], bool]
) -> None:
    """Wait (bounded) until every gateway's status satisfies ``ok``."""
    deadline = time.monotonic() + WAIT_S
    for gateway in gateways:
        while not ok(status := await _status(http, gateway)):
            if time.monotonic() > deadline:
                raise AssertionError(f"{gateway.url} never {what}: {status}")
            await asyncio.sleep(0.05)  # polling the gateway's own status: nothing to wait on


def _beta(status: dict[str, Any]) -> list[dict[str, Any]]:
    return [u for u in status["upstreams"] if u["name"] == "beta"]


def _beta_healthy(status: dict[str, Any]) -> bool:
    return any(u["state"] == "healthy" for u in _beta(status))


def _live(status: dict[str, Any]) -> set[str]:
    return {g["id"] for g in status["registry"]["gateways"]}


class Traffic:
    """One official client per gateway, calling ``record`` and ``b__record`` in turn until
    told to stop; every outcome kept by call id."""

    def __init__(self) -> None:
        self.ids = itertools.count(1)
        self.outcomes: dict[str, tuple[str, str, Any]] = {}
        """call id -> (gateway, kind, detail); kind: ok, not_run, may_have_run, lost."""
        self.stop = asyncio.Event()
        self.progress = asyncio.Event()

    def answered(self, gateway: str, tool_prefix: str) -> int:
        return sum(1 for g, kind, detail in self.outcomes.values()
                   if g == gateway and kind == "ok" and detail[0] == tool_prefix)  # fmt: skip

    async def client(self, name: str, url: str, stop: asyncio.Event) -> None:
        async with Client(url) as client:
            for turn in itertools.count():
                if stop.is_set() or self.stop.is_set():
                    return
                tool = "b__record" if turn % 2 else "record"
                call_id = f"{name}{next(self.ids)}"
                # until an answer says otherwise: the gateway may die under it (the client
                # then fails as a whole, not only this call)
                self.outcomes[call_id] = (name, "lost", "no answer")
                try:
                    result = await asyncio.wait_for(client.call_tool(tool, {"id": call_id}), WAIT_S)
                except MCPError as exc:
                    code, message = exc.error.code, exc.error.message
                    kind = "may_have_run" if "may have run" in message else "not_run"
                    self.outcomes[call_id] = (name, kind, (code, message))
                    continue
                except Exception as exc:  # the gateway died under it: outcome unknown
                    self.outcomes[call_id] = (name, "lost", repr(exc))
                    return
                text = str(result.content[0].text)  # type: ignore[union-attr]
                self.outcomes[call_id] = (name, "ok", (tool.split("__")[0], text))
                self.progress.set()


async def _answers(traffic: Traffic, who: dict[str, int], prefix: str) -> None:
    """Wait (bounded) until each named gateway answered at least that many of ``prefix``."""
    deadline = time.monotonic() + WAIT_S
    while any(traffic.answered(g, prefix) < n for g, n in who.items()):
        if time.monotonic() > deadline:
            counts = {g: traffic.answered(g, prefix) for g in who}
            raise AssertionError(f"not enough {prefix} answers: {counts}")
        traffic.progress.clear()
        with suppress(TimeoutError):  # look again at least every second
            await asyncio.wait_for(traffic.progress.wait(), 1.0)


async def test_three_gateways_over_a_cluster_share_added_and_removed_servers_losing_nothing(
    tmp_path: Path,
) -> None:
    from tests.redis_server import unique_prefix
    from tests.redis_topology import shared_cluster

    store = f"{shared_cluster().url()}?prefix={unique_prefix()}"
    side = tmp_path / "metered_side.py"
    side.write_text(METERED_SIDE)
    log = tmp_path / "side.log"
    ports = {"u1": free_port(), "u2": free_port()}
    configs = {g: tmp_path / f"{g}.yml" for g in "abc"}
    for path in configs.values():
        _config(path, [("alpha", ports["u1"], None)])
    traffic = Traffic()
    with ExitStack() as stack:
        ups = stack.enter_context(started_all(*(  # both at once, then the gateways at once
            (air("serve", str(side), "--transport", "http", "--port", str(port), "--store", store),
             {"REPLICA": name, "SIDE_LOG": str(log)})
            for name, port in ports.items()
        )))  # fmt: skip
        gateways = stack.enter_context(started_all(*(
            (air("gateway", "--config", str(path), "--port", "0", "--store", store), None)
            for path in configs.values()
        )))  # fmt: skip
        gw = dict(zip(configs, gateways, strict=True))
        async with httpx.AsyncClient(timeout=10) as http:
            await _until(http, list(gw.values()), "saw all three gateways",
                         lambda s: len(_live(s)) == 3)  # fmt: skip
            c_id = (await _status(http, gw["c"]))["registry"]["gateway"]
            a_id = (await _status(http, gw["a"]))["registry"]["gateway"]
            c_stop = asyncio.Event()
            stops = {"a": traffic.stop, "b": traffic.stop, "c": c_stop}
            clients = [asyncio.ensure_future(traffic.client(g, gw[g].url, stops[g])) for g in gw]
            try:
                await _answers(traffic, {"a": 5, "b": 5, "c": 5}, "record")

                # an upstream added to A's configuration only: every gateway serves it
                _config(configs["a"], [("alpha", ports["u1"], None), ("beta", ports["u2"], "b")])
                gw["a"].popen.send_signal(signal.SIGHUP)
                await _until(http, list(gw.values()), "served beta", _beta_healthy)
                for g in "bc":
                    beta = _beta(await _status(http, gw[g]))
                    assert [u["registered_by"] for u in beta] == [a_id]
                    assert (await _status(http, gw[g]))["registry"]["fleet"] == ["beta"]
                await _answers(traffic, {"a": 3, "b": 3, "c": 3}, "b")

                gw["c"].kill()  # SIGKILL: its registration expires, its clients lose it
                c_stop.set()
                await _until(http, [gw["a"], gw["b"]], "forgot C", lambda s: c_id not in _live(s))
                done = {g: traffic.answered(g, "record") for g in "ab"}
                await _answers(traffic, {g: n + 3 for g, n in done.items()}, "record")

                # removed from A's configuration: gone from every gateway
                _config(configs["a"], [("alpha", ports["u1"], None)])
                gw["a"].popen.send_signal(signal.SIGHUP)
                await _until(http, [gw["a"], gw["b"]], "dropped beta", lambda s: not _beta(s))
                done = {g: traffic.answered(g, "record") for g in "ab"}
                await _answers(traffic, {g: n + 3 for g, n in done.items()}, "record")
            finally:
                traffic.stop.set()
                c_stop.set()
                await asyncio.wait_for(asyncio.gather(*clients, return_exceptions=True), WAIT_S)
            for g, task in zip(gw, clients, strict=True):  # C's may fail closing: C is dead
                assert g == "c" or task.exception() is None, task.exception()
        assert gw["a"].stop() == 0  # SIGTERM: metering flushed
        assert gw["b"].stop() == 0
        said_a, said_b = "".join(gw["a"].lines), "".join(gw["b"].lines)
        assert f"reload: beta#0 (http://127.0.0.1:{ports['u2']}/mcp) is added" in said_a
        assert f"reload: beta#0 (http://127.0.0.1:{ports['u2']}/mcp) is removed" in said_a
        assert "beta joins from the fleet" in said_b
        assert "beta leaves: no live gateway registers it any more" in said_b
        for up in ups:  # SIGTERM: the upstreams' meters flush before the store is read (the
            assert up.stop() == 0  # stack's exit would SIGKILL them, losing unflushed records)

    ran: dict[str, list[str]] = collections.defaultdict(list)
    for line in log.read_text().splitlines():
        replica, call_id = line.split(" ")
        ran[call_id].append(replica)
    twice = {i: where for i, where in ran.items() if len(where) > 1}
    assert not twice, f"ran twice: {sorted(twice.items())[:10]}"
    kinds = collections.Counter((g, kind) for g, kind, _ in traffic.outcomes.values())
    for call_id, (g, kind, detail) in traffic.outcomes.items():
        if kind == "ok":  # answered by the one replica that ran it
            prefix, text = detail
            replica = text.split(":", 1)[0]
            assert ran[call_id] == [replica], (call_id, detail, ran.get(call_id))
            assert replica == ("u2" if prefix == "b" else "u1"), (call_id, detail)
        elif kind == "not_run":
            assert detail[0] in NOT_RUN, (call_id, detail)
            assert call_id not in ran, (call_id, detail)
        else:  # only at the gateway that was killed: at most its one call in flight
            assert g == "c", (call_id, kind, detail)
    assert kinds[("c", "lost")] + kinds[("c", "may_have_run")] <= 1, kinds  # its one in flight
    assert set(ran) <= set(traffic.outcomes)  # nothing ran that no client asked for
    assert all(traffic.answered(g, "b") >= 3 for g in "abc")  # every gateway routed to beta
    late = [o for o in traffic.outcomes.values() if o[0] in "ab" and o[1] == "not_run"]
    assert late, "no call found beta gone"
    async with await create_storage(store) as opened:
        records = await opened.query(CALLS_NAMESPACE, limit=100_000)
    recorded = [r for r in records if r.get("tool") == "record"]
    assert len(recorded) == len(ran), (len(recorded), len(ran))  # each call once, not per hop
    print(f"{len(traffic.outcomes)} calls: {dict(kinds)}; {len(ran)} ran, "
          f"{len(recorded)} meter records")  # fmt: skip
