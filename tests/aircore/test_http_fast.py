"""The /mcp fast path (``HttpApp.fast``, airhttp's raw-request hook) answers exactly what the
ASGI endpoint answers, for every request it takes, and leaves every other request to it."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from aircore import define_server, define_tool
from aircore.server import AirServer
from aircore.transports.http_app import HttpApp, build_app
from airhttp import GuardedApp, Message

V = "2026-07-28"
META = {
    "io.modelcontextprotocol/protocolVersion": V,
    "io.modelcontextprotocol/clientCapabilities": {},
}


def _server() -> AirServer:
    return define_server(
        name="fast",
        storage="memory://",
        tools=[
            define_tool("echo", params={"text": "string"}, handler=lambda p: p["text"]),
            define_tool("boom", params={}, handler=lambda p: 1 / 0),
        ],
    )


@pytest.fixture
async def app() -> AsyncIterator[GuardedApp]:
    server = _server()
    await server.start()
    try:
        yield build_app(server)
    finally:
        await server.stop()


def _scope(headers: dict[str, str], method: str = "POST", path: str = "/mcp") -> dict[str, Any]:
    raw = [(k.lower().encode("latin-1"), v.encode("latin-1")) for k, v in headers.items()]
    return {"type": "http", "method": method, "path": path, "headers": raw, "query_string": b""}


async def _via_asgi(app: GuardedApp, scope: dict[str, Any], body: bytes) -> tuple[int, Any, Any]:
    sent: list[dict[str, Any]] = []
    delivered = False
    done = asyncio.Event()

    async def receive() -> dict[str, Any]:
        nonlocal delivered
        if not delivered:
            delivered = True
            return {"type": "http.request", "body": body, "more_body": False}
        await done.wait()
        return {"type": "http.disconnect"}

    async def send(message: Message) -> None:
        sent.append(dict(message))

    await asyncio.wait_for(app(scope, receive, send), 20)
    done.set()
    start = sent[0]
    headers = dict(start["headers"])
    payload = b"".join(m.get("body", b"") for m in sent[1:])
    return start["status"], headers.get(b"content-type"), _decoded(payload)


def _decoded(payload: bytes) -> Any:
    if payload.startswith(b"event:"):
        return [orjson.loads(line[6:]) for line in payload.split(b"\n") if line[:5] == b"data:"]
    return orjson.loads(payload) if payload else None


async def _via_fast(app: GuardedApp, scope: dict[str, Any], body: bytes) -> Any:
    routes = app.app
    assert isinstance(routes, HttpApp)
    answer = app.guard_fast(routes.fast)(scope, body)
    if answer is None:
        return None
    status, headers, payload = await asyncio.wait_for(answer, 20)
    return status, dict(headers).get(b"content-type"), _decoded(payload)


def _call(name: str = "echo", arguments: Any = None, **extra: Any) -> dict[str, Any]:
    params: dict[str, Any] = {"name": name, "arguments": arguments or {"text": "hi"}, "_meta": META}
    return {"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": params, **extra}


HEADERS = {
    "host": "127.0.0.1:3510",
    "content-type": "application/json",
    "accept": "application/json, text/event-stream",
    "mcp-protocol-version": V,
    "mcp-method": "tools/call",
    "mcp-name": "echo",
}


async def test_a_stateless_call_takes_the_fast_path_with_the_endpoints_answer(
    app: GuardedApp,
) -> None:
    scope, body = _scope(HEADERS), orjson.dumps(_call())
    fast = await _via_fast(app, scope, body)
    assert fast is not None
    assert fast == await _via_asgi(app, scope, body)
    status, content_type, answer = fast
    assert (status, content_type) == (200, b"application/json")
    assert answer["id"] == 7
    assert answer["result"]["content"] == [{"type": "text", "text": "hi"}]


@pytest.mark.parametrize(
    ("headers", "message"),
    [
        ({**HEADERS, "mcp-session-id": "abc"}, _call()),  # a legacy session
        ({**HEADERS, "accept": "text/event-stream"}, _call()),  # SSE only
        (HEADERS, _call(arguments={"text": "hi"}) | {"params": {"name": "echo", "_meta": {
            **META, "progressToken": 1}}}),  # progress first: an SSE answer
        ({**HEADERS, "content-type": "text/plain"}, _call()),  # 415
        ({**HEADERS, "accept": "text/html"}, _call()),  # 406
        (HEADERS, {"jsonrpc": "2.0", "method": "notifications/initialized"}),  # notification
        (HEADERS, {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}),  # legacy era
        (HEADERS, [_call()]),  # a batch
        ({**HEADERS, "host": "evil.example"}, _call()),  # the guard refuses: 421
    ],
    ids=["session", "sse-only", "progress", "415", "406", "notification", "legacy", "batch",
         "foreign-host"],
)  # fmt: skip
async def test_requests_the_fast_path_leaves_are_answered_by_the_endpoint(
    app: GuardedApp, headers: dict[str, str], message: Any
) -> None:
    scope, body = _scope(headers), orjson.dumps(message)
    assert await _via_fast(app, scope, body) is None
    assert (await _via_asgi(app, scope, body))[0] in (
        200, 202, 400, 404, 406, 415, 421,
    )  # fmt: skip


async def test_a_get_or_another_path_is_left_to_the_app(app: GuardedApp) -> None:
    body = orjson.dumps(_call())
    assert await _via_fast(app, _scope(HEADERS, method="GET"), b"") is None
    assert await _via_fast(app, _scope(HEADERS, path="/other"), body) is None


_names = st.sampled_from(["echo", "boom", "missing", ""])
_methods = st.sampled_from(["tools/call", "tools/list", "resources/read", "logging/setLevel",
                            "nope", "subscriptions/listen"])  # fmt: skip
_accepts = st.sampled_from(
    ["application/json, text/event-stream", "application/json", "*/*", "application/*",
     "text/event-stream", "application/json;q=0"]
)  # fmt: skip
_json = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**53), 2**53) | st.text(max_size=5),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner,
                                                                max_size=3),
    max_leaves=6,
)  # fmt: skip


@st.composite
def requests(draw: Any) -> tuple[dict[str, str], bytes]:
    method = draw(_methods)
    name = draw(_names)
    meta: dict[str, Any] = dict(META) if draw(st.booleans()) else {}
    if draw(st.booleans()):
        version = draw(st.sampled_from([V, "2025-11-25", "bogus"]))
        meta["io.modelcontextprotocol/protocolVersion"] = version
    params: dict[str, Any] = {"name": name, "_meta": meta}
    if draw(st.booleans()):
        params["arguments"] = draw(st.sampled_from([{"text": "x"}, {"text": 5}, {}, None])) \
            if draw(st.booleans()) else draw(_json)  # fmt: skip
    message: Any = {"jsonrpc": "2.0", "id": draw(st.integers(-3, 3) | st.text(max_size=3)),
                    "method": method, "params": params}  # fmt: skip
    if draw(st.booleans()):
        message = draw(_json)
    headers = dict(HEADERS)
    headers["accept"] = draw(_accepts)
    headers["mcp-method"] = draw(st.sampled_from([method, "tools/call", "x"]))
    headers["mcp-name"] = draw(st.sampled_from([name, "echo", " echo ", ""]))
    if draw(st.booleans()):
        del headers["mcp-protocol-version"]
    body = orjson.dumps(message) if draw(st.integers(0, 9)) else draw(st.binary(max_size=40))
    return headers, body


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow,
          HealthCheck.function_scoped_fixture])  # fmt: skip
@given(req=requests())
async def test_whatever_the_fast_path_answers_the_endpoint_answers_the_same(
    app: GuardedApp, req: tuple[dict[str, str], bytes]
) -> None:
    headers, body = req
    scope = _scope(headers)
    fast = await _via_fast(app, scope, body)
    event("fast path" if fast is not None else "left to the endpoint")
    if fast is not None:
        assert fast == await _via_asgi(app, scope, body)
