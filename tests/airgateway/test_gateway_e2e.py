"""The gateway as a real process in front of two HTTP replicas, one stdio and one legacy SSE
upstream, driven by the official client in both eras and by raw HTTP."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import mcp.types as mt
import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from mcp import Client

from tests.airgateway.procs import (
    UPSTREAM,
    Proc,
    air,
    free_port,
    http_replica,
    sse_upstream,
    started,
)
from tests.airgateway.rpc import envelope, legacy_request, modern_call

pytestmark = pytest.mark.slow
WAIT = 30.0


SHARED_KEY = {"AIR_REQUEST_STATE_KEY": "replicas-of-one-server-share-this"}
"""Replicas of one server sign 2026-07-28 requestState with one key, so a retry the balancer
sends to the other replica still verifies (aircore/settings.py)."""


class Rig:
    """The running processes."""

    def __init__(
        self, gateway: Proc, replicas: dict[str, Proc], ports: dict[str, int], marks: Path
    ) -> None:
        self.gateway = gateway
        self.replicas = replicas
        self.ports = ports
        self.marks = marks
        """Where the stdio upstream's ``linger`` tool leaves its marks."""

    @property
    def url(self) -> str:
        return self.gateway.url

    def status(self) -> dict[str, Any]:
        out: dict[str, Any] = httpx.get(self.url.replace("/mcp", "/status"), timeout=10).json()
        return out

    def wait_state(self, replica: int, state: str) -> None:
        """Wait (bounded) until notes#replica reaches ``state`` in /status."""
        deadline = time.monotonic() + WAIT
        while time.monotonic() < deadline:
            ups = [u for u in self.status()["upstreams"] if u["name"] == "notes"]
            if ups[replica]["state"] == state:
                return
            time.sleep(0.1)  # polling the gateway's own status: nothing to wait on
        raise AssertionError(f"notes#{replica} never became {state}: {self.status()}")


def _config(path: Path, a: int, b: int, sse_url: str, air_sse_url: str, marks: Path) -> Path:
    path.write_text(
        f"""
servers:
  - name: notes
    url: http://127.0.0.1:{a}/mcp
    timeout_s: 10
  - name: notes
    url: http://127.0.0.1:{b}/mcp
    timeout_s: 10
  - name: files
    command: [{json.dumps(sys.executable)}, "-m", "aircli", "serve", {json.dumps(UPSTREAM)}]
    prefix: files
    timeout_s: 300                    # cancellations, not timeouts, end linger calls
    env: {{REPLICA: stdio, MARK_DIR: {json.dumps(str(marks))}}}
  - name: legacy
    url: {sse_url}
    transport: sse
  - name: airsse
    url: {air_sse_url}
    transport: sse
    prefix: sse
  - name: brief
    url: http://127.0.0.1:{b}/mcp
    prefix: brief
    timeout_s: 0.5
health:
  interval_s: 0.5
  timeout_s: 5
  unhealthy_after: 2
  healthy_after: 1
balancer:
  strategy: round_robin
  retries: 1
"""
    )
    return path


@pytest.fixture(scope="module")
def rig(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Rig]:
    tmp = tmp_path_factory.mktemp("gw")
    ports = {"a": free_port(), "b": free_port()}
    with (
        started(http_replica("a", ports["a"]), env={"REPLICA": "a", **SHARED_KEY}) as a,
        started(http_replica("b", ports["b"]), env={"REPLICA": "b", **SHARED_KEY}) as b,
        sse_upstream() as sse,
        started(
            air("serve", UPSTREAM, "--transport", "sse", "--port", "0"), env={"REPLICA": "sse"}
        ) as air_sse,
    ):
        assert air_sse.url.endswith("/sse")
        marks = tmp / "marks"
        marks.mkdir()
        config = _config(tmp / "gateway.yml", ports["a"], ports["b"], sse.url, air_sse.url, marks)
        argv = air("gateway", "--config", str(config), "--port", "0", "--store", "memory://")
        with started(argv) as gateway:
            rig = Rig(gateway, {"a": a, "b": b}, ports, marks)
            yield rig
            for replica in rig.replicas.values():  # restarted ones too
                replica.kill()


async def _accept(_ctx: Any, _params: Any) -> mt.ElicitResult:
    return mt.ElicitResult(action="accept", content={"name": "Ann"})


async def _sample(_ctx: Any, _params: Any) -> mt.CreateMessageResult:
    return mt.CreateMessageResult(
        role="assistant", content=mt.TextContent(type="text", text="hi"), model="test-model"
    )


async def _until(done: Any, what: str) -> None:
    """Wait (bounded) until ``done()`` holds; a file another process writes has no event."""
    deadline = time.monotonic() + WAIT
    while not done():
        if time.monotonic() > deadline:
            raise AssertionError(f"never happened: {what}")
        await asyncio.sleep(0.05)


@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_the_official_client_uses_every_upstream_through_the_gateway(
    rig: Rig, mode: str
) -> None:
    async with Client(
        rig.url, mode=mode, elicitation_callback=_accept, sampling_callback=_sample
    ) as client:
        assert (client.session.discover_result is not None) is (mode == "auto")
        tools = {t.name: t for t in (await client.list_tools()).tools}
        assert {"whoami", "echo", "files__echo", "files__whoami", "shout"} <= set(tools)
        assert "draft" not in tools
        assert "files__draft" not in tools
        assert tools["echo"].title == "Echo"
        assert tools["echo"].annotations is not None
        assert tools["echo"].annotations.read_only_hint is True
        assert (await client.call_tool("echo", {"text": "hi"})).content[0].text in ("a:hi", "b:hi")
        assert (await client.call_tool("files__echo", {"text": "x"})).content[0].text == "stdio:x"
        assert (await client.call_tool("shout", {"text": "x"})).content[0].text == "X"
        failed = await client.call_tool("fail", {})
        assert failed.is_error is True
        asked = await client.call_tool("ask", {})
        assert asked.content[0].text == "accept:Ann"
        mused = await client.call_tool("muse", {})  # sampling through the gateway, either era
        assert mused.content[0].text == "sampled:hi"
        listed = (await client.list_resources()).resources  # aggregated, metadata unchanged
        assert "notes://readme" in {str(r.uri) for r in listed}
        assert "greet" in {p.name for p in (await client.list_prompts()).prompts}
        contents = (await client.read_resource("notes://readme")).contents
        assert contents[0].text.startswith("readme from ")  # type: ignore[union-attr]
        prompt = await client.get_prompt("greet", {"name": "Bo"})
        assert "Hello Bo" in str(prompt.messages[0].content)


@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_air_serves_legacy_sse_transport_as_an_upstream(rig: Rig, mode: str) -> None:
    progress: list[float] = []

    async def on_progress(done: float, _total: float | None, _msg: str | None) -> None:
        progress.append(done)

    async with Client(
        rig.url, mode=mode, elicitation_callback=_accept, sampling_callback=_sample
    ) as client:
        tools = {t.name for t in (await client.list_tools()).tools}
        assert {"sse__echo", "sse__ask", "sse__progress"} <= tools
        assert (await client.call_tool("sse__echo", {"text": "q"})).content[0].text == "sse:q"
        # a legacy upstream's elicitation and sampling reach a client of either era (a
        # 2026-07-28 client answers them as input rounds; the gateway holds the upstream call)
        assert (await client.call_tool("sse__ask", {})).content[0].text == "accept:Ann"
        assert (await client.call_tool("sse__muse", {})).content[0].text == "sampled:hi"
        done = await client.call_tool("sse__progress", {}, progress_callback=on_progress)
        assert done.content[0].text == "done"
        assert progress == [1, 2, 3]
        failed = await client.call_tool("sse__fail", {})
        assert failed.is_error is True


async def test_calls_spread_over_both_replicas(rig: Rig) -> None:
    async with httpx.AsyncClient(timeout=10) as http:
        seen = {
            (await modern_call(http, rig.url, "whoami"))["result"]["content"][0]["text"]
            for _ in range(8)
        }
    assert seen == {"a", "b"}


async def test_progress_and_logs_reach_the_caller(rig: Rig) -> None:
    progress: list[float] = []
    logs: list[Any] = []

    async def on_progress(done: float, _total: float | None, _msg: str | None) -> None:
        progress.append(done)

    async def on_log(params: Any) -> None:
        logs.append(params.data)

    for mode in ("auto", "legacy"):
        progress.clear()
        logs.clear()
        async with Client(rig.url, mode=mode, logging_callback=on_log, log_level="info") as c:
            result = await c.call_tool("progress", {}, progress_callback=on_progress)
        assert result.content[0].text == "done"
        assert progress == [1, 2, 3], mode
        assert logs == ["progress done"], mode


async def test_a_killed_stdio_upstream_is_restarted_and_serves_again(rig: Rig) -> None:
    async with httpx.AsyncClient(timeout=30) as http:
        first = await modern_call(http, rig.url, "files__pid")
        pid = int(first["result"]["content"][0]["text"])
        os.kill(pid, signal.SIGKILL)
        deadline = time.monotonic() + WAIT
        while True:  # calls fail cleanly until the supervisor has started a new process
            answer = await modern_call(http, rig.url, "files__pid")
            if "result" in answer:
                break
            assert answer["error"]["code"] == -32003, answer
            assert time.monotonic() < deadline, "the stdio upstream never came back"
            await asyncio.sleep(0.1)
    assert int(answer["result"]["content"][0]["text"]) != pid


async def test_a_call_past_its_timeout_gets_the_timeout_error(rig: Rig) -> None:
    async with httpx.AsyncClient(timeout=30) as http:
        answer = await modern_call(http, rig.url, "brief__slow_write", {"seconds": 20})
    assert answer["error"]["code"] == -32001, answer
    assert "did not answer tools/call within 0.5 s" in answer["error"]["message"], answer


@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_a_clients_cancellation_reaches_the_upstream(rig: Rig, mode: str) -> None:
    tag = f"cancel-{mode}"
    async with Client(rig.url, mode=mode) as client:
        call = asyncio.ensure_future(client.call_tool("files__linger", {"tag": tag}))
        await _until((rig.marks / f"{tag}.started").exists, "the upstream call started")
        call.cancel()  # 2026-07-28: the POST closes; legacy: notifications/cancelled
        with pytest.raises(asyncio.CancelledError):
            await call
        await _until((rig.marks / f"{tag}.cancelled").exists, "the upstream call cancelled")


async def test_a_legacy_request_cancelled_by_its_client_is_answered_request_cancelled(
    rig: Rig,
) -> None:
    """Its POST is still open: it gets the SDK's -32800, not an HTTP 500."""
    async with httpx.AsyncClient(timeout=30) as http:
        sid = await _legacy_session(http, rig.url)
        params = {"name": "files__linger", "arguments": {"tag": "legacy-post"}}
        body = {"jsonrpc": "2.0", "id": 77, "method": "tools/call", "params": params}
        headers = {"mcp-session-id": sid, "accept": "application/json"}
        call = asyncio.ensure_future(http.post(rig.url, json=body, headers=headers))
        await _until((rig.marks / "legacy-post.started").exists, "the upstream call started")
        note = {"jsonrpc": "2.0", "method": "notifications/cancelled",
                "params": {"requestId": 77}}  # fmt: skip
        assert (await http.post(rig.url, json=note, headers=headers)).status_code == 202
        answer = await call
    assert answer.status_code == 200, answer.text
    assert answer.json()["error"]["code"] == -32800
    await _until((rig.marks / "legacy-post.cancelled").exists, "the upstream call cancelled")


async def test_a_legacy_sessions_get_stream_is_answered_before_its_first_event(
    rig: Rig,
) -> None:
    """The 200 head leaves at once (it used to wait for the first list change, and a client
    leaving before one got the stream ended as a server error)."""
    async with httpx.AsyncClient(timeout=10) as http:
        sid = await _legacy_session(http, rig.url)
        headers = {"mcp-session-id": sid, "accept": "text/event-stream"}
        async with http.stream("GET", rig.url, headers=headers) as stream:
            assert stream.status_code == 200
            assert stream.headers["content-type"] == "text/event-stream"
        ping = await legacy_request(http, rig.url, "ping", {}, sid)
        assert ping.json()["result"] == {}


async def test_closing_a_stateless_post_cancels_the_upstream_call(rig: Rig) -> None:
    """The fast path (a plain 2026-07-28 tools/call, no progress token): the connection
    closing is the cancellation."""
    body, headers = envelope("tools/call", {"name": "files__linger", "arguments": {"tag": "raw"}})
    raw = json.dumps(body).encode()
    host, port = rig.url.split("//")[1].split("/")[0].split(":")
    head = ["POST /mcp HTTP/1.1", f"Host: {host}:{port}", "Content-Type: application/json",
            f"Content-Length: {len(raw)}", *(f"{k}: {v}" for k, v in headers.items())]  # fmt: skip
    _reader, writer = await asyncio.open_connection(host, int(port))
    writer.write(("\r\n".join(head) + "\r\n\r\n").encode() + raw)
    await _until((rig.marks / "raw.started").exists, "the upstream call started")
    writer.close()
    await _until((rig.marks / "raw.cancelled").exists, "the upstream call cancelled")


async def test_an_input_round_of_a_legacy_upstream_answers_only_its_own_retry(rig: Rig) -> None:
    async with httpx.AsyncClient(timeout=30) as http:
        body, headers = envelope("tools/call", {"name": "sse__ask", "arguments": {}},
                                 capabilities={"elicitation": {}})  # fmt: skip
        first = (await http.post(rig.url, json=body, headers=headers)).json()["result"]
        assert first["resultType"] == "input_required"
        [(key, asked)] = first["inputRequests"].items()
        assert asked["method"] == "elicitation/create"
        state = first["requestState"]
        for forged, responses in ((state + "x", {key: {"action": "decline"}}), (state, {})):
            body["params"] = {**body["params"], "requestState": forged, "inputResponses": responses}
            refused = (await http.post(rig.url, json=body, headers=headers)).json()
            assert refused["error"]["code"] == -32602, refused
        body["params"] = {
            **body["params"],
            "requestState": state,
            "inputResponses": {key: {"action": "accept", "content": {"name": "Cy"}}},
        }
        done = (await http.post(rig.url, json=body, headers=headers)).json()  # fmt: skip
        assert done["result"]["content"][0]["text"] == "accept:Cy", done
        again = (await http.post(rig.url, json=body, headers=headers)).json()
        assert again["error"]["code"] == -32602  # a round is answered once


async def test_a_legacy_prompts_get_is_answered_on_a_stream_as_aircore_answers_it(
    rig: Rig,
) -> None:
    """A legacy prompt handler may ask the client (elicitation) before its answer, so a client
    accepting SSE gets one, as from aircore (the gateway's copy of the rule had drifted: JSON)."""
    async with httpx.AsyncClient(timeout=30) as http:
        sid = await _legacy_session(http, rig.url)
        body = {"jsonrpc": "2.0", "id": 5, "method": "prompts/get",
                "params": {"name": "greet", "arguments": {"name": "Bo"}}}  # fmt: skip
        headers = {"mcp-session-id": sid, "accept": "application/json, text/event-stream"}
        answer = await http.post(rig.url, json=body, headers=headers)
    assert answer.status_code == 200, answer.text
    assert answer.headers["content-type"] == "text/event-stream"
    data = [
        line.removeprefix("data: ")
        for line in answer.text.splitlines()
        if line.startswith("data: ")
    ]
    assert "Hello Bo" in str(orjson.loads(data[-1])["result"]["messages"][0]["content"])


async def test_a_legacy_initialize_answered_on_a_stream_carries_its_session_id(rig: Rig) -> None:
    """A client accepting only SSE gets its ``initialize`` answer as an event: the session
    header goes with that stream's head (it was read before the session existed)."""
    params = {"protocolVersion": "2025-06-18", "capabilities": {},
              "clientInfo": {"name": "raw", "version": "0"}}  # fmt: skip
    body = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": params}
    async with httpx.AsyncClient(timeout=30) as http:
        answer = await http.post(rig.url, json=body, headers={"accept": "text/event-stream"})
        assert answer.headers["content-type"] == "text/event-stream"
        sid = answer.headers.get("mcp-session-id")
        assert sid, answer.headers
        ping = await legacy_request(http, rig.url, "ping", {}, sid)
    assert ping.json()["result"] == {}


async def _legacy_session(http: httpx.AsyncClient, url: str) -> str:
    """A fresh legacy session that declares elicitation; returns its id."""
    params = {"protocolVersion": "2025-06-18", "capabilities": {"elicitation": {}},
              "clientInfo": {"name": "raw", "version": "0"}}  # fmt: skip
    init = await legacy_request(http, url, "initialize", params, None)
    sid = init.headers["mcp-session-id"]
    note = {"jsonrpc": "2.0", "method": "notifications/initialized"}
    await http.post(url, json=note, headers={"mcp-session-id": sid})
    return sid


async def test_only_the_asked_session_can_answer_a_relayed_elicitation(rig: Rig) -> None:
    """Session B posting an answer to session A's elicitation id is ignored like an unknown
    id (202, never delivered); A's own answer is the one the upstream gets."""
    async with httpx.AsyncClient(timeout=30) as http:
        sid_a, sid_b = await _legacy_session(http, rig.url), await _legacy_session(http, rig.url)
        call = {"jsonrpc": "2.0", "id": 7, "method": "tools/call",
                "params": {"name": "sse__ask", "arguments": {}}}  # fmt: skip
        headers = {"mcp-session-id": sid_a, "accept": "application/json, text/event-stream"}
        async with http.stream("POST", rig.url, json=call, headers=headers) as stream:
            events = (json.loads(line[5:]) async for line in stream.aiter_lines()
                      if line.startswith("data:"))  # fmt: skip
            asked = await anext(events)
            assert asked["method"] == "elicitation/create", asked

            async def answer(sid: str, name: str) -> int:
                body = {"jsonrpc": "2.0", "id": asked["id"],
                        "result": {"action": "accept", "content": {"name": name}}}  # fmt: skip
                resp = await http.post(rig.url, json=body, headers={"mcp-session-id": sid})
                return resp.status_code

            assert await answer(sid_b, "Mallory") == 202
            assert await answer(sid_a, "Ann") == 202
            done = await anext(events)
        assert done["id"] == 7
        assert done["result"]["content"][0]["text"] == "accept:Ann", done


async def test_a_client_leaving_its_notification_stream_closes_it_without_an_error(
    rig: Rig,
) -> None:
    """A legacy session's GET stream the client drops ends quietly (it used to log a traceback
    for every client that disconnected: ``aclose()`` of a generator still running)."""
    url = httpx.URL(rig.url)
    async with httpx.AsyncClient(timeout=30) as http:
        for _ in range(3):
            sid = await _legacy_session(http, rig.url)
            # Raw: the stream's head comes at once; no event ever comes here.
            reader, writer = await asyncio.open_connection(url.host, url.port)
            writer.write(
                f"GET {url.raw_path.decode()} HTTP/1.1\r\nhost: {url.netloc.decode()}\r\n"
                f"mcp-session-id: {sid}\r\naccept: text/event-stream\r\n\r\n".encode()
            )
            await writer.drain()
            head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), WAIT)
            assert head.startswith(b"HTTP/1.1 200"), head  # the gateway now waits for changes
            writer.close()
            await writer.wait_closed()
            ping = await legacy_request(http, rig.url, "ping", {}, sid)
            assert ping.json()["result"] == {}
    deadline = time.monotonic() + 2.0  # the handler ends as soon as it sees the disconnect
    while time.monotonic() < deadline:
        failed = [line for line in rig.gateway.lines if "failed on GET" in line]
        assert not failed, "".join(rig.gateway.lines[-20:])
        await asyncio.sleep(0.1)


@pytest.mark.parametrize("request_id", [[1], {}, {"a": 1}, None, 1.5])
async def test_a_cancellation_naming_an_unhashable_request_id_is_ignored(
    rig: Rig, request_id: Any
) -> None:
    async with httpx.AsyncClient(timeout=30) as http:
        sid = await _legacy_session(http, rig.url)
        note = {"jsonrpc": "2.0", "method": "notifications/cancelled",
                "params": {"requestId": request_id}}  # fmt: skip
        resp = await http.post(rig.url, json=note, headers={"mcp-session-id": sid})
        assert resp.status_code == 202, resp.text
        ping = await legacy_request(http, rig.url, "ping", {}, sid)
        assert ping.json()["result"] == {}


async def test_unknown_tools_and_denied_inputs_get_clean_errors(rig: Rig) -> None:
    async with httpx.AsyncClient(timeout=10) as http:
        missing = await modern_call(http, rig.url, "no_such_tool")
        assert missing["error"]["code"] == -32602
        resp = await http.post(
            rig.url,
            content=b"{not json",
            headers={"content-type": "application/json", "accept": "application/json"},
        )
        assert resp.status_code == 400
        assert resp.json()["error"]["code"] == -32700
        resp = await http.post(rig.url, json={}, headers={"origin": "http://evil.example"})
        assert resp.status_code == 403
        resp = await http.post(
            rig.url,
            json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
            headers={"accept": "application/json"},
        )
        assert resp.status_code == 400  # a legacy request without a session


def test_status_and_air_status_show_upstreams_and_the_name_conflict(rig: Rig) -> None:
    status = rig.status()
    names = [(u["name"], u["replica"], u["transport"]) for u in status["upstreams"]]
    assert names == [
        ("notes", 0, "http"),
        ("notes", 1, "http"),
        ("files", 0, "stdio"),
        ("legacy", 0, "sse"),
        ("airsse", 0, "sse"),
        ("brief", 0, "http"),
    ]
    for up in status["upstreams"]:
        assert set(up) >= {"name", "url", "replica", "state", "latency_ms", "in_flight",
                           "last_error", "last_error_age_s", "recovered", "tools"}  # fmt: skip
    assert {"kind": "tool", "name": "echo", "kept": "notes", "dropped": "legacy"} in status[
        "conflicts"
    ]
    said = "".join(rig.gateway.lines)  # and said at start, on stderr
    assert "tool 'echo' is offered by notes and legacy: notes keeps it" in said
    out = subprocess.run(
        air("status", "--url", rig.url, "--format", "json"),
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    assert json.loads(out.stdout)["conflicts"] == status["conflicts"]
    table = subprocess.run(air("status", "--url", rig.url), capture_output=True, text=True,
                           timeout=60, check=True).stdout  # fmt: skip
    assert "notes" in table
    assert "conflict: tool 'echo' kept by notes" in table


async def test_a_changed_tools_list_reaches_clients_of_both_eras(rig: Rig) -> None:
    changed = asyncio.Event()

    async def on_message(message: Any) -> None:
        if isinstance(message, mt.ServerNotification) and isinstance(
            message, mt.ToolListChangedNotification
        ):
            changed.set()

    async def on_any(message: Any) -> None:
        if getattr(message, "method", None) == "notifications/tools/list_changed" or (
            "ToolListChanged" in type(message).__name__
        ):
            changed.set()

    async with (
        Client(rig.url, mode="legacy", message_handler=on_any) as legacy_client,
        Client(rig.url, mode="auto") as modern_client,
        modern_client.listen(tools_list_changed=True) as sub,
    ):
        assert "files__grown" not in {t.name for t in (await legacy_client.list_tools()).tools}
        await modern_client.call_tool("files__grow", {})

        async def first_event() -> Any:
            async for event in sub:
                return event
            return None

        event = await asyncio.wait_for(first_event(), WAIT)
        assert type(event).__name__ == "ToolsListChanged"
        await asyncio.wait_for(changed.wait(), WAIT)
        assert "files__grown" in {t.name for t in (await legacy_client.list_tools()).tools}


async def test_sigkill_of_a_replica_under_traffic_then_it_rejoins(rig: Rig) -> None:
    results: dict[str, list[dict[str, Any]]] = {"read": [], "write": []}
    killed = asyncio.Event()
    flowing = asyncio.Event()

    async def worker(http: httpx.AsyncClient, kind: str) -> None:
        tool = "slow_read" if kind == "read" else "slow_write"
        for _ in range(12):
            results[kind].append(await modern_call(http, rig.url, tool, {"seconds": 0.05}))
            if len(results["read"]) >= 6:
                flowing.set()

    async def killer() -> None:
        await flowing.wait()  # let traffic flow before the kill
        rig.replicas["a"].kill()
        killed.set()

    async with httpx.AsyncClient(timeout=30) as http:
        await asyncio.wait_for(
            asyncio.gather(killer(), *(worker(http, k) for k in ("read", "write") * 4)), 120
        )
    assert killed.is_set()
    reads, writes = results["read"], results["write"]
    assert all("result" in r and r["result"].get("isError") is not True for r in reads), reads
    for r in writes:  # a write either ran or failed cleanly with the upstream-unavailable code
        assert ("result" in r) or r["error"]["code"] == -32003, r
    rig.wait_state(0, "down")
    restarted = started(http_replica("a", rig.ports["a"]), env={"REPLICA": "a2", **SHARED_KEY})
    rig.replicas["a"] = restarted.__enter__()
    rig.wait_state(0, "healthy")
    async with httpx.AsyncClient(timeout=10) as http:
        seen = {
            (await modern_call(http, rig.url, "whoami"))["result"]["content"][0]["text"]
            for _ in range(8)
        }
    assert "a2" in seen


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_sigterm_or_ctrl_c_stops_the_gateway_and_its_stdio_children(
    tmp_path: Path, sig: signal.Signals
) -> None:
    config = tmp_path / "gw.yml"
    config.write_text(
        "servers:\n  - name: files\n"
        f"    command: [{json.dumps(sys.executable)}, '-m', 'aircli', 'serve', "
        f"{json.dumps(UPSTREAM)}]\n"
    )
    with started(air("gateway", "--config", str(config), "--port", "0")) as gateway:
        reply = httpx.post(
            gateway.url,
            json={
                "jsonrpc": "2.0",
                "id": 1,
                "method": "tools/call",
                "params": {
                    "name": "pid",
                    "_meta": {
                        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                        "io.modelcontextprotocol/clientCapabilities": {},
                    },
                },
            },
            headers={
                "mcp-protocol-version": "2026-07-28",
                "mcp-method": "tools/call",
                "mcp-name": "pid",
                "accept": "application/json",
            },
            timeout=10,
        )
        child = int(reply.json()["result"]["content"][0]["text"])
        assert gateway.stop(sig) == 0
    with pytest.raises(ProcessLookupError):
        os.kill(child, 0)


_json = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=20),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=10), inner, max_size=4)
    ),
    max_leaves=12,
)
_message = st.fixed_dictionaries(
    {"jsonrpc": st.sampled_from(["2.0", "1.0", None])},
    optional={
        "id": st.integers() | st.text(max_size=8) | st.none(),
        "method": st.sampled_from(["tools/call", "tools/list", "initialize", "ping",
                                   "resources/read", "prompts/get", "nope"]) | st.text(max_size=8),
        "params": _json | st.fixed_dictionaries({"name": st.text(max_size=12), "_meta": _json}),
    },
)  # fmt: skip


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(message=_message, modern=st.booleans(), session=st.none() | st.text(max_size=40))
def test_any_client_message_gets_a_clean_answer_and_the_gateway_stays_up(
    rig: Rig, message: dict[str, Any], modern: bool, session: str | None
) -> None:
    headers = {"content-type": "application/json", "accept": "application/json"}
    if modern:
        headers.update({"mcp-protocol-version": "2026-07-28", "mcp-method": "tools/call"})
    # a header value httpx can send: printable ASCII without surrounding whitespace (h11)
    sendable = session is not None and session.isprintable() and session.isascii()
    if sendable and session is not None and session == session.strip():
        headers["mcp-session-id"] = session
    resp = httpx.post(rig.url, json=message, headers=headers, timeout=30)
    assert resp.status_code in (200, 202, 400, 404), resp.text
    if resp.status_code != 202:
        answer = resp.json()
        assert answer["jsonrpc"] == "2.0"
        assert ("result" in answer) != ("error" in answer)


@pytest.mark.parametrize(
    ("header", "value", "status"),
    [("content-type", "application/jsonx", 415),
     ("content-type", "text/plain; x=application/json", 415),
     ("accept", "application/json;q=0", 406),
     ("accept", "text/html", 406),
     ("content-type", "Application/JSON; charset=utf-8", 200)],
)  # fmt: skip
async def test_the_fast_path_reads_content_type_and_accept_as_media_types(
    rig: Rig, header: str, value: str, status: int
) -> None:
    """A look-alike media type never takes the gateway's fast path: it gets the endpoint's 415
    or 406, as from aircore's own /mcp."""
    body, headers = envelope("tools/call", {"name": "whoami", "arguments": {}})
    headers = {"content-type": "application/json", **headers, header: value}
    async with httpx.AsyncClient(timeout=10) as http:
        resp = await http.post(rig.url, content=orjson.dumps(body), headers=headers)
    assert resp.status_code == status, resp.text
