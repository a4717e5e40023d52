"""The OAuth resource server (airhttp.oauth_*): token validation against a real (local) issuer
over HTTP, every bad token of the authorization issue, and the guard's HTTP answers."""

from __future__ import annotations

import asyncio
import base64
import hashlib
import hmac
import time
from collections.abc import AsyncIterator
from typing import Any

import httpx
import orjson
import pytest
from joserfc.jwk import ECKey

from airhttp import (
    AuthConfigError,
    AuthRefusedError,
    GuardedApp,
    Identity,
    OAuthGuard,
    TokenVerifier,
    auth_config_from,
    current_identity,
)
from airhttp.policy import AccessPolicy
from tests.airhttp.issuer import Issuer, running_issuer

RESOURCE = "http://127.0.0.1:9/mcp"


@pytest.fixture
async def issuer() -> AsyncIterator[Issuer]:
    async with running_issuer() as found:
        yield found


def _config(issuer: Issuer, **extra: Any) -> Any:
    return auth_config_from(
        {
            "issuer": issuer.url,
            "resource": RESOURCE,
            "scopes": ["mcp:tools"],
            "tools": {"delete_*": ["notes:write"]},
            "timeout_s": 1.0,
            **extra,
        }
    )


@pytest.fixture
async def verifier(issuer: Issuer) -> AsyncIterator[TokenVerifier]:
    found = TokenVerifier(_config(issuer))
    yield found
    await found.close()


# ---- configuration --------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("doc", "key"),
    [
        ({"resource": RESOURCE}, "issuer"),
        ({"issuer": "http://login.example.com/", "resource": RESOURCE}, "issuer"),
        (
            {"issuer": "https://login.example.com/", "resource": "http://notes.example.com/mcp"},
            "resource",
        ),
        (
            {"issuer": "https://a/", "resource": "https://b/mcp", "algorithms": ["HS256"]},
            "algorithms",
        ),
        (
            {"issuer": "https://a/", "resource": "https://b/mcp", "algorithms": ["none"]},
            "algorithms",
        ),
        ({"issuer": "https://a/", "resource": "https://b/mcp", "audience": "x"}, "audience"),
        (
            {"issuer": "https://a/", "resource": "https://b/mcp", "scopes": "a b", "leeway_s": -1},
            "leeway_s",
        ),
        (
            {"issuer": "https://a/", "resource": "https://b/mcp", "require_at_jwt": "no"},
            "require_at_jwt",
        ),
    ],
)
def test_a_bad_configuration_names_its_key(doc: dict[str, Any], key: str) -> None:
    with pytest.raises(AuthConfigError) as info:
        auth_config_from(doc)
    assert info.value.key == key


def test_http_urls_are_accepted_on_loopback_only() -> None:
    for host in ("127.0.0.1", "[::1]", "localhost"):
        auth_config_from({"issuer": f"http://{host}:8/", "resource": f"http://{host}:9/mcp"})


def test_metadata_names_resource_servers_and_scopes() -> None:
    config = auth_config_from(
        {
            "issuer": "https://login.example.com/",
            "resource": "https://notes.example.com/mcp",
            "scopes": ["mcp:tools"],
            "tools": {"delete_*": ["notes:write"]},
        }
    )
    assert config.metadata() == {
        "resource": "https://notes.example.com/mcp",
        "authorization_servers": ["https://login.example.com/"],
        "scopes_supported": ["mcp:tools", "notes:write"],
        "bearer_methods_supported": ["header"],
    }
    assert config.metadata_path == "/.well-known/oauth-protected-resource/mcp"


# ---- tokens ---------------------------------------------------------------------------------
@pytest.mark.parametrize("alg", ["ES256", "RS256", "PS256", "EdDSA"])
async def test_a_token_of_each_accepted_algorithm_verifies(
    issuer: Issuer, verifier: TokenVerifier, alg: str
) -> None:
    identity = await verifier.verify(issuer.token(resource=RESOURCE, alg=alg, azp="x"))
    assert identity.auth == "oauth"
    assert identity.client_id == "client-1"
    assert identity.subject == "user-1"
    assert identity.scopes == {"mcp:tools"}


def _forged(header: dict[str, Any], claims: dict[str, Any], signature: bytes = b"") -> str:
    def b64(data: bytes) -> str:
        return base64.urlsafe_b64encode(data).decode().rstrip("=")

    return f"{b64(orjson.dumps(header))}.{b64(orjson.dumps(claims))}.{b64(signature)}"


def _hs256_with(secret: bytes, header: dict[str, Any], claims: dict[str, Any]) -> str:
    """The classic confusion attack: HMAC-signed with the RSA public key as the secret
    (joserfc itself refuses to build such a key, so it is made by hand)."""
    unsigned = _forged(header, claims).rsplit(".", 1)[0]
    mac = hmac.new(secret, unsigned.encode(), hashlib.sha256).digest()
    return unsigned + "." + base64.urlsafe_b64encode(mac).decode().rstrip("=")


def _claims(issuer: Issuer, **changes: Any) -> dict[str, Any]:
    now = int(time.time())
    claims = {
        "iss": issuer.url,
        "aud": RESOURCE,
        "sub": "u",
        "client_id": "c",
        "scope": "mcp:tools",
        "exp": now + 300,
        "iat": now,
    }
    claims.update(changes)
    return claims


async def test_every_bad_token_is_refused(issuer: Issuer, verifier: TokenVerifier) -> None:
    other = ECKey.generate_key("P-256", parameters={"kid": "ec-1"})  # the issuer's kid, not key
    public_pem = issuer.keys[0].as_pem(private=False)
    now = int(time.time())
    bad = {
        "signed by another key": issuer.token(resource=RESOURCE, key=other),
        "alg none": _forged({"alg": "none", "kid": "ec-1"}, _claims(issuer)),
        "HS256 with the public key": _hs256_with(
            public_pem, {"alg": "HS256", "kid": "rsa-1"}, _claims(issuer)
        ),
        "wrong aud": issuer.token(resource="http://127.0.0.1:9/other"),
        "another resource": issuer.token(resource="https://elsewhere.example.com/mcp"),
        "expired": issuer.token(resource=RESOURCE, exp=now - 600, iat=now - 900),
        "not yet valid": issuer.token(resource=RESOURCE, nbf=now + 600),
        "wrong iss": issuer.token(resource=RESOURCE, iss="http://127.0.0.1:1"),
        "no exp": _forged(
            {"alg": "ES256", "typ": "at+jwt", "kid": "ec-1"}, {"iss": issuer.url, "aud": RESOURCE}
        ),
        "64 KB": "a" * 65536,
        "not a JWT": "opaque-without-introspection",
        "garbage JWT": "a.b.c",
    }
    for why, token in bad.items():
        with pytest.raises(AuthRefusedError) as info:
            await verifier.verify(token)
        assert info.value.status == 401, why
        assert info.value.error == "invalid_token", why


@pytest.mark.parametrize("typ", [None, "JWT", "jwt", "id_token+jwt", "at+jwt2"])
async def test_a_jwt_that_is_not_typed_as_an_access_token_is_refused(
    issuer: Issuer, verifier: TokenVerifier, typ: str | None
) -> None:
    # RFC 9068 §4: an ID token (typ JWT or none) signed by the same issuer is not an access token
    with pytest.raises(AuthRefusedError) as info:
        await verifier.verify(issuer.token(resource=RESOURCE, typ=typ))
    assert info.value.status == 401
    assert info.value.error == "invalid_token"
    assert "at+jwt" in info.value.description
    assert "require_at_jwt" in info.value.description


@pytest.mark.parametrize("typ", ["at+jwt", "application/at+jwt", "AT+JWT", "Application/At+Jwt"])
async def test_each_spelling_of_the_access_token_typ_verifies(
    issuer: Issuer, verifier: TokenVerifier, typ: str
) -> None:
    identity = await verifier.verify(issuer.token(resource=RESOURCE, typ=typ))
    assert identity.client_id == "client-1"


@pytest.mark.parametrize("typ", [None, "JWT"])
async def test_require_at_jwt_false_accepts_issuers_that_do_not_set_it(
    issuer: Issuer, typ: str | None
) -> None:
    verifier = TokenVerifier(_config(issuer, require_at_jwt=False))
    try:
        identity = await verifier.verify(issuer.token(resource=RESOURCE, typ=typ))
        assert identity.client_id == "client-1"
        with pytest.raises(AuthRefusedError):  # every other check still holds
            await verifier.verify(issuer.token(resource="https://elsewhere.example.com/mcp"))
    finally:
        await verifier.close()


async def test_an_unknown_kid_sent_10000_times_fetches_the_keys_at_most_twice(
    issuer: Issuer, verifier: TokenVerifier
) -> None:
    await verifier.verify(issuer.token(resource=RESOURCE))  # keys cached
    base = issuer.jwks_requests
    token = issuer.token(resource=RESOURCE, kid="made-up")

    async def one() -> None:
        with pytest.raises(AuthRefusedError):
            await verifier.verify(token)

    for start in range(0, 10_000, 500):
        await asyncio.gather(*(one() for _ in range(start, start + 500)))
    assert issuer.jwks_requests - base <= 1


async def test_rotated_keys_are_fetched_for_a_new_kid(issuer: Issuer) -> None:
    verifier = TokenVerifier(_config(issuer, jwks_min_refresh_s=0.05))
    try:
        await verifier.verify(issuer.token(resource=RESOURCE))
        issuer.rotate()
        await asyncio.sleep(0.1)  # past the refresh interval (not a time assertion)
        identity = await verifier.verify(issuer.token(resource=RESOURCE))
        assert identity.client_id == "client-1"
    finally:
        await verifier.close()


@pytest.mark.parametrize("mode", ["down", "slow", "garbage"])
async def test_keys_that_cannot_be_had_fail_closed_with_503(issuer: Issuer, mode: str) -> None:
    issuer.mode = mode
    issuer.slow_s = 10.0
    verifier = TokenVerifier(_config(issuer, timeout_s=0.3))
    try:
        with pytest.raises(AuthRefusedError) as info:
            await asyncio.wait_for(verifier.verify(issuer.token(resource=RESOURCE)), 30)
        assert info.value.status == 503
    finally:
        await verifier.close()


async def test_a_verified_token_is_cached_no_longer_than_its_exp(issuer: Issuer) -> None:
    now = [time.time()]
    verifier = TokenVerifier(_config(issuer), clock=lambda: now[0])
    try:
        token = issuer.token(resource=RESOURCE, lifetime=60)
        await verifier.verify(token)
        assert verifier.cached(token) is not None
        now[0] += 120
        assert verifier.cached(token) is None
        with pytest.raises(AuthRefusedError):
            await verifier.verify(token)  # expired by then
    finally:
        await verifier.close()


async def test_opaque_tokens_go_to_introspection(
    issuer: Issuer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("INTROSPECT_SECRET", "s3cret")
    config = _config(
        issuer,
        introspection={
            "endpoint": f"{issuer.url}/introspect",
            "client_id": "rs",
            "client_secret_env": "INTROSPECT_SECRET",
        },
    )
    issuer.active_tokens["live-opaque"] = {
        "client_id": "c9",
        "sub": "u9",
        "scope": "mcp:tools",
        "aud": RESOURCE,
        "exp": int(time.time()) + 60,
    }
    verifier = TokenVerifier(config)
    try:
        identity = await verifier.verify("live-opaque")
        assert (identity.client_id, identity.subject) == ("c9", "u9")
        with pytest.raises(AuthRefusedError) as info:
            await verifier.verify("revoked-opaque")  # the endpoint says inactive
        assert info.value.status == 401
    finally:
        await verifier.close()


# ---- the guard over HTTP (ASGI, in process) --------------------------------------------------
async def _seen_app(scope: Any, receive: Any, send: Any) -> None:
    identity = current_identity()
    body = orjson.dumps({"client": identity.client_id if identity else None})
    await send(
        {
            "type": "http.response.start",
            "status": 200,
            "headers": [(b"content-type", b"application/json")],
        }
    )
    await send({"type": "http.response.body", "body": body})


@pytest.fixture
async def client(verifier: TokenVerifier) -> AsyncIterator[httpx.AsyncClient]:
    guard = OAuthGuard(_seen_app, verifier, static_token="static-secret")
    app = GuardedApp(guard, policy=AccessPolicy(check_host=False))
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1:9") as found:
        yield found


async def test_metadata_is_served_without_a_token(client: httpx.AsyncClient) -> None:
    for path in (
        "/.well-known/oauth-protected-resource",
        "/.well-known/oauth-protected-resource/mcp",
    ):
        answer = await client.get(path)
        assert answer.status_code == 200
        assert answer.json()["resource"] == RESOURCE


async def test_no_token_is_challenged_with_the_metadata_url(client: httpx.AsyncClient) -> None:
    answer = await client.post("/mcp", content=b"{}")
    assert answer.status_code == 401
    challenge = answer.headers["www-authenticate"]
    assert challenge.startswith("Bearer ")
    assert 'resource_metadata="http://127.0.0.1:9/.well-known/oauth-protected-resource/mcp"' in (
        challenge
    )


async def test_a_bad_token_gets_invalid_token(client: httpx.AsyncClient) -> None:
    answer = await client.post("/mcp", headers={"authorization": "Bearer x.y.z"})
    assert answer.status_code == 401
    assert 'error="invalid_token"' in answer.headers["www-authenticate"]


async def test_a_token_in_the_query_string_is_refused(
    issuer: Issuer, client: httpx.AsyncClient
) -> None:
    token = issuer.token(resource=RESOURCE)
    answer = await client.post(f"/mcp?access_token={token}", content=b"{}")
    assert answer.status_code == 400
    answer = await client.post(f"/mcp?access%5Ftoken={token}", content=b"{}")
    assert answer.status_code == 400


async def test_missing_server_scope_is_403_insufficient_scope(
    issuer: Issuer, client: httpx.AsyncClient
) -> None:
    token = issuer.token(resource=RESOURCE, scope="profile")
    answer = await client.post("/mcp", headers={"authorization": f"Bearer {token}"})
    assert answer.status_code == 403
    challenge = answer.headers["www-authenticate"]
    assert 'error="insufficient_scope"' in challenge
    assert 'scope="mcp:tools"' in challenge


async def test_a_tool_needing_more_scope_is_403_naming_it(
    issuer: Issuer, client: httpx.AsyncClient
) -> None:
    token = issuer.token(resource=RESOURCE)
    call = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {"name": "delete_note", "arguments": {}},
    }
    answer = await client.post("/mcp", headers={"authorization": f"Bearer {token}"}, json=call)
    assert answer.status_code == 403
    assert "notes:write" in answer.headers["www-authenticate"]
    stepped_up = issuer.token(resource=RESOURCE, scope="mcp:tools notes:write")
    answer = await client.post("/mcp", headers={"authorization": f"Bearer {stepped_up}"}, json=call)
    assert answer.status_code == 200


async def test_the_app_sees_who_called(issuer: Issuer, client: httpx.AsyncClient) -> None:
    token = issuer.token(resource=RESOURCE)
    answer = await client.post("/mcp", headers={"authorization": f"Bearer {token}"})
    assert answer.json() == {"client": "client-1"}
    answer = await client.post("/mcp", headers={"authorization": "Bearer static-secret"})
    assert answer.json() == {"client": "token"}


def test_an_identity_without_oauth_misses_no_scope() -> None:
    assert Identity(auth="token").may_call("delete_all")
    oauth = Identity(
        auth="oauth", scopes=frozenset({"a"}), tool_scopes=(("delete_*", frozenset({"w"})),)
    )
    assert oauth.missing_for("delete_x") == {"w"}
    assert oauth.may_call("read_x")


# ---- review findings --------------------------------------------------------------------------
async def test_an_escaped_tools_call_is_checked_like_a_plain_one(
    issuer: Issuer, client: httpx.AsyncClient
) -> None:
    token = issuer.token(resource=RESOURCE)  # mcp:tools only
    body = (
        b'{"jsonrpc":"2.0","id":1,"method":"tools\\/call",'
        b'"params":{"name":"delete_note","arguments":{}}}'
    )
    assert orjson.loads(body)["method"] == "tools/call"
    answer = await client.post("/mcp", headers={"authorization": f"Bearer {token}"}, content=body)
    assert answer.status_code == 403


async def test_a_jwks_that_arrives_in_pieces_is_read_whole(issuer: Issuer) -> None:
    issuer.rotate()
    for _ in range(30):  # a key set larger than one read
        issuer.keys.append(ECKey.generate_key("P-256", parameters={"kid": f"pad-{_}"}))
    issuer.mode = "chunked"
    verifier = TokenVerifier(_config(issuer))
    try:
        identity = await verifier.verify(issuer.token(resource=RESOURCE, key=issuer.keys[0]))
        assert identity.client_id == "client-1"
    finally:
        await verifier.close()


async def test_a_key_the_issuer_removed_stops_being_trusted(issuer: Issuer) -> None:
    verifier = TokenVerifier(_config(issuer, jwks_min_refresh_s=0.01))
    try:
        old_key = next(k for k in issuer.keys if k.kid == "ec-1")
        await verifier.verify(issuer.token(resource=RESOURCE, key=old_key))
        issuer.rotate()  # the old key is gone from the issuer's JWKS (revoked, say)
        keys = verifier._issuers[issuer.url]
        keys.fetched_at -= verifier.config.jwks_max_age_s + 1  # the cached set grew old
        keys.last_try = float("-inf")
        with pytest.raises(AuthRefusedError):  # a new token signed by the removed key
            await verifier.verify(issuer.token(resource=RESOURCE, key=old_key, jti="later"))
    finally:
        await verifier.close()


async def test_an_introspected_token_without_aud_is_refused_unless_allowed(
    issuer: Issuer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("INTROSPECT_SECRET", "s3cret")
    spec = {
        "endpoint": f"{issuer.url}/introspect",
        "client_id": "rs",
        "client_secret_env": "INTROSPECT_SECRET",
    }
    issuer.active_tokens["no-aud"] = {
        "client_id": "c",
        "scope": "mcp:tools",
        "exp": int(time.time()) + 60,
    }
    strict = TokenVerifier(_config(issuer, introspection=spec))
    lenient = TokenVerifier(_config(issuer, introspection={**spec, "require_audience": False}))
    try:
        with pytest.raises(AuthRefusedError):
            await strict.verify("no-aud")
        assert (await lenient.verify("no-aud")).client_id == "c"
    finally:
        await strict.close()
        await lenient.close()


def test_one_jwks_uri_for_several_issuers_is_refused() -> None:
    with pytest.raises(AuthConfigError) as info:
        auth_config_from(
            {
                "issuers": ["https://a.example/", "https://b.example/"],
                "resource": "https://r.example/mcp",
                "jwks_uri": "https://a.example/jwks",
            }
        )
    assert info.value.key == "jwks_uri"


async def test_discovery_passes_an_html_page_for_openid_configuration(issuer: Issuer) -> None:
    issuer.html_rfc8414 = True
    verifier = TokenVerifier(_config(issuer))
    try:
        assert (await verifier.verify(issuer.token(resource=RESOURCE))).auth == "oauth"
    finally:
        await verifier.close()


async def test_a_discovered_jwks_uri_over_plain_http_is_refused(issuer: Issuer) -> None:
    issuer.jwks_uri = "http://keys.example.com/jwks"  # not loopback: a man in the middle's keys
    verifier = TokenVerifier(_config(issuer))
    try:
        with pytest.raises(AuthRefusedError) as info:
            await verifier.verify(issuer.token(resource=RESOURCE))
        assert info.value.status == 503
    finally:
        await verifier.close()


# ---- one Authorization header (RFC 6750 §2), on a real socket --------------------------------
async def _fast_answer(scope: Any, body: bytes) -> tuple[int, list[tuple[bytes, bytes]], bytes]:
    return 200, [(b"content-type", b"application/json")], b'{"fast":true}'


@pytest.mark.parametrize(
    ("path", "tokens"),
    [
        ("/fast", ("static-secret", "static-secret")),  # the fast path would take the first
        ("/mcp", ("x.y.z", "static-secret")),  # the ASGI path would take the last
        ("/mcp", ("static-secret", "x.y.z")),
    ],
)
async def test_a_request_with_two_authorization_headers_is_refused_400(
    verifier: TokenVerifier, path: str, tokens: tuple[str, str]
) -> None:
    from airhttp import HttpServer, listen_socket

    guard = OAuthGuard(_seen_app, verifier, static_token="static-secret")

    def fast(scope: Any, body: bytes) -> Any:
        return _fast_answer(scope, body) if scope["path"] == "/fast" else None

    sock = listen_socket("127.0.0.1", 0)
    server = HttpServer(guard, grace=1.0, fast=guard.guard_fast(fast))
    serving = asyncio.ensure_future(server.serve(sock))
    await asyncio.wait_for(server.ready.wait(), 30)
    try:
        port = sock.getsockname()[1]
        async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}") as http:
            one = await http.post(path, content=b"{}",
                                  headers={"authorization": "Bearer static-secret"})  # fmt: skip
            assert one.status_code == 200  # one header: served
            two = await http.post(path, content=b"{}", headers=[
                ("authorization", f"Bearer {t}") for t in tokens])  # fmt: skip
            assert two.status_code == 400
            assert "one Authorization header" in two.json()["error"]["message"]
    finally:
        server.stop()
        await asyncio.wait_for(serving, 30)
        sock.close()
