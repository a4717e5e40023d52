"""A small, controllable authorization server for the resource-server tests.

It serves RFC 8414 metadata, a JWKS, a client-credentials token endpoint and an RFC 7662
introspection endpoint on a free
127.0.0.1 port (aiohttp), mints tokens with ``joserfc`` and can misbehave on demand: down (503),
slow, garbage, or with rotated keys. The end-to-end tests use the real ``oidc-provider`` too
(``tests/airhttp/test_oidc_provider.py``); this one exists for the failure cases a real server
will not produce on demand.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
import warnings
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import orjson
from aiohttp import web
from joserfc import jwt
from joserfc.errors import SecurityWarning
from joserfc.jwk import ECKey, KeySet, OKPKey, RSAKey

__all__ = ["Issuer", "running_issuer"]


class Issuer:
    """The state of the fake authorization server (change it between requests)."""

    def __init__(self) -> None:
        self.url = ""
        self.mode = "ok"  # ok | down | slow | garbage | chunked
        self.slow_s = 10.0
        self.stopping = asyncio.Event()
        """Set when the server stops: a slow answer still held ends then."""
        self.keys: list[Any] = [
            RSAKey.generate_key(2048, parameters={"kid": "rsa-1"}),
            ECKey.generate_key("P-256", parameters={"kid": "ec-1"}),
            OKPKey.generate_key("Ed25519", parameters={"kid": "ed-1"}),
        ]
        self.jwks_requests = 0
        self.html_rfc8414 = False  # the RFC 8414 path answers an HTML page (a proxied app)
        self.jwks_uri = ""  # another jwks_uri in the metadata
        self.active_tokens: dict[str, dict[str, Any]] = {}
        self.token_requests = 0
        self.token_lifetime = 3600
        self.wrong_audience = 0  # the next N tokens from /token name another resource

    def rotate(self) -> None:
        """Replace the keys: a new ``kid``; tokens of the old keys stop verifying."""
        self.keys = [ECKey.generate_key("P-256", parameters={"kid": f"ec-{time.time_ns()}"})]

    def token(
        self,
        *,
        resource: str,
        scope: str = "mcp:tools",
        alg: str = "ES256",
        kid: str | None = None,
        key: Any = None,
        lifetime: float = 300.0,
        typ: str | None = "at+jwt",
        **claims: Any,
    ) -> str:
        """A signed access token (RFC 9068 shape) for ``resource``."""
        signer = key or next(
            k
            for k in self.keys
            if {"ES256": "EC", "RS256": "RSA", "PS256": "RSA", "EdDSA": "OKP", "Ed25519": "OKP"}[
                alg
            ]
            == k.key_type
        )
        now = int(time.time())
        body = {
            "iss": self.url,
            "aud": resource,
            "sub": "user-1",
            "client_id": "client-1",
            "scope": scope,
            "iat": now,
            "exp": now + int(lifetime),
            "jti": str(time.time_ns()),
        }
        body.update(claims)
        header = {"alg": alg, "kid": kid if kid is not None else signer.kid}
        if typ is not None:
            header["typ"] = typ
        with warnings.catch_warnings():  # "EdDSA" is deprecated by RFC 9864, still issued
            warnings.simplefilter("ignore", SecurityWarning)
            return jwt.encode(header, body, signer, algorithms=[alg])

    async def _gate(self) -> web.Response | None:
        if self.mode == "down":
            return web.Response(status=503)
        if self.mode == "slow":  # answers after slow_s, or when the server stops (not waited)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.stopping.wait(), self.slow_s)
        if self.mode == "garbage":
            return web.Response(body=b"\x00not json{", content_type="application/json")
        return None

    async def metadata(self, request: web.Request) -> web.Response:
        refused = await self._gate()
        if refused is not None:
            return refused
        if self.html_rfc8414 and "oauth-authorization-server" in request.path:
            return web.Response(text="<html>an app's page</html>", content_type="text/html")
        return web.json_response(
            {
                "issuer": self.url,
                "jwks_uri": self.jwks_uri or f"{self.url}/jwks",
                "token_endpoint": f"{self.url}/token",
                "introspection_endpoint": f"{self.url}/introspect",
            }
        )

    async def jwks(self, request: web.Request) -> web.StreamResponse:
        self.jwks_requests += 1
        refused = await self._gate()
        if refused is not None:
            return refused
        body = orjson.dumps(KeySet(self.keys).as_dict(private=False))
        if self.mode != "chunked":
            return web.Response(body=body, content_type="application/json")
        stream = web.StreamResponse(headers={"content-type": "application/json"})
        stream.enable_chunked_encoding()
        await stream.prepare(request)
        for start in range(0, len(body), 512):  # arrives in pieces, as a slow network delivers
            await stream.write(body[start : start + 512])
            await asyncio.sleep(0.01)
        await stream.write_eof()
        return stream

    async def token_endpoint(self, request: web.Request) -> web.Response:
        """Client credentials (RFC 6749 §4.4): any client whose secret is ``<id>-secret``; the
        token is for the form's ``resource`` (RFC 8707) with its ``scope``."""
        import base64
        from urllib.parse import unquote

        self.token_requests += 1
        form = await request.post()
        basic = request.headers.get("authorization", "").removeprefix("Basic ")
        client, _, secret = base64.b64decode(basic).decode().partition(":")
        client, secret = unquote(client), unquote(secret)
        if form.get("grant_type") != "client_credentials" or secret != f"{client}-secret":
            return web.json_response({"error": "invalid_client"}, status=401)
        resource = str(form.get("resource", ""))
        if self.wrong_audience > 0:
            self.wrong_audience -= 1
            resource = "https://elsewhere.example.com/mcp"
        token = self.token(resource=resource, scope=str(form.get("scope", "")),
                           lifetime=self.token_lifetime, client_id=client, sub=client)  # fmt: skip
        return web.json_response(
            {"access_token": token, "token_type": "Bearer", "expires_in": self.token_lifetime}
        )

    async def introspect(self, request: web.Request) -> web.Response:
        form = await request.post()
        claims = self.active_tokens.get(str(form.get("token", "")))
        return web.json_response(
            {"active": False} if claims is None else {"active": True, **claims}
        )


@asynccontextmanager
async def running_issuer() -> AsyncIterator[Issuer]:
    """Start an :class:`Issuer` on a free 127.0.0.1 port; stop it on exit."""
    issuer = Issuer()
    app = web.Application()
    app.router.add_get("/.well-known/oauth-authorization-server", issuer.metadata)
    app.router.add_get("/.well-known/openid-configuration", issuer.metadata)
    app.router.add_get("/jwks", issuer.jwks)
    app.router.add_post("/introspect", issuer.introspect)
    app.router.add_post("/token", issuer.token_endpoint)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = runner.addresses[0][1]
    issuer.url = f"http://127.0.0.1:{port}"
    try:
        yield issuer
    finally:
        issuer.stopping.set()
        await runner.cleanup()
