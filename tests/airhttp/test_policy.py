import math

import httpx
import pytest
from starlette.types import Receive, Scope, Send

from airhttp import (
    AccessPolicy,
    GuardedApp,
    GuardedWSGI,
    Limits,
    LimitsError,
    json_refusal,
    wsgi_refusal,
)


def test_a_policy_refuses_host_then_origin_then_token() -> None:
    policy = AccessPolicy(token="t0k", allowed_hosts=["MCP.internal"])
    assert policy.refusal(host="localhost:1", origin=None, authorization="bearer t0k") is None
    assert policy.refusal(host="mcp.internal", origin=None, authorization="Bearer t0k") is None
    refused = policy.refusal(host="evil.example", origin="http://evil", authorization=None)
    assert refused is not None
    assert refused.status == 421
    refused = policy.refusal(host="localhost", origin="http://evil", authorization=None)
    assert refused is not None
    assert refused.status == 403
    refused = policy.refusal(host="localhost", origin=None, authorization="Basic t0k")
    assert refused is not None
    assert refused.status == 401
    assert ("www-authenticate", "Bearer") in refused.headers
    assert (
        AccessPolicy(check_host=False).refusal(host=None, origin=None, authorization=None) is None
    )


def test_a_token_no_client_could_send_is_refused_without_echoing_it() -> None:
    with pytest.raises(LimitsError) as info:
        AccessPolicy(token="two words")
    assert info.value.option == "token"
    assert "two words" not in str(info.value)


@pytest.mark.parametrize(
    ("option", "value"),
    [
        ("header_timeout", 0),
        ("idle_timeout", -1.0),
        ("header_timeout", math.inf),
        ("idle_timeout", math.nan),
        ("max_connections", 1.5),
        ("max_inflight", 0),
        ("max_body", True),
        ("max_body", "10"),
    ],
)
def test_limits_refuse_values_that_cannot_work(option: str, value: object) -> None:
    with pytest.raises(LimitsError) as info:
        Limits(**{option: value})  # type: ignore[arg-type]
    assert info.value.option == option


async def _echo(scope: Scope, receive: Receive, send: Send) -> None:
    body = b""
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            return
        body += message.get("body", b"")
        if not message.get("more_body"):
            break
    await send({"type": "http.response.start", "status": 200, "headers": []})
    await send({"type": "http.response.body", "body": body})


async def test_the_asgi_guard_answers_before_the_app_runs() -> None:
    app = GuardedApp(_echo, policy=AccessPolicy(token="t"), limits=Limits(max_body=10))
    auth = {"authorization": "Bearer t"}
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://localhost") as client:
        assert (await client.post("/", content=b"hello", headers=auth)).content == b"hello"
        assert (await client.post("/", content=b"hello")).status_code == 401
        big = await client.post("/", content=b"x" * 11, headers=auth)
        assert big.status_code == 413
        assert "10 bytes" in big.text

        async def chunks() -> object:
            for _ in range(5):
                yield b"xxxx"

        chunked = await client.post("/", content=chunks(), headers=auth)  # type: ignore[arg-type]
        assert chunked.status_code == 413
        evil = await client.get("/", headers={**auth, "origin": "https://evil.example"})
        assert evil.status_code == 403
    async with httpx.AsyncClient(transport=transport, base_url="http://rebound.example") as far:
        assert (await far.get("/", headers=auth)).status_code == 421
    assert app.refused == 5
    assert app.inflight == 0


async def test_the_asgi_guard_caps_requests_in_flight() -> None:
    import asyncio

    gate = asyncio.Event()
    entered = asyncio.Event()

    async def slow(scope: Scope, receive: Receive, send: Send) -> None:
        entered.set()
        await gate.wait()
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b"ok"})

    app = GuardedApp(
        slow, policy=AccessPolicy(), limits=Limits(max_inflight=1), render=json_refusal
    )
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1") as client:
        first = asyncio.ensure_future(client.get("/"))
        await asyncio.wait_for(entered.wait(), 10)
        busy = await client.get("/")
        assert busy.status_code == 503
        assert busy.headers["retry-after"] == "1"
        assert busy.json()["error"]["code"] == -32600
        gate.set()
        assert (await first).status_code == 200
    assert app.inflight == 0


def test_the_wsgi_guard_applies_the_same_policy() -> None:
    policy = AccessPolicy(token="t")
    ok = {"HTTP_HOST": "127.0.0.1:8050", "HTTP_AUTHORIZATION": "BEARER t"}
    assert wsgi_refusal(ok, policy) is None
    refused = wsgi_refusal({**ok, "HTTP_HOST": "evil.example"}, policy)
    assert refused is not None
    assert refused.status == 421
    refused = wsgi_refusal({**ok, "CONTENT_LENGTH": "99"}, policy, max_body=10)
    assert refused is not None
    assert refused.status == 413

    seen: list[str] = []

    def inner(environ: dict[str, object], start_response: object) -> list[bytes]:
        seen.append("called")
        return [b"inner"]

    def start_response(status: str, headers: list[tuple[str, str]]) -> None:
        seen.append(status)

    app = GuardedWSGI(inner, policy=policy)
    assert app({**ok, "HTTP_ORIGIN": "http://evil.example"}, start_response) == [
        b"Forbidden: invalid Origin\n"
    ]
    assert seen == ["403 Forbidden"]
    assert app(ok, start_response) == [b"inner"]
    assert seen[-1] == "called"
