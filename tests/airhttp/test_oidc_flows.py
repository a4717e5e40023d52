"""End to end against a real authorization server (oidc-provider, OpenID Certified, Node 22):
authorization code + PKCE through its own login and consent pages, driven over HTTP, with the
official ``mcp`` client's ``OAuthClientProvider``; and signing-key rotation (the provider
restarted with new keys on the same issuer URL) seen by ``air serve --auth-config``."""

from __future__ import annotations

import asyncio
import base64
import json
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.airhttp.oauth_client import Tokens
from tests.airhttp.oidc_setup import (
    NOTES,
    Browser,
    ProviderProcess,
    free_port,
    issue_token,
    key_set,
    require_node,
    serve_notes,
    stop,
)


@pytest.fixture(scope="module", autouse=True)
def _oidc_provider_installed() -> None:
    """A missing provider fails these tests (as tests/airgateway/test_gateway_oauth.py does):
    never a silent skip of what they prove."""
    if not require_node():
        pytest.fail("oidc-provider is not installed: run scripts/oidc.sh (make test does)")


REDIRECT = "http://127.0.0.1/callback"  # never served: the browser stand-in stops at it


class Setup:
    def __init__(self, provider: ProviderProcess, resource: str, data: Path) -> None:
        self.provider = provider
        self.resource = resource
        self.data = data


@pytest.fixture(scope="module")
def code_flow(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Setup]:
    tmp = tmp_path_factory.mktemp("code")
    port = free_port()
    resource = f"http://127.0.0.1:{port}/mcp"
    provider = ProviderProcess(resource, env={"REDIRECT_URI": REDIRECT})
    server = None
    try:
        issuer = provider.start(list(key_set("es-1")[1].values()))
        auth = (
            f"issuer: {issuer}\nresource: {resource}\nscopes: [mcp:tools]\n"
            'tools: {"delete_*": [notes:write]}\n'
        )
        server = serve_notes(NOTES, auth, port, tmp)
        yield Setup(provider, resource, tmp / "notes-data")
    finally:
        stop(server)
        provider.stop()


def _claims(token: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """A JWT's header and claims, unverified (the server verified them)."""

    def part(segment: str) -> dict[str, Any]:
        value = json.loads(base64.urlsafe_b64decode(segment + "=" * (-len(segment) % 4)))
        assert isinstance(value, dict)
        return value

    head, body, _ = token.split(".")
    return part(head), part(body)


async def _records(data: Path, client_id: str) -> list[dict[str, Any]]:
    from airmeter import CALLS_NAMESPACE
    from airstore import create_storage

    for _ in range(300):  # the server delivers records within its flush interval
        store = await create_storage(f"file://{data}", read_only=True)
        try:
            records = await store.query(CALLS_NAMESPACE, limit=1000)
        finally:
            await store.close()
        mine = [r for r in records if r.get("client_id") == client_id]
        if mine:
            return mine
        await asyncio.sleep(0.1)
    raise AssertionError(f"no meter record of {client_id}")


async def test_authorization_code_with_pkce_through_the_login_and_consent_pages(
    code_flow: Setup,
) -> None:
    import httpx2
    from mcp import Client
    from mcp.client.auth import OAuthClientProvider
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared.auth import OAuthClientInformationFull, OAuthClientMetadata

    browser = Browser(REDIRECT, login="alice")
    storage = Tokens()
    # a client registered ahead (public, native, PKCE): what Claude Desktop gets by registering
    storage.client = OAuthClientInformationFull(
        client_id="air-desktop",
        redirect_uris=[REDIRECT],  # type: ignore[list-item]
        token_endpoint_auth_method="none",
        grant_types=["authorization_code"],
        response_types=["code"],
    )
    auth = OAuthClientProvider(
        server_url=code_flow.resource,
        client_metadata=OAuthClientMetadata(
            redirect_uris=[REDIRECT],  # type: ignore[list-item]
            token_endpoint_auth_method="none",
            grant_types=["authorization_code"],
            response_types=["code"],
            client_name="air test desktop",
        ),
        storage=storage,
        redirect_handler=browser.open,
        callback_handler=browser.callback,
    )
    try:
        async with (
            httpx2.AsyncClient(auth=auth, timeout=30) as http,
            Client(streamable_http_client(code_flow.resource, http_client=http)) as client,
        ):
            # the 401 led to the metadata, then to the login and consent pages
            assert browser.pages == ["login", "consent"]
            header, claims = _claims(storage.tokens.access_token)
            assert header["typ"] == "at+jwt"
            assert claims["aud"] == code_flow.resource  # resource indicators (RFC 8707)
            assert claims["client_id"] == "air-desktop"
            assert claims["sub"] == "alice"
            assert claims["scope"] == "mcp:tools"  # least privilege: what the 401 asked for
            names = {tool.name for tool in (await client.list_tools()).tools}
            assert names == {"read_note"}
            result = await client.call_tool("read_note", {"id": "7"})
            assert result.content[0].text == "note 7"
            # 403 insufficient_scope: the client authorizes again; the session is still signed
            # in, so only the consent page asks, for notes:write
            result = await client.call_tool("delete_note", {"id": "7"})
            assert result.content[0].text == "deleted 7"
            assert browser.pages == ["login", "consent", "consent"]
            assert set(_claims(storage.tokens.access_token)[1]["scope"].split()) == {
                "mcp:tools",
                "notes:write",
            }
    finally:
        await browser.aclose()
    record = (await _records(code_flow.data, "air-desktop"))[0]
    assert record["auth"] == "oauth"
    assert record["subject"].startswith("p:")
    assert "alice" not in record["subject"]


async def test_a_client_registers_itself_then_signs_in_with_pkce(code_flow: Setup) -> None:
    # what Claude Desktop and the MCP Inspector do: no client ahead, dynamic registration
    # (RFC 7591) at the endpoint the authorization server's metadata names, then code + PKCE
    import httpx2
    from mcp import Client
    from mcp.client.auth import OAuthClientProvider
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared.auth import OAuthClientMetadata

    browser = Browser(REDIRECT, login="carol")
    storage = Tokens()  # nothing stored: the client registers
    auth = OAuthClientProvider(
        server_url=code_flow.resource,
        client_metadata=OAuthClientMetadata(
            redirect_uris=[REDIRECT],  # type: ignore[list-item]
            token_endpoint_auth_method="none",
            grant_types=["authorization_code"],
            response_types=["code"],
            client_name="a self-registered desktop client",
        ),
        storage=storage,
        redirect_handler=browser.open,
        callback_handler=browser.callback,
    )
    try:
        async with (
            httpx2.AsyncClient(auth=auth, timeout=30) as http,
            Client(streamable_http_client(code_flow.resource, http_client=http)) as client,
        ):
            result = await client.call_tool("read_note", {"id": "dcr"})
            assert result.content[0].text == "note dcr"
    finally:
        await browser.aclose()
    registered = storage.client.client_id
    assert registered not in ("air-desktop", "air-writer", "air-reader", "air-gateway")
    assert browser.pages == ["login", "consent"]
    _, claims = _claims(storage.tokens.access_token)
    assert claims["client_id"] == registered
    assert claims["aud"] == code_flow.resource
    assert claims["sub"] == "carol"
    assert (await _records(code_flow.data, registered))[0]["auth"] == "oauth"


async def test_a_code_is_redeemed_only_with_its_pkce_verifier_and_once(code_flow: Setup) -> None:
    # the same pages, the authorization request made by hand; then the token requests
    import hashlib
    import secrets

    verifier = secrets.token_urlsafe(48)
    challenge = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).decode()
    browser = Browser(REDIRECT, login="bob")
    issuer = code_flow.provider.issuer
    query = httpx.QueryParams(
        response_type="code",
        client_id="air-desktop",
        redirect_uri=REDIRECT,
        scope="mcp:tools",
        state="s1",
        resource=code_flow.resource,
        code_challenge=challenge.rstrip("="),
        code_challenge_method="S256",
    )
    try:
        await browser.open(f"{issuer}/auth?{query}")
        code = (await browser.callback()).code
        async with httpx.AsyncClient(timeout=30) as http:
            form = {
                "grant_type": "authorization_code",
                "code": code,
                "redirect_uri": REDIRECT,
                "client_id": "air-desktop",
                "resource": code_flow.resource,
            }
            answer = await http.post(f"{issuer}/token", data=form)
            assert answer.status_code == 400
            assert answer.json()["error"] == "invalid_grant"
            wrong = await http.post(
                f"{issuer}/token", data={**form, "code_verifier": secrets.token_urlsafe(48)}
            )
            assert wrong.status_code == 400
            assert wrong.json()["error"] == "invalid_grant"
            right = await http.post(f"{issuer}/token", data={**form, "code_verifier": verifier})
            assert right.status_code == 200, right.text
            token = right.json()["access_token"]
            assert _claims(token)[1]["sub"] == "bob"
            assert (await _ping(code_flow.resource, token))[0] == 200
            again = await http.post(f"{issuer}/token", data={**form, "code_verifier": verifier})
            assert again.status_code == 400  # a code is good once
            assert (await _ping(code_flow.resource, "x" + token[1:]))[0] == 401
    finally:
        await browser.aclose()


# ---- key rotation ---------------------------------------------------------------------------
class Rotation(Setup):
    keys: dict[str, Any]


@pytest.fixture
async def rotation(tmp_path: Path) -> AsyncIterator[Rotation]:
    port = free_port()
    resource = f"http://127.0.0.1:{port}/mcp"
    provider = ProviderProcess(resource)
    server = None
    _, keys = key_set("key-a", "key-b", "key-c")
    try:
        issuer = provider.start([keys["key-a"]])
        # no verified-token cache: every request checks the token against the current keys
        auth = (
            f"issuer: {issuer}\nresource: {resource}\nscopes: [mcp:tools]\n"
            "cache_size: 0\njwks_min_refresh_s: 0.05\n"
        )
        server = serve_notes(NOTES, auth, port, tmp_path)
        setup = Rotation(provider, resource, tmp_path / "notes-data")
        setup.keys = keys
        yield setup
    finally:
        stop(server)
        provider.stop()


async def _ping(resource: str, token: str) -> tuple[int, str]:
    """The status of one request with ``token``, and its challenge."""
    async with httpx.AsyncClient(timeout=30) as http:
        answer = await http.post(
            resource,
            headers={
                "authorization": f"Bearer {token}",
                "accept": "application/json, text/event-stream",
            },
            json={
                "jsonrpc": "2.0",
                "id": 1,
                "method": "initialize",
                "params": {
                    "protocolVersion": "2025-06-18",
                    "capabilities": {},
                    "clientInfo": {"name": "rotation", "version": "1"},
                },
            },
        )
    return answer.status_code, answer.headers.get("www-authenticate", "")


async def test_rotated_signing_keys_are_taken_and_removed_keys_refused(
    rotation: Rotation,
) -> None:
    provider, resource, keys = rotation.provider, rotation.resource, rotation.keys

    async def token() -> str:
        return await issue_token(provider.issuer, "air-reader", "mcp:tools", resource)

    token_a = await token()
    assert _claims(token_a)[0]["kid"] == "key-a"
    assert (await _ping(resource, token_a))[0] == 200

    # step 1: a new signing key; the old one still published, for the tokens it signed
    provider.restart([keys["key-b"], keys["key-a"]])
    token_b = await token()
    assert _claims(token_b)[0]["kid"] == "key-b"
    assert (await _ping(resource, token_b))[0] == 200  # unknown kid: the keys fetched again
    assert (await _ping(resource, token_a))[0] == 200

    # step 2: key-a retired, key-c next; a token of key-c makes the server fetch the keys
    provider.restart([keys["key-c"], keys["key-b"]])
    token_c = await token()
    assert _claims(token_c)[0]["kid"] == "key-c"
    assert (await _ping(resource, token_c))[0] == 200
    status, challenge = await _ping(resource, token_a)
    assert status == 401
    assert 'error="invalid_token"' in challenge
    assert (await _ping(resource, token_b))[0] == 200
