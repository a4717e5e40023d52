"""A frame nested as deep as orjson reads (1024 levels) that also holds an integer beyond 64
bits is read again by the standard library. Python 3.11's stops at ~1000: the frame is refused
like any unreadable frame (-32700), and the server keeps serving; 3.12 and later read it, and it
is answered exactly like its shallow twin (a real ``air serve`` over stdio and HTTP)."""

from __future__ import annotations

import json
from pathlib import Path

import httpx

from tests.aircore.conftest import LIFECYCLE, HttpServer, lifecycle_over_stdio


def _stdlib_reads_it() -> bool:
    """Whether this interpreter's json module reads the deep frame (3.12+ does, 3.11 does not)."""
    try:
        json.loads(_deep_frame())
    except RecursionError:
        return False
    return True


def _deep_frame(depth: int = 1000) -> bytes:
    meta = "[" * depth + "1234567890123456789012" + "]" * depth
    return (
        b'{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":{"x":'
        + meta.encode()
        + b"}}}"
    )


def test_over_stdio_the_deep_frame_is_a_parse_error_and_the_next_request_is_served(
    tmp_path: Path,
) -> None:
    init = {"jsonrpc": "2.0", "id": 0, "method": "initialize",
            "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                       "clientInfo": {"name": "c", "version": "1"}}}  # fmt: skip
    tools = {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}
    frames = [json.dumps(init).encode(), _deep_frame(), json.dumps(tools).encode()]
    done = lifecycle_over_stdio(frames, tmp_path / "events.txt")
    answers = {a["id"]: a for a in map(json.loads, done.stdout.splitlines())}
    if _stdlib_reads_it():
        assert set(answers) == {0, 1, 2}
        assert answers[1]["result"] == answers[2]["result"]  # the deep _meta changes nothing
    else:
        assert set(answers) == {0, 2, None}
        assert answers[None]["error"]["code"] == -32700  # a parse error has no id
    assert answers[0]["result"]["protocolVersion"] == "2025-06-18"
    assert answers[2]["result"]["tools"]
    assert b"RecursionError" not in done.stderr


def test_over_http_the_deep_frame_is_a_parse_error_not_a_server_error(tmp_path: Path) -> None:
    server = HttpServer(LIFECYCLE, env={"AIR_TEST_EVENTS": str(tmp_path / "events.txt")})
    headers = {"content-type": "application/json", "accept": "application/json, text/event-stream"}
    try:
        answer = httpx.post(server.url, content=_deep_frame(), headers=headers)
        if _stdlib_reads_it():
            twin = httpx.post(server.url, content=_deep_frame(depth=1), headers=headers)
            assert (answer.status_code, answer.json()) == (twin.status_code, twin.json())
        else:
            assert answer.status_code == 400
            assert answer.json()["error"]["code"] == -32700
    finally:
        assert server.close() == 0
