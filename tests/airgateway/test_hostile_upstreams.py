"""Stdio upstreams that misbehave (garbage ids, oversized lines, dying mid-call) behind a
real gateway process, driven by the official client: each call gets a clear answer and the
replica serves again afterwards."""

from __future__ import annotations

import asyncio
import http.server
import json
import os
import shlex
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest
from mcp import Client, MCPError

from airgateway import Gateway, parse_config
from airstore import MemoryStore
from tests.air_process import run_air
from tests.airgateway.procs import Proc, air, started
from tests.airgateway.rpc import envelope

pytestmark = pytest.mark.slow
WAIT_S = 30.0
RAW = str(Path(__file__).resolve().parent / "raw_stdio_server.py")
HOSTILE_HTTP = str(Path(__file__).resolve().parent / "hostile_http_server.py")
PEAK_RSS_MB = 600


@pytest.fixture(scope="module")
def gateway(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Proc]:
    folder = tmp_path_factory.mktemp("hostile")
    config = folder / "gateway.yml"
    config.write_text(
        "servers:\n"
        f"  - name: raw\n    command: [{sys.executable!r}, {RAW!r}]\n    timeout_s: 20\n"
        "health:\n  interval_s: 60\n"
    )
    argv = air("gateway", "--config", str(config), "--port", "0", "--store", "memory://",
               "--no-meter")  # fmt: skip
    with started(argv) as proc:
        yield proc


async def _ok(client: Client) -> str:
    """``ok`` once the replica serves again (the health checker restarts a dead child)."""
    deadline = time.monotonic() + WAIT_S
    while time.monotonic() < deadline:
        try:
            result = await client.call_tool("ok", {})
        except MCPError:  # restarting: "not running" / "no healthy replica" come at once
            await asyncio.sleep(0.05)  # polling the restart: no event to wait on
            continue
        return str(result.content[0].text)  # type: ignore[union-attr]
    raise AssertionError("the replica never served again")


async def test_answers_with_unhashable_ids_are_ignored_and_the_real_answer_arrives(
    gateway: Proc,
) -> None:
    async with Client(gateway.url) as client:
        result = await client.call_tool("badid", {})
        assert result.content[0].text == "after badid"  # type: ignore[union-attr]
        assert (await client.call_tool("ok", {})).is_error is False


async def test_a_line_over_the_limit_fails_the_call_with_its_reason_and_the_child_restarts(
    gateway: Proc,
) -> None:
    async with Client(gateway.url) as client:
        before = await _ok(client)
        with pytest.raises(MCPError) as raised:
            await client.call_tool("big", {"mb": 20})
        assert "over 16777216 bytes" in raised.value.error.message
        assert await _ok(client) != before  # a new child


async def test_a_child_dying_mid_call_fails_that_call_and_serves_again_at_once(
    gateway: Proc,
) -> None:
    async with Client(gateway.url) as client:
        before = await _ok(client)
        with pytest.raises(MCPError) as raised:
            await client.call_tool("die", {})
        assert raised.value.error.code == -32003
        assert "the process exited" in raised.value.error.message
        assert await _ok(client) != before


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


@pytest.mark.parametrize("wrapped", [False, True], ids=["direct", "behind-a-shell"])
def test_a_child_that_never_finishes_its_handshake_is_stopped_at_every_failed_check(
    tmp_path: Path, wrapped: bool
) -> None:
    """Behind a wrapper (``sh -c``, ``npx``, ``uv run``) the server is a grandchild: killing
    only the wrapper left it running, holding the pipe (and the gateway's reader) open."""
    marks = tmp_path / "pids"
    marks.mkdir()
    config = tmp_path / "gateway.yml"
    command = f"[{sys.executable!r}, {RAW!r}, hang]"
    if wrapped:  # "; true": the shell waits for the server instead of becoming it
        line = f"{shlex.quote(sys.executable)} {shlex.quote(RAW)} hang; true"
        command = f"[sh, -c, {line!r}]"
    config.write_text(
        "servers:\n"
        f"  - name: mute\n    command: {command}\n"
        f"    env: {{MARK_DIR: {str(marks)!r}}}\n"
        "health:\n  interval_s: 0.2\n  timeout_s: 0.2\n"  # a check gives up before the handshake
    )
    argv = air("gateway", "--config", str(config), "--port", "0", "--store", "memory://",
               "--no-meter")  # fmt: skip
    with started(argv) as gateway:
        status = httpx.get(gateway.url.replace("/mcp", "/status"), timeout=10).json()
        assert status["upstreams"][0]["last_error"] == "no answer within 0.6 s"
        deadline = time.monotonic() + WAIT_S
        while len(list(marks.iterdir())) < 4 and time.monotonic() < deadline:
            time.sleep(0.05)  # polling the children's marks: no event to wait on
        spawned = [int(p.name) for p in marks.iterdir()]
        assert len(spawned) >= 4  # a new child at every check
        while sum(map(_alive, spawned)) > 1 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert sum(map(_alive, spawned)) <= 1  # the ones given up on were stopped


async def test_a_flood_of_list_changed_notifications_folds_into_one_check_at_a_time(
    tmp_path: Path,
) -> None:
    """In process (the gateway's own pending checks are what is counted), with a real child:
    a burst of ``list_changed`` costs the upstream a few ``tools/list``, not one each."""
    config = parse_config(
        f"servers:\n  - name: raw\n    command: [{sys.executable!r}, {RAW!r}]\n"
        "health:\n  interval_s: 600\n"
    )
    gateway = Gateway(config, store=MemoryStore())
    await gateway.start()
    try:
        before = await _text(gateway, "lists")
        assert await _text(gateway, "flood", {"n": 300}) == "flooding"
        await _text(gateway, "ok")  # answered after the 300 notifications: all were read
        while gateway._checks:  # the checks they started (a private set: nothing else tells)
            await asyncio.gather(*list(gateway._checks))
        after = await _text(gateway, "lists")
    finally:
        await gateway.stop()
    assert int(after) - int(before) <= 2  # the one running, then one more for the rest


async def _text(gateway: Gateway, name: str, arguments: dict[str, Any] | None = None) -> str:
    result = await gateway.call_tool({"name": name, "arguments": arguments or {}})
    return str(result["content"][0]["text"])


async def test_calls_failed_by_a_dead_upstream_count_in_its_error_rate(tmp_path: Path) -> None:
    """-32003 (upstream unavailable) is the server's failure: ``air meter report`` used to
    show such a server at 100 % errors and a 0 % error rate (counted as a protocol error)."""
    config = tmp_path / "gateway.yml"
    config.write_text(
        f"servers:\n  - name: raw\n    command: [{sys.executable!r}, {RAW!r}]\n"
        "health:\n  interval_s: 600\n"
    )
    store = f"file://{tmp_path / 'data'}"
    with started(air("gateway", "--config", str(config), "--port", "0", "--store", store)) as gw:
        async with Client(gw.url) as client:
            with pytest.raises(MCPError):
                await client.call_tool("die", {})
        assert gw.stop() == 0  # metering flushed
    report = run_air("meter", "report", "--store", store, "--since", "all", "--format", "json")
    assert report.returncode == 0, report.stderr
    (row,) = json.loads(report.stdout)["servers"]
    assert (row["server"], row["calls"], row["errors"]) == ("raw", 1, 1)
    assert row["error_rate"] == 1.0


class _WebPage(http.server.BaseHTTPRequestHandler):
    """A web server answering every request with an HTML page (a URL that is no MCP endpoint)."""

    def do_POST(self) -> None:
        page = b"<html>hello</html>"
        self.send_response(200)
        self.send_header("content-type", "text/html")
        self.send_header("content-length", str(len(page)))
        self.end_headers()
        self.wfile.write(page)

    def log_message(self, format: str, *args: Any) -> None:
        pass


def test_a_url_answering_200_with_a_web_page_is_reported_as_no_mcp_answer(
    tmp_path: Path,
) -> None:
    """``air status`` used to show such a replica down with last error "answered HTTP 200"."""
    web = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _WebPage)
    threading.Thread(target=web.serve_forever, daemon=True).start()
    config = tmp_path / "gateway.yml"
    config.write_text(f"servers:\n  - name: web\n    url: http://127.0.0.1:{web.server_port}/\n")
    argv = air("gateway", "--config", str(config), "--port", "0", "--store", "memory://",
               "--no-meter")  # fmt: skip
    try:
        with started(argv) as gateway:
            status = httpx.get(gateway.url.replace("/mcp", "/status"), timeout=10).json()
    finally:
        web.shutdown()
        web.server_close()
    (upstream,) = status["upstreams"]
    assert upstream["state"] == "down"
    assert upstream["last_error"] == (
        "web#0 answered HTTP 200 with no JSON body (is this an MCP endpoint?)"
    )


def _peak_rss_mb(pid: int) -> float:
    """The process's peak resident set (``VmHWM``), in MiB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    raise AssertionError("no VmHWM")


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="peak RSS is read in /proc")
async def test_an_upstream_streaming_a_huge_chunk_or_an_endless_line_cannot_balloon_the_gateway(
    tmp_path: Path,
) -> None:
    """A declared chunk of ``fffffffff`` bytes (in a JSON and in an SSE answer) and an SSE line
    that never ends, each streamed for up to 1 GiB: the gateway refuses each at its read-time
    limit with a clear error, closes the connection, stays far from the 4+ GB it reached, and
    serves the next call."""
    with _before_the_hostile_upstream(tmp_path, timeout_s=120) as gateway:
        async with Client(gateway.url) as client:
            assert (await client.call_tool("ok", {})).content[0].text == "fine"  # type: ignore[union-attr]
            for attack, limit in (
                ("huge_chunk", "an answer over the 64 MiB limit"),
                ("huge_sse_chunk", "a streamed line over the 16 MiB limit"),
                ("endless_line", "a streamed line over the 16 MiB limit"),
            ):
                with pytest.raises(MCPError) as raised:
                    await client.call_tool(attack, {})
                assert raised.value.error.code == -32003
                assert f"answer refused: {limit}" in raised.value.error.message
                assert (await client.call_tool("ok", {})).content[0].text == "fine"  # type: ignore[union-attr]
        peak = _peak_rss_mb(gateway.popen.pid)
    print(f"gateway peak RSS {peak:.0f} MiB", file=sys.stderr)
    assert peak < PEAK_RSS_MB, f"the gateway peaked at {peak:.0f} MiB"


@contextmanager
def _before_the_hostile_upstream(tmp_path: Path, *, timeout_s: int) -> Iterator[Proc]:
    """``air gateway`` (no meter) in front of hostile_http_server.py."""
    with started([sys.executable, HOSTILE_HTTP]) as upstream:
        config = tmp_path / "gateway.yml"
        config.write_text(
            f"servers:\n  - name: hostile\n    url: {upstream.url}\n    timeout_s: {timeout_s}\n"
            "health:\n  interval_s: 60\n  unhealthy_after: 10\n"
        )
        argv = air("gateway", "--config", str(config), "--port", "0", "--store", "memory://",
                   "--no-meter")  # fmt: skip
        with started(argv) as gateway:
            yield gateway


def _answer_to(resp: httpx.Response, msg_id: object) -> dict[str, Any]:
    """The JSON-RPC response to ``msg_id`` in a JSON or an SSE answer."""
    if resp.headers["content-type"].startswith("application/json"):
        answer: dict[str, Any] = resp.json()
        return answer
    for line in resp.text.splitlines():
        if line.startswith("data:"):
            message = json.loads(line[5:])
            if message.get("id") == msg_id and "method" not in message:
                return dict(message)
    raise AssertionError(f"no answer to {msg_id!r} in {resp.text!r}")


async def test_a_result_for_another_request_id_is_never_passed_on_as_this_calls(
    tmp_path: Path,
) -> None:
    """An upstream whose JSON answer carries a result for another request id (a buggy
    upstream, or a stray answer): the call fails with a clear error instead of being answered
    with another call's result, on the gateway's fast path and on the endpoint's (progress
    asked for); in an SSE answer such a result is skipped and the call's own answer arrives
    (an SSE answer sent with a Content-Length, as a buffering server sends it, included)."""
    with _before_the_hostile_upstream(tmp_path, timeout_s=30) as gateway:
        async with httpx.AsyncClient(timeout=30) as http:
            for meta in ({}, {"progressToken": "p1"}):  # the fast path, the endpoint's
                answers = {}
                for name in ("other_id", "other_id_sse", "other_id_sse_sized", "ok"):
                    params = {"name": name, "arguments": {}, "_meta": dict(meta)}
                    body, headers = envelope("tools/call", params)
                    resp = await http.post(gateway.url, json=body, headers=headers)
                    answers[name] = _answer_to(resp, body["id"])
                error = answers["other_id"]["error"]
                assert error["code"] == -32003, (meta, answers)
                assert "not an answer to this call" in error["message"], error
                assert "not yours" not in json.dumps(answers["other_id"])
                texts = {name: answers[name]["result"]["content"][0]["text"]
                         for name in ("other_id_sse", "other_id_sse_sized", "ok")}  # fmt: skip
                assert texts == {"other_id_sse": "yours", "other_id_sse_sized": "yours",
                                 "ok": "fine"}, (meta, answers)  # fmt: skip
