"""The gateway's child-process seam (``airgateway._platform``) with the Windows implementation
selected on Linux (no process groups, no SIGKILL: ``terminate``/``kill`` where Ctrl+Break and
``taskkill`` are missing): a real stdio upstream is started, answers, is restarted after it
dies and is stopped; and a real ``air gateway`` in that shape stops its children on Ctrl+C."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

import airgateway._platform as plat
from airgateway.upstream_stdio import StdioUpstream
from tests.aircore.conftest import ROOT
from tests.airgateway.procs import UPSTREAM, started

WAIT = 30.0
META = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientCapabilities": {},
}


@pytest.fixture
def console_groups() -> Iterator[None]:
    former = plat.PROCESSES
    plat.PROCESSES = plat.ConsoleGroups()
    try:
        yield
    finally:
        plat.PROCESSES = former


def _gone(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as fh:
            return fh.read().rsplit(")", 1)[1].split()[0] == "Z"
    except FileNotFoundError:
        return True


async def _pid(upstream: StdioUpstream) -> int:
    result = await upstream.request("tools/call", {"name": "pid", "arguments": {}}, timeout=WAIT)
    return int(result["content"][0]["text"])


def test_the_windows_shape_spawns_in_the_parents_group_where_no_console_group_exists() -> None:
    groups = plat.ConsoleGroups()
    flag = getattr(subprocess, "CREATE_NEW_PROCESS_GROUP", None)
    assert groups.spawn_options() == ({} if flag is None else {"creationflags": flag})
    assert plat.ProcessGroups().spawn_options() == {"start_new_session": True}
    assert isinstance(plat.PROCESSES, plat.ProcessGroups)  # what this interpreter offers


async def test_a_stdio_upstream_starts_restarts_and_stops_without_process_groups(
    console_groups: None,
) -> None:
    restarted = asyncio.Event()

    def listener(_label: str, message: Any) -> None:
        if message.get("method") == "notifications/tools/list_changed":
            restarted.set()

    upstream = StdioUpstream(
        "solo",
        [sys.executable, "-m", "aircli", "serve", UPSTREAM],
        cwd=str(ROOT),
        listener=listener,
        handshake_timeout=WAIT,
    )
    try:
        async with asyncio.timeout(2 * WAIT):
            await upstream.connect()
            first = await _pid(upstream)
            assert first == upstream.pid
            assert os.getpgid(first) == os.getpgid(0)  # no group of its own in this shape
            os.kill(first, signal.SIGKILL)  # it dies: the supervisor starts another
            await restarted.wait()
            second = await _pid(upstream)
            assert second != first
            assert upstream.restarts == 1
            await upstream.close()
            assert upstream.pid is None
            assert _gone(second)
    finally:
        await upstream.close()


async def test_a_child_that_ignores_its_closed_stdin_is_asked_then_killed(
    console_groups: None, tmp_path: Path
) -> None:
    """stdin closed, then ``ask_to_stop`` (terminate here, Ctrl+Break on Windows), then
    ``kill``: a child that ignores the first two still ends."""
    stubborn = tmp_path / "stubborn.py"
    stubborn.write_text(
        "import signal, sys, time\n"
        "signal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
        f"sys.path.insert(0, {str(ROOT)!r})\n"
        "import runpy\n"
        "sys.argv = ['air', 'serve', " + repr(UPSTREAM) + "]\n"
        "import atexit\n"
        "atexit.register(lambda: time.sleep(3600))  # ignores its stdin's end too\n"
        "runpy.run_module('aircli', run_name='__main__')\n"
    )
    upstream = StdioUpstream("stubborn", [sys.executable, str(stubborn)], handshake_timeout=WAIT)
    try:
        async with asyncio.timeout(4 * WAIT):
            await upstream.connect()
            pid = await _pid(upstream)
            await upstream.close()
            assert _gone(pid)
    finally:
        await upstream.close()


def test_ctrl_c_stops_a_gateway_in_the_windows_shape_and_its_stdio_children(
    tmp_path: Path,
) -> None:
    config = tmp_path / "gw.yml"
    config.write_text(
        "servers:\n  - name: files\n"
        f"    command: [{json.dumps(sys.executable)}, '-m', 'aircli', 'serve', "
        f"{json.dumps(UPSTREAM)}]\n"
    )
    argv = [sys.executable, "-m", "tests.windows_shape", "--no-uvloop", "gateway",
            "--config", str(config), "--port", "0"]  # fmt: skip
    with started(argv, env={"PYTHONPATH": str(ROOT)}) as gateway:
        reply = httpx.post(
            gateway.url,
            json={"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                  "params": {"name": "pid", "_meta": META}},
            headers={"mcp-protocol-version": "2026-07-28", "mcp-method": "tools/call",
                     "mcp-name": "pid", "accept": "application/json"},
            timeout=WAIT,
        )  # fmt: skip
        child = int(reply.json()["result"]["content"][0]["text"])
        assert gateway.stop(signal.SIGINT) == 0
    assert _gone(child)
