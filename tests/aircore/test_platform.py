"""aircore's platform seam (``aircore._platform``) with the Windows shape selected on Linux:
stdin read by a thread, stdout written by a thread, stop signals without loop handlers. Real
pipes, real processes, the official ``mcp`` client."""

from __future__ import annotations

import asyncio
import os
import pty
import re
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import orjson
import pytest
from mcp import Client, StdioServerParameters

import aircore._platform as plat
from airmeter import CALLS_NAMESPACE, snapshot
from airstore import FileStore
from tests.aircore.conftest import DEMO, LIFECYCLE, ROOT, serve_args

METERED = str(ROOT / "tests" / "airmeter" / "aircore_metered_server.py")
WAIT = 30.0
MODERN_META = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientCapabilities": {},
}


@pytest.fixture
def thread_path() -> Iterator[None]:
    plat.PIPE_TRANSPORTS = False
    try:
        yield
    finally:
        plat.PIPE_TRANSPORTS = True


async def test_the_thread_path_reads_a_real_pipe_in_order_and_sees_its_end(
    thread_path: None,
) -> None:
    read_fd, write_fd = os.pipe()
    try:
        stdin = await plat.open_stdin(read_fd, 4096)
        assert isinstance(stdin, plat.ThreadInput)
        sent = bytes(range(256)) * 200  # 51 KB: several chunks
        writer = asyncio.ensure_future(asyncio.to_thread(os.write, write_fd, sent))
        got = bytearray()
        async with asyncio.timeout(WAIT):
            while len(got) < len(sent):
                chunk = await stdin.read()
                assert chunk
                assert len(chunk) <= 4096
                got += chunk
            await writer
            os.close(write_fd)
            write_fd = -1
            assert await stdin.read() == b""
        assert bytes(got) == sent
        stdin.close()
    finally:
        os.close(read_fd)
        if write_fd >= 0:
            os.close(write_fd)


async def test_the_thread_path_writes_a_real_pipe_and_reports_its_backlog(
    thread_path: None,
) -> None:
    read_fd, write_fd = os.pipe()
    loop = asyncio.get_running_loop()
    try:
        out = await plat.open_stdout(write_fd, 256 * 1024)
        assert isinstance(out, plat.ThreadOutput)
        paused: list[bool] = []
        blocked_once = asyncio.Event()
        resumed = asyncio.Event()

        def on_pause(blocked: bool) -> None:
            paused.append(blocked)
            (blocked_once if blocked else resumed).set()

        out.on_pause = on_pause
        block = b"x" * (64 * 1024)
        for _ in range(16):  # 1 MiB into a pipe nobody reads yet (it holds 64 KiB)
            out.write(block)
        async with asyncio.timeout(WAIT):
            await blocked_once.wait()
            assert paused == [True]
            assert out.buffered() > 256 * 1024
            got = bytearray()
            while len(got) < 16 * len(block):
                got += await loop.run_in_executor(None, os.read, read_fd, 1 << 20)
            await resumed.wait()
            # the writer thread puts its last bytes in the pipe before it takes them off the
            # backlog count: the reader can be done a moment before the count says so
            for _ in range(int(WAIT / 0.005)):
                if not out.buffered():
                    break
                await asyncio.sleep(0.005)
        assert bytes(got) == block * 16
        assert out.buffered() == 0
        await out.close()
    finally:
        os.close(read_fd)
        os.close(write_fd)


async def test_the_official_client_over_stdio_served_through_the_reader_thread() -> None:
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "tests.windows_shape", "serve", LIFECYCLE, "--transport", "stdio"],
        cwd=str(ROOT),
        env={**os.environ, "AIR_TEST_EVENTS": os.devnull},
    )
    async with asyncio.timeout(WAIT), Client(params) as client:
        tools = (await client.list_tools()).tools
        assert [t.name for t in tools] == ["echo"]
        big = "y" * 300_000  # several reads of the thread's chunk, in and out
        for text in ("one", big, "three"):
            result = await client.call_tool("echo", {"text": text})
            assert result.content[0].text == text  # type: ignore[union-attr]


async def test_ctrl_c_without_loop_signal_handlers_stops_the_server_and_flushes_the_meter(
    tmp_path: Path,
) -> None:
    data = tmp_path / "data"
    n = 200
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "tests.windows_shape", "serve", METERED,
        "--transport", "stdio", "--store", f"file://{data}",
        cwd=str(ROOT), env={**os.environ, "PYTHONPATH": str(ROOT)},
        stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    try:
        assert proc.stdin is not None
        assert proc.stdout is not None
        assert proc.stderr is not None
        frames = b"".join(
            orjson.dumps({"jsonrpc": "2.0", "id": i, "method": "tools/call",
                          "params": {"name": "echo", "arguments": {"text": str(i)}}}) + b"\n"
            for i in range(n)
        )  # fmt: skip
        proc.stdin.write(frames)
        await proc.stdin.drain()
        async with asyncio.timeout(WAIT):
            answers = [orjson.loads(await proc.stdout.readline()) for _ in range(n)]
            assert sorted(a["id"] for a in answers) == list(range(n))
            proc.send_signal(signal.SIGINT)  # stdin stays open: only Ctrl+C stops it
            assert await proc.wait() == 0
            said = (await proc.stderr.read()).decode()
        assert "Traceback" not in said, said
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()
    async with FileStore(data, read_only=True) as store:
        logged = await store.query(CALLS_NAMESPACE, limit=2 * n)
        assert (await snapshot(store)).total_calls == n
    assert sorted(int(e["request_id"]) for e in logged) == list(range(n))


def test_http_without_uvloop_or_loop_signal_handlers_serves_the_official_client_and_stops(
    tmp_path: Path,
) -> None:
    """As on Windows: asyncio's default loop, and Ctrl+C reaching the server through a
    process signal handler."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "tests.windows_shape", "--no-uvloop", "serve", DEMO,
         "--transport", "http", "--port", "0", "--store", f"file://{tmp_path / 'data'}"],
        stdin=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, cwd=ROOT,
    )  # fmt: skip
    try:
        assert proc.stderr is not None
        line = proc.stderr.readline()  # the URL, once listening (or the reason it died)
        found = re.search(r"http://\S+", line)
        assert found is not None, line
        url = found.group(0)

        async def call() -> str:
            async with asyncio.timeout(WAIT), Client(url) as client:
                result = await client.call_tool("ping", {})
                return str(result.content[0].text)  # type: ignore[union-attr]

        assert asyncio.run(call())
        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=WAIT) == 0
        assert "Traceback" not in proc.stderr.read()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        if proc.stderr is not None:
            proc.stderr.close()


def test_ctrl_c_ends_a_server_whose_stdin_is_a_terminal(tmp_path: Path) -> None:
    """stdin that is no pipe (a developer's terminal) is read by a daemon thread: Ctrl+C ends
    the process. It hung before, after ``on_stop``: the read blocked a thread of the loop's
    executor, which the loop's shutdown waits for."""
    events = tmp_path / "events.txt"
    master, slave = pty.openpty()
    proc = subprocess.Popen(
        serve_args(LIFECYCLE, "--transport", "stdio"),
        stdin=slave, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, cwd=ROOT,
        env={**os.environ, "AIR_TEST_EVENTS": str(events)},
    )  # fmt: skip
    os.close(slave)
    try:
        assert proc.stdout is not None
        frame = {"jsonrpc": "2.0", "id": "up", "method": "server/discover",
                 "params": {"_meta": MODERN_META}}  # fmt: skip
        os.write(master, orjson.dumps(frame) + b"\n")  # typed at the terminal
        assert orjson.loads(proc.stdout.readline())["id"] == "up"  # serving, handlers set
        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=WAIT) == 0
        assert events.read_text().split()[-1] == "stop"
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        os.close(master)
        if proc.stdout is not None:
            proc.stdout.close()
