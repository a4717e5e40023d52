"""The shared Streamable HTTP endpoint: the admit seam, the preamble, and the fast path's gate."""

from __future__ import annotations

from collections.abc import Coroutine, Mapping
from typing import Any

import orjson

from aircore.errors import INVALID_REQUEST
from aircore.transports.streamable import (
    HttpRequest,
    RefusedError,
    StreamableEndpoint,
    reply_json,
)
from airhttp.types import Answer, Message


class _Handler:
    """Admits the bearer token ``good`` as client ``"alice"``; answers every POST with who
    sent it."""

    allow = b"POST"

    def __init__(self) -> None:
        self.posts: list[Any] = []

    def admit(self, method: str, headers: Mapping[str, str]) -> str:
        if headers.get("authorization") != "Bearer good":
            raise RefusedError(
                401, INVALID_REQUEST, "Unauthorized", headers=[(b"www-authenticate", b"Bearer")]
            )
        return "alice"

    async def post(self, message: Any, request: HttpRequest[str]) -> None:
        self.posts.append(message)
        result = {"who": request.identity, "json": request.accepts_json}
        await reply_json(request.send, {"jsonrpc": "2.0", "id": message["id"], "result": result})

    async def get(self, request: HttpRequest[str]) -> None:
        raise AssertionError("no GET here")

    async def delete(self, request: HttpRequest[str]) -> None:
        raise AssertionError("no DELETE here")

    def fast(
        self, message: dict[str, Any], body: bytes, headers: dict[str, str], identity: str
    ) -> Coroutine[Any, Any, Answer] | None:
        async def answer() -> Answer:
            return 200, (), identity.encode()

        return answer()


def _scope(method: str, headers: dict[str, str]) -> dict[str, Any]:
    raw = [(k.encode(), v.encode()) for k, v in headers.items()]
    return {"type": "http", "method": method, "path": "/mcp", "headers": raw}


async def _call(
    endpoint: StreamableEndpoint[str], method: str, headers: dict[str, str], body: bytes
) -> tuple[list[Message], int]:
    sent: list[Message] = []
    reads = 0

    async def receive() -> Message:
        nonlocal reads
        reads += 1
        return {"type": "http.request", "body": body, "more_body": False}

    async def send(message: Message) -> None:
        sent.append(message)

    await endpoint(_scope(method, headers), receive, send)
    return sent, reads


_PING = orjson.dumps({"jsonrpc": "2.0", "id": 1, "method": "ping"})
_JSON = {"content-type": "application/json", "accept": "application/json"}


async def test_a_refused_request_is_answered_by_the_admit_hook_before_its_body_is_read() -> None:
    handler = _Handler()
    endpoint = StreamableEndpoint(handler, max_body=1024)
    sent, reads = await _call(endpoint, "POST", {**_JSON, "authorization": "Bearer bad"}, _PING)
    assert sent[0]["status"] == 401
    assert (b"www-authenticate", b"Bearer") in sent[0]["headers"]
    assert orjson.loads(sent[1]["body"])["error"]["code"] == INVALID_REQUEST
    assert reads == 0  # the body never read
    assert handler.posts == []


async def test_an_admitted_request_reaches_the_handler_with_its_identity() -> None:
    endpoint = StreamableEndpoint(_Handler(), max_body=1024)
    sent, _ = await _call(endpoint, "POST", {**_JSON, "authorization": "Bearer good"}, _PING)
    assert sent[0]["status"] == 200
    assert orjson.loads(sent[1]["body"])["result"] == {"who": "alice", "json": True}


async def test_the_preamble_answers_413_415_406_and_parse_errors_for_every_handler() -> None:
    endpoint = StreamableEndpoint(_Handler(), max_body=16)
    auth = {"authorization": "Bearer good"}
    cases = [
        ({**_JSON, **auth}, b"x" * 17, 413),
        ({**_JSON, **auth, "content-type": "text/plain"}, _PING[:16], 415),
        ({**_JSON, **auth, "accept": "text/html"}, b"{}", 406),
        ({**_JSON, **auth}, b"{not json", 400),
    ]
    for headers, body, status in cases:
        sent, _ = await _call(endpoint, "POST", headers, body)
        assert sent[0]["status"] == status, (headers, body)
    sent, _ = await _call(endpoint, "PUT", auth, b"")
    assert sent[0]["status"] == 405
    assert (b"allow", b"POST") in sent[0]["headers"]


async def test_the_fast_path_leaves_a_refused_request_to_the_endpoint() -> None:
    endpoint = StreamableEndpoint(_Handler(), max_body=1024)
    envelope = {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
    }
    body = orjson.dumps(
        {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {"_meta": envelope}}
    )
    refused = _scope("POST", {**_JSON, "authorization": "Bearer bad"})
    assert endpoint.fast(refused, body) is None
    admitted = endpoint.fast(_scope("POST", {**_JSON, "authorization": "Bearer good"}), body)
    assert admitted is not None
    assert await admitted == (200, (), b"alice")
