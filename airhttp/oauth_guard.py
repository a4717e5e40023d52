"""An OAuth 2.1 resource server in front of any ASGI app: ``air serve`` and ``air gateway`` both.

- ``GET /.well-known/oauth-protected-resource`` and its path-suffixed form for the resource
  (``…/mcp``) answer the protected resource metadata (RFC 9728), without a token.
- Any other request needs ``Authorization: Bearer <token>`` (never the query string: a request
  carrying ``access_token`` there is refused 400). No or a bad token: ``401`` with
  ``WWW-Authenticate: Bearer resource_metadata="…"`` (and ``error=``/``scope=``), the discovery
  entry of the MCP clients. A token without the server-wide scopes, or without a tool's scopes
  for a ``tools/call`` of it: ``403`` ``insufficient_scope`` naming the scopes, so clients can
  step up. Keys that cannot be fetched: ``503`` (fail closed).
- An admitted request runs with its :class:`~airhttp.Identity` current
  (:func:`~airhttp.current_identity`), which the MCP layer and the meter read.
- A static token (``air serve --token``) may be accepted beside OAuth: it admits as
  ``auth="token"`` with every scope; so may static client tokens (the gateway's ``clients:``),
  each metered as its client.

Put it inside :class:`~airhttp.GuardedApp` (Host, Origin, body and in-flight limits first),
with the static token given here rather than to the guard's policy.
"""

from __future__ import annotations

import hmac
from collections.abc import Callable, Coroutine, Mapping
from typing import Any
from urllib.parse import parse_qsl, urlsplit

import orjson

from airhttp.guards import bearer_candidate, bearer_token
from airhttp.identity import Identity, use_identity
from airhttp.oauth_config import AuthConfig
from airhttp.oauth_verify import AuthRefusedError, TokenVerifier
from airhttp.types import Answer, ASGIApp, FastHandler, Message, Receive, Scope, Send

__all__ = ["OAuthGuard"]

_WELL_KNOWN = "/.well-known/oauth-protected-resource"
_JSON = (b"content-type", b"application/json")


def _quote(value: str) -> str:
    return value.replace("\\", "\\\\").replace('"', '\\"')


class OAuthGuard:
    """Wrap ``app`` as an OAuth 2.1 protected resource (see the module docstring).

    Args:
        app: the ASGI app (the MCP endpoint, the gateway).
        verifier: checks tokens for the configuration.
        static_token: also admit this bearer token (``auth="token"``), or ``None``.
        static_clients: also admit these bearer tokens (``auth="token"``), each with the client
            id it maps to.
        tool_scopes: more scopes a named tool needs, decided by the app (the gateway: its
            upstream's ``scopes:``), checked on every OAuth ``tools/call``.
        tools_scoped: whether ``tool_scopes`` may name any scope now, asked per request (the
            gateway: a reload may add a server's ``scopes:``); while it says no, and the
            configuration names no tool globs, a body is not parsed for its tool. ``None``:
            always.
        more_scopes: more scopes listed in the metadata's ``scopes_supported``.
    """

    def __init__(
        self,
        app: ASGIApp,
        verifier: TokenVerifier,
        *,
        static_token: str | None = None,
        static_clients: Mapping[str, str] | None = None,
        tool_scopes: Callable[[str], frozenset[str]] | None = None,
        tools_scoped: Callable[[], bool] | None = None,
        more_scopes: frozenset[str] = frozenset(),
    ) -> None:
        self.app = app
        self.verifier = verifier
        self.config: AuthConfig = verifier.config
        self.tool_scopes = tool_scopes
        """More scopes a named tool needs, decided by the app (the gateway: its upstream's)."""
        self.tools_scoped = tools_scoped
        self._tool_globs = bool(self.config.tools)
        self.static_token = static_token
        statics = dict(static_clients or {})
        if static_token is not None:
            statics[static_token] = "token"
        self._statics = tuple((token.encode(), client) for token, client in statics.items())
        parts = urlsplit(self.config.resource)
        self.metadata_url = f"{parts.scheme}://{parts.netloc}{self.config.metadata_path}"
        metadata = self.config.metadata()
        if more_scopes:
            metadata["scopes_supported"] = sorted({*metadata["scopes_supported"], *more_scopes})
        self._metadata = orjson.dumps(metadata)
        self._paths = {_WELL_KNOWN, self.config.metadata_path}
        self.refused = 0

    # ---- the ASGI app -----------------------------------------------------------------------
    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        if scope["path"] in self._paths:
            await self._serve_metadata(scope, send)
            return
        try:
            identity = await self._admit(scope)
        except AuthRefusedError as refused:
            await self._refuse(send, refused)
            return
        if identity.auth == "oauth" and scope["method"] == "POST" and self._checks_tools():
            body, receive = await _buffered(receive)
            failure = self._tool_failure(identity, body)
            if failure is not None:
                await self._refuse(send, failure)
                return
        token = use_identity(identity)
        try:
            await self.app(scope, receive, send)
        finally:
            token.var.reset(token)

    async def _admit(self, scope: Scope) -> Identity:
        query = scope.get("query_string") or b""
        if query and any(  # decoded: access%5Ftoken is the same parameter
            k == "access_token" for k, _ in parse_qsl(query.decode("latin-1"))
        ):
            raise AuthRefusedError(
                400,
                "invalid_request",
                "access tokens are accepted in the Authorization header only",
            )
        given = [v for k, v in scope["headers"] if k == b"authorization"]
        if len(given) > 1:  # RFC 6750 §2: one token, one decision
            raise AuthRefusedError(
                400, "invalid_request", "a request carries one Authorization header at most"
            )
        token = bearer_token(given[0].decode("latin-1") if given else None)
        if token is None:
            raise AuthRefusedError(401, "", "an access token is required")
        static = self._static(token)
        if static is not None:
            return static
        identity = await self.verifier.verify(token)
        missing = self.config.scopes - identity.scopes
        if missing:
            raise AuthRefusedError(
                403,
                "insufficient_scope",
                "the token lacks the scope this server requires",
                " ".join(sorted(self.config.scopes)),
            )
        return identity

    def _static(self, token: str) -> Identity | None:
        """The identity a static token admits, or ``None`` (each compared in constant time)."""
        given = token.encode()
        found = None
        for known, client in self._statics:
            if hmac.compare_digest(given, known) and found is None:
                found = Identity(auth="token", client_id=client)
        return found

    def _checks_tools(self) -> bool:
        """Whether an OAuth ``tools/call`` body is read for its tool's scopes now: always when
        the configuration names tool globs, else while ``tool_scopes`` may name some (asked
        per request: a reload may add scopes, and must be noticed at once)."""
        if self._tool_globs:
            return True
        if self.tool_scopes is None:
            return False
        return self.tools_scoped is None or self.tools_scoped()

    def _tool_failure(self, identity: Identity, body: bytes) -> AuthRefusedError | None:
        name = _called_tool(body)
        if name is None:
            return None
        extra = () if self.tool_scopes is None else self.tool_scopes(name)
        missing = identity.missing_for(name, extra)
        if not missing:
            return None
        need = sorted(identity.scopes.intersection(self.config.scopes) | missing)
        return AuthRefusedError(
            403,
            "insufficient_scope",
            f"calling {name!r} needs the scope(s) {' '.join(sorted(missing))}",
            " ".join(need),
        )

    async def _serve_metadata(self, scope: Scope, send: Send) -> None:
        if scope["method"] not in ("GET", "HEAD"):
            await _reply(send, 405, b"", [(b"allow", b"GET")])
            return
        await _reply(send, 200, self._metadata, [_JSON, (b"cache-control", b"public, max-age=300")])

    def challenge(self, failure: AuthRefusedError) -> bytes:
        """The ``WWW-Authenticate`` value for ``failure`` (RFC 6750 §3, RFC 9728 §5.1)."""
        parts = [f'resource_metadata="{self.metadata_url}"']
        if failure.error and failure.error != "temporarily_unavailable":
            parts.append(f'error="{failure.error}"')
            parts.append(f'error_description="{_quote(failure.description[:300])}"')
        scope = failure.scope or " ".join(sorted(self.config.scopes))
        if scope:
            parts.append(f'scope="{_quote(scope)}"')
        return ("Bearer " + ", ".join(parts)).encode("latin-1", "replace")

    async def _refuse(self, send: Send, failure: AuthRefusedError) -> None:
        self.refused += 1
        body = orjson.dumps(
            {
                "jsonrpc": "2.0",
                "id": None,
                "error": {"code": -32600, "message": failure.description},
            }
        )
        headers = [_JSON]
        if failure.status in (401, 403):
            headers.append((b"www-authenticate", self.challenge(failure)))
        if failure.status == 503:
            headers.append((b"retry-after", b"5"))
        await _reply(send, failure.status, body, headers)

    # ---- the server's raw-request hook ------------------------------------------------------
    def guard_fast(self, handler: FastHandler) -> FastHandler:
        """``handler`` behind this guard, for :class:`~airhttp.HttpServer`'s ``fast`` hook: only
        a request whose token was verified before (cached) and that holds the scopes goes the
        fast way, with its identity current; every other one is left to the ASGI path, which
        verifies or refuses it."""

        def guarded(scope: Scope, body: bytes) -> Coroutine[Any, Any, Answer] | None:
            if scope["path"] in self._paths or scope.get("query_string"):
                return None  # the ASGI path answers metadata and judges query strings
            given = [v for k, v in scope["headers"] if k == b"authorization"]
            if len(given) != 1:
                return None  # none, or more than one: the ASGI path refuses it
            header = given[0].decode("latin-1")
            identity = None
            if self._statics:
                token = bearer_token(header)
                if token is None:
                    return None
                identity = self._static(token)
            if identity is None:
                # the cache holds tokens bearer_token gave (the ASGI path's): one equal to
                # this candidate is a well-formed token, not checked again on every request
                candidate = bearer_candidate(header)
                identity = None if candidate is None else self.verifier.cached(candidate)
                if identity is None or not self.config.scopes <= identity.scopes:
                    return None  # (the ASGI path names the scopes missing)
                if self._checks_tools() and self._tool_failure(identity, body) is not None:
                    return None
            token_var = use_identity(identity)
            try:  # the handler may read the identity while it decides
                answer = handler(scope, body)
            finally:
                token_var.var.reset(token_var)
            return None if answer is None else _with_identity(answer, identity)

        return guarded


async def _with_identity(answer: Coroutine[Any, Any, Answer], identity: Identity) -> Answer:
    token = use_identity(identity)
    try:
        return await answer
    finally:
        token.var.reset(token)


def _called_tool(body: bytes) -> str | None:
    """The tool a ``tools/call`` body names (``None`` for anything else or no JSON). The body
    is parsed whole, never searched for bytes: JSON may spell ``tools/call`` with escapes.
    The MCP layer checks the scopes of the tool it runs too."""
    try:
        message = orjson.loads(body)
    except orjson.JSONDecodeError:
        return None
    if not isinstance(message, dict) or message.get("method") != "tools/call":
        return None
    params = message.get("params")
    name = params.get("name") if isinstance(params, dict) else None
    return name if isinstance(name, str) else None


async def _buffered(receive: Receive) -> tuple[bytes, Receive]:
    """Read the whole body (the outer guard bounds it) and a ``receive`` that replays it."""
    chunks = bytearray()
    first: Message | None = None
    while True:
        message = await receive()
        if message["type"] != "http.request":
            first = message
            break
        chunks += message.get("body", b"")
        if not message.get("more_body"):
            break
    body = bytes(chunks)
    sent = False

    async def replay() -> Message:
        nonlocal sent
        if not sent:
            sent = True
            if first is not None:
                return first
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()

    return body, replay


async def _reply(send: Send, status: int, body: bytes, headers: list[tuple[bytes, bytes]]) -> None:
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [*headers, (b"content-length", str(len(body)).encode())],
        }
    )
    await send({"type": "http.response.body", "body": body})
