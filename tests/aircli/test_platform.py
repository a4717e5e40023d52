"""The ``air`` commands' platform seam (``aircli._platform``): SIGTERM (and Ctrl+Break where
the interpreter has SIGBREAK) stop the dashboard like Ctrl+C, with real processes."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from aircli._platform import reader_gone, terminate_signals
from airmeter import snapshot
from airstore import FileStore
from tests.air_process import air

ROOT = Path(__file__).resolve().parents[2]

WAIT = 60.0


def test_the_terminate_signals_are_those_this_interpreter_has() -> None:
    expected = [signal.SIGTERM]
    if hasattr(signal, "SIGBREAK"):
        expected.append(signal.SIGBREAK)
    assert list(terminate_signals()) == expected


def test_a_pipe_whose_reader_closed_is_told_apart_from_one_still_read() -> None:
    read_fd, write_fd = os.pipe()
    try:
        assert not reader_gone(write_fd)
        os.close(read_fd)
        read_fd = -1
        assert reader_gone(write_fd)
    finally:
        os.close(write_fd)
        if read_fd >= 0:
            os.close(read_fd)


async def _record_one(data: Path) -> None:
    async with FileStore(data) as store:
        await store.set("calls", "one", {"n": 1})


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_the_dashboard_stops_cleanly_on_sigterm_as_on_ctrl_c(
    tmp_path: Path, sig: signal.Signals
) -> None:
    asyncio.run(_record_one(tmp_path / "data"))
    proc = subprocess.Popen(
        air("dashboard", "--store", f"file://{tmp_path / 'data'}", "--port", "0"),
        stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert proc.stdout is not None
        assert proc.stderr is not None
        line = proc.stdout.readline()  # the URL, once serving
        assert "serving" in line, line + proc.stderr.read()
        proc.send_signal(sig)
        assert proc.wait(timeout=WAIT) == 0
        said = proc.stderr.read()
        assert "air dashboard: stopping" in said
        assert "Traceback" not in said
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        for pipe in (proc.stdout, proc.stderr):
            if pipe is not None:
                pipe.close()


@pytest.mark.slow
@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_air_demo_without_loop_signal_handlers_stops_and_everything_is_flushed(
    tmp_path: Path, sig: signal.Signals
) -> None:
    """The Windows shape (``tests/windows_shape.py``: process signal handlers, no uvloop): the
    demo stops cleanly and every call its server recorded reached the store."""
    store = tmp_path / "data"
    argv = [sys.executable, "-m", "tests.windows_shape", "--no-uvloop", "demo", "--calls", "40",
            "--store", f"file://{store}", "--port", "0", "--history", "0"]  # fmt: skip
    proc = subprocess.Popen(
        argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        text=True, cwd=tmp_path, env={**os.environ, "PYTHONPATH": str(ROOT)},
    )  # fmt: skip
    try:
        assert proc.stdout is not None
        assert proc.stderr is not None
        line = proc.stdout.readline()  # the dashboard's URL, once the traffic has run
        assert "http://127.0.0.1:" in line, line + proc.stderr.read()
        proc.send_signal(sig)
        assert proc.wait(timeout=WAIT) == 0
        said = proc.stderr.read()
        assert "every recorded call was flushed" in said
        assert "Traceback" not in said
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        for pipe in (proc.stdout, proc.stderr):
            if pipe is not None:
                pipe.close()
    lines = (store / "meter.calls.log.jsonl").read_bytes().splitlines()
    assert len(lines) >= 40

    async def total() -> int:
        async with FileStore(store, read_only=True) as opened:
            return (await snapshot(opened)).total_calls

    assert asyncio.run(total()) == len(lines)
