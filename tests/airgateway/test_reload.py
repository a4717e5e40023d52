"""A running ``air gateway`` reloads its configuration: on SIGHUP, and on a change of the file
where the watch is on (Windows has no SIGHUP: the watch is how it reloads there; forced on
here by ``AIR_GATEWAY_WATCH_CONFIG=on``). A server added is listed and routed to, one removed
is gone (its tools answer "unknown tool": nothing runs); a bad new file is refused with a clear
log line and the running configuration is kept."""

from __future__ import annotations

import asyncio
import json
import signal
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from airgateway import _platform
from airgateway.config import parse_config
from airgateway.errors import GatewayError
from airgateway.gateway import Gateway
from airgateway.reload import ConfigReloader, ConfigWatch
from airstore.memory import MemoryStore
from tests.airgateway.procs import UPSTREAM, Proc, air, free_port, http_replica, started
from tests.airgateway.rpc import envelope, modern_call

pytestmark = pytest.mark.slow
WAIT_S = 30.0
QUICK = "health:\n  interval_s: 0.5\n"


@pytest.fixture
def upstreams() -> Iterator[tuple[int, int]]:
    """Two real HTTP upstreams answering ``whoami`` with ``one`` and ``two``."""
    ports = free_port(), free_port()
    with (
        started(http_replica("one", ports[0]), env={"REPLICA": "one"}),
        started(http_replica("two", ports[1]), env={"REPLICA": "two"}),
    ):
        yield ports


def _write(path: Path, servers: list[tuple[str, int, str | None]], extra: str = "") -> None:
    lines = ["servers:"]
    for name, port, prefix in servers:
        lines += [f"  - name: {name}", f"    url: http://127.0.0.1:{port}/mcp"]
        if prefix:
            lines.append(f"    prefix: {prefix}")
    path.write_text("\n".join(lines) + "\n" + QUICK + extra)


def _until(what: str, ok: Callable[[], bool]) -> None:
    deadline = time.monotonic() + WAIT_S
    while not ok():
        if time.monotonic() > deadline:
            raise AssertionError(f"never {what}")
        time.sleep(0.05)  # polling the gateway's status or log: nothing to wait on


async def _whoami(gateway: Proc, tool: str) -> Any:
    async with httpx.AsyncClient(timeout=10) as http:
        return await modern_call(http, gateway.url, tool, {})


def _serves(gateway: Proc, tool: str) -> bool:
    body, headers = envelope("tools/list")
    answer = httpx.post(gateway.url, json=body, headers=headers, timeout=10).json()
    return tool in {t["name"] for t in answer["result"]["tools"]}


def _said(gateway: Proc, text: str) -> bool:
    return any(text in line for line in gateway.lines)


def _gateway(config: Path) -> list[str]:
    return air("gateway", "--config", str(config), "--port", "0", "--store", "memory://",
               "--no-meter")  # fmt: skip


async def test_sighup_adds_and_removes_a_server_and_a_bad_file_is_refused_keeping_the_old(
    upstreams: tuple[int, int], tmp_path: Path
) -> None:
    config = tmp_path / "gw.yml"
    _write(config, [("alpha", upstreams[0], None)])
    with started(_gateway(config)) as gateway:
        _until("alpha listed", lambda: _serves(gateway, "whoami"))
        assert not _serves(gateway, "b__whoami")
        _write(config, [("alpha", upstreams[0], None), ("beta", upstreams[1], "b")])
        gateway.popen.send_signal(signal.SIGHUP)
        _until("beta listed", lambda: _serves(gateway, "b__whoami"))
        assert (await _whoami(gateway, "b__whoami"))["result"]["content"][0]["text"] == "two"
        assert (await _whoami(gateway, "whoami"))["result"]["content"][0]["text"] == "one"

        config.write_text("servers:\n  - name: beta\n    url: ftp://nowhere\nbogus: 1\n")
        gateway.popen.send_signal(signal.SIGHUP)
        _until("the bad file refused", lambda: _said(gateway, "reload refused"))
        refusal = next(line for line in gateway.lines if "reload refused" in line)
        assert str(config) in refusal
        assert "the running configuration is kept" in refusal
        assert (await _whoami(gateway, "b__whoami"))["result"]["content"][0]["text"] == "two"
        assert _serves(gateway, "whoami")

        _write(config, [("alpha", upstreams[0], None)])
        gateway.popen.send_signal(signal.SIGHUP)
        _until("beta gone", lambda: not _serves(gateway, "b__whoami"))
        gone = await _whoami(gateway, "b__whoami")
        assert gone["error"]["code"] == -32602, gone  # unknown tool: nothing ran
        assert (await _whoami(gateway, "whoami"))["result"]["content"][0]["text"] == "one"
        assert gateway.popen.poll() is None
        assert gateway.stop() == 0


async def test_a_changed_file_is_reloaded_without_a_signal_where_the_watch_is_on(
    upstreams: tuple[int, int], tmp_path: Path
) -> None:
    config = tmp_path / "gw.yml"
    _write(config, [("alpha", upstreams[0], None)])
    argv = _gateway(config)
    with started(argv, env={"AIR_GATEWAY_WATCH_CONFIG": "on"}) as gateway:
        _until("alpha listed", lambda: _serves(gateway, "whoami"))
        _write(config, [("alpha", upstreams[0], None), ("beta", upstreams[1], "b")])
        _until("beta listed", lambda: _serves(gateway, "b__whoami"))
        assert (await _whoami(gateway, "b__whoami"))["result"]["content"][0]["text"] == "two"
        config.write_text("servers: [")  # not YAML: refused, the running one kept
        _until("the bad file refused", lambda: _said(gateway, "reload refused"))
        assert _serves(gateway, "b__whoami")
        _write(config, [("beta", upstreams[1], "b")])
        _until("alpha gone", lambda: not _serves(gateway, "whoami"))
        assert (await _whoami(gateway, "b__whoami"))["result"]["content"][0]["text"] == "two"
        assert gateway.stop() == 0


def test_without_sighup_the_file_is_watched_and_no_signal_is_installed(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    assert _platform.reload_signal() is signal.SIGHUP
    assert not _platform.needs_file_watch()
    monkeypatch.delattr(signal, "SIGHUP")  # the Windows shape
    monkeypatch.delenv("AIR_GATEWAY_WATCH_CONFIG", raising=False)
    assert _platform.reload_signal() is None
    assert _platform.needs_file_watch()
    assert _platform.on_reload_signal(lambda: None) is None
    config = parse_config("servers:\n  - name: a\n    url: http://127.0.0.1:1/mcp\n")
    reloader = ConfigReloader(Gateway(config, store=MemoryStore()), "gw.yml")
    assert reloader.watch


def test_the_watch_sees_a_change_of_content_even_when_size_and_time_stay(tmp_path: Path) -> None:
    import os

    path = tmp_path / "gw.yml"
    path.write_text("servers: [a]\n")
    stat = path.stat()
    watch = ConfigWatch(str(path))
    assert not watch.changed()
    path.write_text("servers: [b]\n")  # same size
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns))  # same time (a coarse clock)
    assert watch.changed()
    assert not watch.changed()
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns + 10**9))  # touched, same content
    assert not watch.changed()
    path.unlink()  # an editor replacing it: missing for now is no change
    assert not watch.changed()
    path.write_text("servers: [c]\n")
    assert watch.changed()


def _stdio_config(names: list[str]) -> Any:
    lines = ["servers:"]
    for name in names:
        lines += [f"  - name: {name}", f"    prefix: {name}",
                  f"    command: [{json.dumps(sys.executable)}, '-m', 'aircli', 'serve', "
                  f"{json.dumps(UPSTREAM)}]"]  # fmt: skip
    return parse_config("\n".join(lines) + "\nhealth:\n  interval_s: 600\n")


async def test_a_removed_stdio_server_finishes_its_call_in_flight_then_its_child_is_stopped() -> (
    None
):
    import psutil

    gateway = Gateway(_stdio_config(["one", "two"]), store=MemoryStore(), share_registry=False)
    async with gateway:
        child = int((await gateway.call_tool({"name": "two__pid", "arguments": {}}))
                    ["content"][0]["text"])  # fmt: skip
        in_flight = asyncio.ensure_future(
            gateway.call_tool({"name": "two__slow_write", "arguments": {"seconds": 1.5}})
        )
        # the router counts calls with a bare int: nothing to wait on
        while not any(r.in_flight for r in gateway.router.replicas["two"]):  # noqa: ASYNC110
            await asyncio.sleep(0.01)
        changes = await gateway.reload(_stdio_config(["one"]))
        assert changes == [f"two#0 ({sys.executable} -m aircli serve {UPSTREAM}) is removed"]
        assert not any(t["name"].startswith("two__") for t in gateway.index.tools())
        with pytest.raises(GatewayError) as gone:
            await gateway.call_tool({"name": "two__pid", "arguments": {}})
        assert gone.value.code == -32602  # unknown tool now: nothing ran
        assert psutil.pid_exists(child)  # still serving the call in flight
        done = await asyncio.wait_for(in_flight, WAIT_S)
        assert done["content"][0]["text"] == "solo"  # the call in flight got its answer
        await asyncio.to_thread(psutil.Process(child).wait, WAIT_S)  # then the child stops
        added = await gateway.reload(_stdio_config(["one", "two"]))
        assert added == [f"two#0 ({sys.executable} -m aircli serve {UPSTREAM}) is added"]
        deadline = time.monotonic() + WAIT_S
        while not any(t["name"] == "two__pid" for t in gateway.index.tools()):
            assert time.monotonic() < deadline, "two never listed again"
            await asyncio.sleep(0.05)  # its first check runs in the background
        again = await gateway.call_tool({"name": "two__pid", "arguments": {}})
        assert int(again["content"][0]["text"]) != child
