"""The gateway's own client-credentials tokens (``airgateway.upstream_auth``) against a token
endpoint served over HTTP on 127.0.0.1: one fetch for many callers, refreshed ahead of expiry in
the background, replaced after a 401, discovered through the issuer's metadata, and a typed
error (``sent=False``) when no token can be had."""

from __future__ import annotations

import asyncio
import base64
from collections.abc import AsyncIterator
from typing import Any
from urllib.parse import parse_qs

import pytest
from aiohttp import web

from airgateway.config import UpstreamOAuth
from airgateway.errors import UpstreamUnavailableError
from airgateway.upstream_auth import ClientCredentials


class TokenServer:
    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []
        self.expires_in: int | None = 100
        self.status = 200
        self.url = ""
        self.issued = asyncio.Event()
        self.token_text: str | None = None
        """An access_token to answer instead of ``t<N>`` (a hostile endpoint's)."""

    async def token(self, request: web.Request) -> web.Response:
        form = {k: v[0] for k, v in parse_qs(await request.text()).items()}
        basic = request.headers.get("authorization", "").removeprefix("Basic ")
        self.requests.append({**form, "basic": base64.b64decode(basic).decode()})
        self.issued.set()
        if self.status != 200:
            return web.json_response({"error": "invalid_client"}, status=self.status)
        token = self.token_text if self.token_text is not None else f"t{len(self.requests)}"
        doc: dict[str, Any] = {"access_token": token, "token_type": "Bearer"}
        if self.expires_in is not None:
            doc["expires_in"] = self.expires_in
        return web.json_response(doc)

    async def metadata(self, request: web.Request) -> web.Response:
        return web.json_response({"issuer": self.url, "token_endpoint": f"{self.url}/oauth/token"})


@pytest.fixture
async def server() -> AsyncIterator[TokenServer]:
    found = TokenServer()
    app = web.Application()
    app.router.add_post("/oauth/token", found.token)
    app.router.add_get("/.well-known/oauth-authorization-server", found.metadata)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    found.url = f"http://127.0.0.1:{port}"
    yield found
    await runner.cleanup()


def _config(server: TokenServer, **extra: Any) -> UpstreamOAuth:
    fields: dict[str, Any] = {
        "client_id": "gw",
        "client_secret": "s:cret",
        "token_endpoint": f"{server.url}/oauth/token",
        "scope": "mcp:tools",
        "resource": "https://notes.example.com/mcp",
        "refresh_ahead_s": 30.0,
        **extra,
    }
    return UpstreamOAuth(**fields)


async def test_many_callers_share_one_token_fetch(server: TokenServer) -> None:
    creds = ClientCredentials(_config(server), label="notes")
    try:
        headers = await asyncio.gather(*(creds.header() for _ in range(50)))
        assert set(headers) == {"Bearer t1"}
        assert len(server.requests) == 1
        sent = server.requests[0]
        assert sent["grant_type"] == "client_credentials"
        assert sent["scope"] == "mcp:tools"
        assert sent["resource"] == "https://notes.example.com/mcp"
        assert sent["basic"] == "gw:s%3Acret"  # RFC 6749 §2.3.1: form-encoded, then Basic
    finally:
        await creds.close()


async def test_a_token_is_refreshed_ahead_of_expiry_without_making_callers_wait(
    server: TokenServer,
) -> None:
    now = [1000.0]
    creds = ClientCredentials(_config(server), label="notes", clock=lambda: now[0])
    try:
        assert await creds.header() == "Bearer t1"
        now[0] += 69  # before renew_at (100 - 30)
        assert await creds.header() == "Bearer t1"
        assert len(server.requests) == 1
        now[0] += 2  # past renew_at, before expiry: the current token, a refresh behind it
        server.issued.clear()
        assert await creds.header() == "Bearer t1"
        await asyncio.wait_for(server.issued.wait(), 10)
        for _ in range(100):  # the background task stores it right after the answer
            if await creds.header() == "Bearer t2":
                break
            await asyncio.sleep(0.01)
        assert await creds.header() == "Bearer t2"
        assert len(server.requests) == 2
        now[0] += 200  # past every expiry: the caller waits for a new one
        assert await creds.header() == "Bearer t3"
    finally:
        await creds.close()


async def test_a_refused_token_is_replaced(server: TokenServer) -> None:
    creds = ClientCredentials(_config(server), label="notes")
    try:
        first = await creds.header()
        creds.refused("Bearer some-other-token")  # not ours: nothing happens
        assert await creds.header() == first
        creds.refused(first)
        assert await creds.header() == "Bearer t2"
    finally:
        await creds.close()


async def test_the_token_endpoint_is_found_through_the_issuer(server: TokenServer) -> None:
    config = _config(server, token_endpoint=None, issuer=server.url)
    creds = ClientCredentials(config, label="notes")
    try:
        assert await creds.header() == "Bearer t1"
    finally:
        await creds.close()


async def test_an_answer_without_expires_in_is_kept_for_the_default_lifetime(
    server: TokenServer,
) -> None:
    server.expires_in = None
    now = [0.0]
    creds = ClientCredentials(_config(server, refresh_ahead_s=1.0), label="n", clock=lambda: now[0])
    try:
        assert await creds.header() == "Bearer t1"
        now[0] += 250
        assert await creds.header() == "Bearer t1"
        assert len(server.requests) == 1
    finally:
        await creds.close()


@pytest.mark.parametrize("why", ["refused", "down", "no metadata"])
async def test_no_token_is_a_typed_error_that_sent_nothing(server: TokenServer, why: str) -> None:
    config = _config(server)
    if why == "refused":
        server.status = 401
    elif why == "down":
        config = _config(server, token_endpoint="http://127.0.0.1:9/oauth/token")
    else:
        config = _config(server, token_endpoint=None, issuer=f"{server.url}/elsewhere")
    creds = ClientCredentials(config, label="notes")
    try:
        with pytest.raises(UpstreamUnavailableError) as info:
            await asyncio.wait_for(creds.header(), 30)
        assert info.value.sent is False
        assert "notes: no token" in info.value.message
        assert "s:cret" not in info.value.message
        if why == "refused":
            assert "HTTP 401 (invalid_client)" in info.value.message
    finally:
        await creds.close()


@pytest.mark.parametrize(
    "token",
    ["t1\r\nX-Injected: yes", "t1\nX-Injected: yes", "t 1", "t1\x00", "tök", "=abc", ""],
)
async def test_a_token_that_is_not_a_bearer_token_is_refused_before_any_header_carries_it(
    server: TokenServer, token: str
) -> None:
    # a hostile or broken token endpoint: its access_token would become an Authorization
    # line of every forwarded request (CR/LF: header lines of the attacker's choosing)
    server.token_text = token
    creds = ClientCredentials(_config(server), label="notes")
    try:
        with pytest.raises(UpstreamUnavailableError) as info:
            await asyncio.wait_for(creds.header(), 30)
        assert info.value.sent is False
        assert "notes: no token" in info.value.message
        assert creds.current() is None
    finally:
        await creds.close()


async def test_a_bearer_token_with_every_allowed_character_is_taken(server: TokenServer) -> None:
    server.token_text = "Az09-._~+/=="
    creds = ClientCredentials(_config(server), label="notes")
    try:
        assert await creds.header() == "Bearer Az09-._~+/=="
    finally:
        await creds.close()


async def test_an_upstream_401_gets_a_new_token_and_the_request_once_more(tmp_path: Any) -> None:
    # a real air serve --auth-config upstream; the issuer's first token names another resource,
    # so the upstream answers 401: the token is dropped, a new one fetched, the request resent
    from airgateway.upstream_http import HttpUpstream
    from tests.airhttp.issuer import running_issuer
    from tests.airhttp.oidc_setup import NOTES, free_port, serve_notes, stop

    async with running_issuer() as issuer:
        port = free_port()
        resource = f"http://127.0.0.1:{port}/mcp"
        auth = f"issuer: {issuer.url}\nresource: {resource}\nscopes: [mcp:tools]\n"
        proc = await asyncio.to_thread(serve_notes, NOTES, auth, port, tmp_path)
        config = UpstreamOAuth(client_id="air-gateway", client_secret="air-gateway-secret",
                               token_endpoint=f"{issuer.url}/token", scope="mcp:tools",
                               resource=resource)  # fmt: skip
        try:
            issuer.wrong_audience = 1
            creds = ClientCredentials(config, label="notes")
            upstream = HttpUpstream("notes#0", resource, credentials=creds)
            try:
                await upstream.connect()
                result = await upstream.request(
                    "tools/call", {"name": "read_note", "arguments": {"id": "1"}}, timeout=30
                )
                assert result["content"][0]["text"] == "note 1"
                assert issuer.token_requests == 2  # the refused token, then a good one
            finally:
                await upstream.close()
                await creds.close()
            # an upstream that keeps refusing: one new token per request, never a loop
            issuer.wrong_audience = 10
            creds = ClientCredentials(config, label="notes")
            upstream = HttpUpstream("notes#1", resource, credentials=creds)
            try:
                with pytest.raises(UpstreamUnavailableError) as info:
                    await upstream.connect()
                assert "401" in info.value.message
                assert issuer.token_requests == 4
            finally:
                await upstream.close()
                await creds.close()
        finally:
            await asyncio.to_thread(stop, proc)


async def test_a_reload_closes_the_credentials_no_replica_uses_any_more(
    server: TokenServer,
) -> None:
    from airgateway.config import parse_config
    from airgateway.gateway import Gateway
    from airgateway.upstream_http import HttpUpstream
    from airstore.memory import MemoryStore
    from tests.airgateway.procs import free_port, http_replica, started

    port = free_port()
    plain = f"servers:\n  - name: notes\n    url: http://127.0.0.1:{port}/mcp\n"
    oauth = (plain + f"    oauth: {{token_endpoint: '{server.url}/oauth/token', client_id: gw, "
             "client_secret: {env: S}}\n")  # fmt: skip
    environ = {"S": "s:cret"}
    with started(http_replica("a", port), env={"REPLICA": "a"}):
        gw = Gateway(parse_config(oauth, environ=environ), store=MemoryStore())
        async with gw:
            (replica,) = gw.router.all()
            assert isinstance(replica.client, HttpUpstream)
            credentials = replica.client.credentials
            assert credentials is not None
            answer = await gw.call_tool({"name": "whoami", "arguments": {}})
            assert answer["content"][0]["text"] == "a"
            assert credentials.fetches >= 1
            fetch = credentials._own
            assert fetch is not None
            assert fetch.session is not None
            await gw.reload(parse_config(oauth, environ=environ))  # unchanged: kept
            assert fetch.session is not None
            await gw.reload(parse_config(plain, environ=environ))  # oauth removed
            await asyncio.wait_for(asyncio.gather(*gw._retiring), 30)
            assert fetch.session is None  # closed with the last replica using it
