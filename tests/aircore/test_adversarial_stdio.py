"""Hostile stdio clients against a real ``air serve --transport stdio`` process."""

from __future__ import annotations

import json
import os
import select
import subprocess
from pathlib import Path

import pytest

from tests.aircore.conftest import LIFECYCLE, ROOT, STARTUP_TIMEOUT, serve_args

# real air serve processes, hostile clients: make test, not test-fast
pytestmark = pytest.mark.slow

META = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientCapabilities": {},
}
STALL = 3.0  # seconds a write may wait for the pipe before we call the server stalled


def _rss_mib(pid: int, field: str = "VmRSS") -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(f"{field}:"):
            return int(line.split()[1]) // 1024
    raise AssertionError(f"no {field}")


def _ready(proc: subprocess.Popen[bytes]) -> None:
    """Wait for the server to answer one request (it is up and its baseline RSS is set)."""
    assert proc.stdin is not None
    assert proc.stdout is not None
    frame = {"jsonrpc": "2.0", "id": "up", "method": "server/discover", "params": {"_meta": META}}
    proc.stdin.write(json.dumps(frame).encode() + b"\n")
    proc.stdin.flush()
    readable, _, _ = select.select([proc.stdout], [], [], STARTUP_TIMEOUT)
    assert readable, "the server did not answer"
    assert json.loads(proc.stdout.readline())["id"] == "up"


def test_a_client_that_never_reads_stdout_cannot_grow_the_server(tmp_path: Path) -> None:
    proc = subprocess.Popen(
        serve_args(LIFECYCLE, "--transport", "stdio"),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        cwd=ROOT,
        env={**os.environ, "AIR_TEST_EVENTS": str(tmp_path / "events.txt")},
    )
    assert proc.stdin is not None
    try:
        _ready(proc)
        base = _rss_mib(proc.pid)
        fd = proc.stdin.fileno()
        os.set_blocking(fd, False)
        text = "x" * (1024 * 1024)  # each answer carries 1 MiB back, never read
        accepted = 0
        stalled = False
        for i in range(400):
            frame = {
                "jsonrpc": "2.0",
                "id": i,
                "method": "tools/call",
                "params": {"name": "echo", "arguments": {"text": text}, "_meta": META},
            }
            view = memoryview(json.dumps(frame).encode() + b"\n")
            while view and not stalled:
                _, writable, _ = select.select([], [fd], [], STALL)
                if not writable:
                    stalled = True  # the server stopped reading: backpressure
                    break
                try:
                    view = view[os.write(fd, view) :]
                except BlockingIOError:
                    continue
            if stalled:
                break
            accepted += 1
        assert stalled, f"the server read all {accepted} requests without anyone reading answers"
        assert _rss_mib(proc.pid) - base < 96  # 400 such calls once took it past 500 MiB
        # the client reads again: the server resumes and answers what it accepted
        assert proc.stdout is not None
        os.set_blocking(proc.stdout.fileno(), True)
        for _ in range(min(accepted, 3)):
            assert json.loads(proc.stdout.readline())["result"]["content"][0]["text"] == text
    finally:
        proc.kill()
        proc.wait(STARTUP_TIMEOUT)
        for pipe in (proc.stdin, proc.stdout):
            if pipe is not None:
                pipe.close()


BLOB = str(ROOT / "tests" / "aircore" / "fixtures" / "blob_server.py")


def test_small_requests_for_large_answers_unread_keep_the_server_near_its_buffer(
    tmp_path: Path,
) -> None:
    """Issue 31 item 13: 400 small requests, each answered with 1 MiB, and a client that
    never reads. The calls already running when the output filled cannot be refused, so how
    many start matters: once 64 at a time (the in-flight cap; ~150 MiB of peak RSS for 1 MiB
    answers, ~640 MiB for 5 MB ones), now a few per loop turn while answers of that tool may be
    large, and no more than fit in the 4 MiB buffer. 10,000 requests are more than the server
    reads ahead (at most 768 KiB) and the pipe holds, so a server that stops reading stalls the
    client's writes."""
    events = tmp_path / "events.txt"
    events.touch()
    proc = subprocess.Popen(
        serve_args(BLOB, "--transport", "stdio"),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        cwd=ROOT,
        env={**os.environ, "AIR_TEST_EVENTS": str(events)},
    )
    assert proc.stdin is not None
    assert proc.stdout is not None
    size = 1024 * 1024
    try:
        _ready(proc)
        base = _rss_mib(proc.pid)
        fd = proc.stdin.fileno()
        os.set_blocking(fd, False)
        accepted = 0
        stalled = False
        for i in range(10_000):
            frame = {
                "jsonrpc": "2.0",
                "id": i,
                "method": "tools/call",
                "params": {"name": "blob", "arguments": {"size": size}, "_meta": META},
            }
            view = memoryview(json.dumps(frame).encode() + b"\n")
            while view and not stalled:
                _, writable, _ = select.select([], [fd], [], STALL)
                if not writable:
                    stalled = True  # the server stopped reading: backpressure
                    break
                try:
                    view = view[os.write(fd, view) :]
                except BlockingIOError:
                    continue
            if stalled:
                break
            accepted += 1
        assert stalled, f"the server read all {accepted} requests without anyone reading answers"
        started = len(events.read_text().splitlines())
        peak = _rss_mib(proc.pid, "VmHWM")
        assert started <= 16, f"{started} calls of 1 MiB answers started for a client not reading"
        assert peak - base < 48, f"peak RSS {base} -> {peak} MiB"
        # the client reads again: every call started is answered, in full
        os.set_blocking(proc.stdout.fileno(), True)
        for _ in range(started):
            answer = json.loads(proc.stdout.readline())
            assert len(answer["result"]["content"][0]["text"]) == size
    finally:
        proc.kill()
        proc.wait(STARTUP_TIMEOUT)
        for pipe in (proc.stdin, proc.stdout):
            if pipe is not None:
                pipe.close()
