"""Raw frames over a real stdio pipe: every malformed frame gets its error; lifecycle on exit."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from tests.aircore.conftest import LIFECYCLE, serve_args

# a real air serve --transport stdio process per test: make test, not test-fast
pytestmark = pytest.mark.slow

WAIT = 20.0
MAX = 64 * 1024


class Proc:
    def __init__(self, proc: asyncio.subprocess.Process) -> None:
        self.proc = proc

    async def send(self, data: bytes) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(data)
        await self.proc.stdin.drain()

    async def recv(self) -> dict[str, Any]:
        assert self.proc.stdout is not None
        line = await asyncio.wait_for(self.proc.stdout.readline(), WAIT)
        assert line, "server closed stdout"
        out: dict[str, Any] = json.loads(line)
        return out

    async def ask(self, frame: bytes) -> dict[str, Any]:
        await self.send(frame)
        return await self.recv()


@pytest.fixture
def events(tmp_path: Path) -> Path:
    return tmp_path / "events.txt"


@pytest.fixture
async def proc(events: Path) -> AsyncIterator[Proc]:
    p = await asyncio.create_subprocess_exec(
        *serve_args(LIFECYCLE, "--transport", "stdio", "--max-message", str(MAX)),
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.DEVNULL,
        env={**os.environ, "AIR_TEST_EVENTS": str(events)},
    )
    try:
        yield Proc(p)
    finally:
        if p.returncode is None:
            p.kill()
        await p.wait()


def _events(path: Path) -> list[str]:
    with open(path, encoding="utf-8") as fh:
        return fh.read().split()


def _frame(obj: Any) -> bytes:
    return json.dumps(obj).encode() + b"\n"


CALL = {
    "jsonrpc": "2.0",
    "id": "ok",
    "method": "tools/call",
    "params": {"name": "echo", "arguments": {"text": "alive"}},
}

MALFORMED: list[tuple[bytes, int, Any]] = [
    (b"{not json\n", -32700, None),
    (b'{"jsonrpc": "2.0", "id": 1, "method": "ping"\n', -32700, None),
    (b"\xff\xfe garbage\n", -32700, None),
    (_frame([{"jsonrpc": "2.0", "id": 2, "method": "ping"}]), -32600, None),
    (_frame([]), -32600, None),
    (_frame(42), -32600, None),
    (_frame({"jsonrpc": "2.0", "id": 3, "method": 17}), -32600, 3),
    (_frame({"jsonrpc": "2.0", "id": 4, "method": None}), -32600, 4),
    (_frame({"jsonrpc": "2.0", "id": 5}), -32600, 5),
    (_frame({"id": 6, "method": "ping"}), -32600, 6),
    (_frame({"jsonrpc": "2.0", "id": [7], "method": "ping"}), -32600, None),
    (_frame({"jsonrpc": "2.0", "id": 8, "method": "ping", "params": [1]}), -32602, 8),
    (_frame({"jsonrpc": "2.0", "id": 9, "method": "ping", "params": 3}), -32602, 9),
    (
        _frame(
            {
                "jsonrpc": "2.0",
                "id": 10,
                "method": "tools/call",
                "params": {"name": "echo", "arguments": "text"},
            }
        ),
        -32602,
        10,
    ),
    (
        _frame({"jsonrpc": "2.0", "id": 11, "method": "tools/call", "params": {"name": 1}}),
        -32602,
        11,
    ),
    (_frame({"jsonrpc": "2.0", "id": 12, "method": "unknown/method"}), -32601, 12),
    (
        b'{"jsonrpc": "2.0", "id": 13, "method": "ping", "params": {"pad": "'
        + b"x" * (2 * MAX)
        + b'"}}\n',
        -32600,
        None,
    ),
]


async def test_every_malformed_frame_gets_an_error_and_the_server_keeps_serving(
    proc: Proc,
) -> None:
    for frame, code, echo in MALFORMED:
        answer = await proc.ask(frame)
        assert answer["jsonrpc"] == "2.0"
        assert answer["error"]["code"] == code, frame[:80]
        assert answer["id"] == echo
        alive = await proc.ask(_frame(CALL))
        assert alive == {
            "jsonrpc": "2.0",
            "id": "ok",
            "result": {"content": [{"type": "text", "text": "alive"}]},
        }


async def test_invalid_arguments_are_a_tool_error_result(proc: Proc) -> None:
    answer = await proc.ask(
        _frame(
            {
                "jsonrpc": "2.0",
                "id": 1,
                "method": "tools/call",
                "params": {"name": "echo", "arguments": {"text": 5}},
            }
        )
    )
    assert answer["result"]["isError"] is True
    assert "text: must be string" in answer["result"]["content"][0]["text"]


async def test_pipelined_requests_are_all_answered(proc: Proc) -> None:
    n = 200
    await proc.send(
        b"".join(
            _frame(
                {
                    "jsonrpc": "2.0",
                    "id": i,
                    "method": "tools/call",
                    "params": {"name": "echo", "arguments": {"text": str(i)}},
                }
            )
            for i in range(n)
        )
    )
    answers = [await proc.recv() for _ in range(n)]
    assert sorted(a["id"] for a in answers) == list(range(n))
    assert all(a["result"]["content"][0]["text"] == str(a["id"]) for a in answers)


async def test_stdin_eof_stops_the_server_and_runs_on_stop(proc: Proc, events: Path) -> None:
    assert (await proc.ask(_frame(CALL)))["id"] == "ok"
    assert proc.proc.stdin is not None
    proc.proc.stdin.close()
    assert await asyncio.wait_for(proc.proc.wait(), WAIT) == 0
    assert _events(events) == ["init", "start", "register:echo", "stop"]


async def test_sigterm_stops_the_server_and_runs_on_stop(proc: Proc, events: Path) -> None:
    assert (await proc.ask(_frame(CALL)))["id"] == "ok"
    proc.proc.send_signal(signal.SIGTERM)
    assert await asyncio.wait_for(proc.proc.wait(), WAIT) == 0
    assert _events(events) == ["init", "start", "register:echo", "stop"]


@pytest.mark.parametrize("source", ["file", "devnull"])
async def test_stdin_from_a_file_or_dev_null_is_served_to_its_end(
    tmp_path: Path, events: Path, source: str
) -> None:
    frames = tmp_path / "frames.jsonl"
    frames.write_bytes(_frame(CALL) + _frame({"jsonrpc": "2.0", "id": 2, "method": "ping"}))
    path = frames if source == "file" else Path(os.devnull)
    with path.open("rb") as stdin:
        p = await asyncio.create_subprocess_exec(
            *serve_args(LIFECYCLE, "--transport", "stdio"),
            stdin=stdin,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            env={**os.environ, "AIR_TEST_EVENTS": str(events)},
        )
    try:
        out, err = await asyncio.wait_for(p.communicate(), WAIT)
    finally:
        if p.returncode is None:
            p.kill()
            await p.wait()
    assert p.returncode == 0, err
    assert b"Traceback" not in err, err
    answers = [json.loads(line) for line in out.splitlines()]
    assert sorted(str(a["id"]) for a in answers) == (["2", "ok"] if source == "file" else [])
    assert all("result" in a for a in answers)
    assert _events(events)[-1] == "stop"


async def test_answers_written_to_dev_null_end_in_a_clean_exit(
    tmp_path: Path, events: Path
) -> None:
    """stdout on /dev/null (a character device, not a pipe): blocking writes, never the event
    loop's pipe transport (uvloop aborted the process on it: exit 134)."""
    frames = tmp_path / "frames.jsonl"
    frames.write_bytes(_frame(CALL) + _frame({"jsonrpc": "2.0", "id": 2, "method": "ping"}))
    with frames.open("rb") as stdin:
        p = await asyncio.create_subprocess_exec(
            *serve_args(LIFECYCLE, "--transport", "stdio"),
            stdin=stdin,
            stdout=asyncio.subprocess.DEVNULL,  # /dev/null, opened for the child
            stderr=asyncio.subprocess.PIPE,
            env={**os.environ, "AIR_TEST_EVENTS": str(events)},
        )
    try:
        _, err = await asyncio.wait_for(p.communicate(), WAIT)
    finally:
        if p.returncode is None:
            p.kill()
            await p.wait()
    assert p.returncode == 0, err
    assert b"Traceback" not in err, err
    assert _events(events) == ["init", "start", "register:echo", "stop"]


EXITING_SERVER = """\
import sys
from aircore import define_resource, define_server, define_tool

def bye(params):
    sys.exit(3)  # as argparse does inside a wrapped CLI

server = define_server(
    name="exiting",
    tools=[define_tool("bye", handler=bye), define_tool("ping", handler=lambda p: "pong")],
    resources=[define_resource("exit://now", handler=lambda uri: sys.exit(4))],
)
"""


async def test_a_handler_calling_sys_exit_is_a_failed_call_not_a_shutdown(tmp_path: Path) -> None:
    target = tmp_path / "exiting_server.py"
    target.write_text(EXITING_SERVER)
    p = await asyncio.create_subprocess_exec(
        *serve_args(str(target), "--transport", "stdio", "--store", "memory://"),
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.DEVNULL,
    )
    proc = Proc(p)
    try:
        call = {"jsonrpc": "2.0", "method": "tools/call"}
        bye = await proc.ask(_frame({**call, "id": 1, "params": {"name": "bye", "arguments": {}}}))
        assert bye["result"]["isError"] is True
        assert "SystemExit: 3" in bye["result"]["content"][0]["text"]
        read = {"jsonrpc": "2.0", "id": 2, "method": "resources/read"}
        gone = await proc.ask(_frame({**read, "params": {"uri": "exit://now"}}))
        assert gone["error"]["code"] == -32603
        again = {**call, "id": 3, "params": {"name": "ping", "arguments": {}}}
        ping = await proc.ask(_frame(again))
        assert ping["result"]["content"][0]["text"] == "pong"  # still serving
        assert p.stdin is not None
        p.stdin.close()
        assert await asyncio.wait_for(p.wait(), WAIT) == 0
    finally:
        if p.returncode is None:
            p.kill()
        await p.wait()


STUBBORN_SERVER = """\
import asyncio
import sys
from aircore import define_server

server = define_server(name="stubborn", storage="memory://")

@server.tool
async def poll() -> str:
    sys.stderr.write("started\\n")
    sys.stderr.flush()
    while True:  # "finish the work whatever happens": swallows its own cancellation
        try:
            await asyncio.sleep(3600)
        except asyncio.CancelledError:
            pass

server.run("stdio", eof_grace=0.1)
"""


async def test_a_tool_that_swallows_cancellation_does_not_keep_the_server_alive(
    tmp_path: Path,
) -> None:
    target = tmp_path / "stubborn_server.py"
    target.write_text(STUBBORN_SERVER)
    p = await asyncio.create_subprocess_exec(
        sys.executable,
        str(target),
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.DEVNULL,
        stderr=asyncio.subprocess.PIPE,
    )
    assert p.stdin is not None
    assert p.stderr is not None
    try:
        call = {"jsonrpc": "2.0", "id": 1, "method": "tools/call"}
        p.stdin.write(_frame({**call, "params": {"name": "poll", "arguments": {}}}))
        await p.stdin.drain()
        assert await asyncio.wait_for(p.stderr.readline(), WAIT) == b"started\n"
        p.stdin.close()  # the client goes away
        assert await asyncio.wait_for(p.wait(), WAIT) == 0
        assert b"did not end" in await p.stderr.read()  # said, not silent
    finally:
        if p.returncode is None:
            p.kill()
        await p.wait()
