"""How a stdio upstream's process group is stopped, with real processes: what a wrapper left
behind dies with it, and a pid handed to someone else after the child was reaped is never
signalled."""

from __future__ import annotations

import asyncio
import subprocess
import time
from types import SimpleNamespace
from typing import Any

import pytest
import uvloop

from airgateway._platform import ProcessGroups


def _alive(pid: int) -> bool:
    """Running (a zombie left for a PID 1 that does not reap counts as dead)."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as fh:
            return fh.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def test_what_an_exited_wrapper_left_in_its_group_is_killed() -> None:
    """On uvloop, as the gateway runs (plain asyncio's ``wait`` on Python 3.11 returns only
    once the pipes close, which the sleep keeps open)."""

    async def body() -> int:
        proc = await asyncio.create_subprocess_exec(
            "sh", "-c", "sleep 60 & echo $!", stdout=asyncio.subprocess.PIPE,
            start_new_session=True,
        )  # fmt: skip
        assert proc.stdout is not None
        orphan = int((await proc.stdout.readline()).decode())
        await proc.wait()  # the wrapper exited and is reaped; its sleep lives on in the group
        assert _alive(orphan)
        ProcessGroups().kill(proc)
        async with asyncio.timeout(30):  # fails only on a hang: the sleep would hold it 60 s
            assert await proc.stdout.read() == b""  # the pipe's last holder is gone
        return orphan

    orphan = uvloop.run(body())
    # SIGKILL is delivered asynchronously: on a loaded machine the sleep may still be running a
    # moment after kill() returned (seen under pytest-xdist). A bound against a hang, not a speed
    # check: it is dead within it, or the kill missed it.
    deadline = time.monotonic() + 10
    while _alive(orphan) and time.monotonic() < deadline:
        time.sleep(0.01)
    assert not _alive(orphan)


def test_a_pid_reused_after_the_child_was_reaped_is_never_signalled() -> None:
    stranger = subprocess.Popen(["sleep", "60"], start_new_session=True)
    try:
        # our child, long reaped, had the pid the stranger (a group leader too) now has
        reaped: Any = SimpleNamespace(pid=stranger.pid, returncode=0)
        ProcessGroups().kill(reaped)
        with pytest.raises(subprocess.TimeoutExpired):  # a SIGKILL would end it at once
            stranger.wait(timeout=1)
    finally:
        stranger.kill()
        stranger.wait()
