"""Access-token validation for an OAuth 2.1 resource server (the MCP authorization spec).

- JWT access tokens (RFC 9068) are verified with ``joserfc`` (a maintained JOSE library: no
  crypto here) against the issuer's JWKS, found through its metadata (RFC 8414, then OpenID
  discovery). Keys are cached; a ``kid`` not in the cache refreshes them, at most once per
  ``jwks_min_refresh_s`` (so 10,000 tokens with a made-up ``kid`` cost one fetch), which is how
  rotation is honoured. Only RS256, PS256, ES256 and EdDSA are accepted (never ``none``, never
  an HMAC a public key could sign). ``iss``, ``exp``, ``nbf`` are checked with a leeway, and
  ``aud`` must name this server's canonical URI (RFC 8707), which stops token passthrough. The
  header must say ``typ: at+jwt`` (RFC 9068 §4: an ID token is not an access token) unless the
  configuration's ``require_at_jwt`` is false.
- Opaque tokens are checked by introspection (RFC 7662) when configured.
- A verified token is cached by its SHA-256, bounded in number, for no longer than its ``exp``
  and ``cache_max_s``: a token revoked at the issuer stays usable here until then.
- Fail closed: keys that cannot be fetched refuse the request (503), never admit it.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import hashlib
import logging
import time
import warnings
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Mapping
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import orjson

from airhttp.errors import AirhttpError
from airhttp.identity import Identity
from airhttp.oauth_config import AuthConfig, checked_url

__all__ = ["MAX_TOKEN_BYTES", "AuthRefusedError", "Fetch", "TokenVerifier"]

logger = logging.getLogger(__name__)

MAX_TOKEN_BYTES = 16 * 1024
"""A longer bearer token is refused before any parsing."""
_ACCESS_TOKEN_TYPES = frozenset({"at+jwt", "application/at+jwt"})
"""RFC 9068 §2.1 (media types compare case-insensitively, RFC 7515 §4.1.9)."""
MAX_DOCUMENT_BYTES = 1024 * 1024
"""The largest metadata, JWKS or introspection answer read."""

Fetch = Callable[[str, str, Mapping[str, str], bytes | None], Awaitable[tuple[int, bytes]]]
"""``(method, url, headers, body) -> (status, body)``: how the verifier talks HTTP."""


class AuthRefusedError(AirhttpError):
    """A request the resource server refuses, as its HTTP answer.

    Attributes:
        status: 401 (no or bad token), 403 (insufficient scope), 400 (a token in the query),
            503 (the issuer's keys cannot be had: fail closed).
        error: the RFC 6750 error code (``invalid_token``, ``insufficient_scope``,
            ``invalid_request``) or ``temporarily_unavailable``; ``""`` for a missing token.
        scope: the scopes the request needs (for ``insufficient_scope``).
    """

    def __init__(self, status: int, error: str, description: str, scope: str = "") -> None:
        super().__init__(description)
        self.status = status
        self.error = error
        self.description = description
        self.scope = scope


def _invalid(description: str) -> AuthRefusedError:
    return AuthRefusedError(401, "invalid_token", description)


def _b64json(segment: str) -> dict[str, Any]:
    padded = segment + "=" * (-len(segment) % 4)
    try:
        value = orjson.loads(base64.urlsafe_b64decode(padded.encode("ascii")))
    except (ValueError, binascii.Error, UnicodeEncodeError) as exc:
        raise _invalid("the token is not a well-formed JWT") from exc
    if not isinstance(value, dict):
        raise _invalid("the token is not a well-formed JWT")
    return value


class _AiohttpFetch:
    """The default :data:`Fetch`: one aiohttp session, opened on first use."""

    def __init__(self, timeout: float) -> None:
        self.timeout = timeout
        self.session: Any = None

    async def __call__(
        self, method: str, url: str, headers: Mapping[str, str], body: bytes | None
    ) -> tuple[int, bytes]:
        import aiohttp  # imported on the first fetch only (start-up stays lean)

        if self.session is None:
            self.session = aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=self.timeout))
        async with self.session.request(
            method, url, headers=dict(headers), data=body, allow_redirects=False
        ) as response:
            data = bytearray()
            async for chunk in response.content.iter_chunked(64 * 1024):  # to its end
                data += chunk
                if len(data) > MAX_DOCUMENT_BYTES:
                    raise ValueError(f"{url} answered more than {MAX_DOCUMENT_BYTES} bytes")
            return int(response.status), bytes(data)

    async def close(self) -> None:
        if self.session is not None:
            await self.session.close()
            self.session = None


def _well_known(issuer: str, name: str) -> str:
    """RFC 8414 §3.1: the well-known segment goes between the host and the issuer's path."""
    parts = urlsplit(issuer)
    path = parts.path.rstrip("/")
    return urlunsplit((parts.scheme, parts.netloc, f"/.well-known/{name}{path}", "", ""))


class _IssuerKeys:
    """One issuer's JWKS: discovered, cached, refreshed on an unknown ``kid`` (rate-limited)."""

    def __init__(self, issuer: str, jwks_uri: str | None, config: AuthConfig) -> None:
        self.issuer = issuer
        self.jwks_uri = jwks_uri
        self.config = config
        self.keys: Any = None  # a joserfc KeySet
        self.kids: frozenset[str] = frozenset()
        self.last_try = float("-inf")
        self.fetched_at = float("-inf")
        self.fetches = 0
        self._lock = asyncio.Lock()

    def _fresh(self, kid: str | None) -> bool:
        """The cached keys serve ``kid`` and are younger than ``jwks_max_age_s`` (a key the
        issuer removed stops being trusted within that age)."""
        return (
            self.keys is not None
            and (kid is None or kid in self.kids)
            and time.monotonic() - self.fetched_at < self.config.jwks_max_age_s
        )

    async def key_set(self, kid: str | None, fetch: Fetch) -> Any:
        if self._fresh(kid):
            return self.keys
        async with self._lock:  # one refresh at a time; the others wait for its result
            if self._fresh(kid):
                return self.keys
            if time.monotonic() - self.last_try >= self.config.jwks_min_refresh_s:
                await self._refresh(fetch)
        if self.keys is None:
            raise AuthRefusedError(
                503,
                "temporarily_unavailable",
                f"the keys of issuer {self.issuer} cannot be fetched; refusing until they can",
            )
        if kid is not None and kid not in self.kids:
            raise _invalid(f"the token is signed by a key ({kid!r}) issuer {self.issuer} lacks")
        return self.keys

    async def _refresh(self, fetch: Fetch) -> None:
        from joserfc.jwk import KeySet

        self.last_try = time.monotonic()
        self.fetches += 1
        try:
            if self.jwks_uri is None:
                self.jwks_uri = await self._discover(fetch)
            status, body = await fetch("GET", self.jwks_uri, {"accept": "application/json"}, None)
            if status != 200:
                raise ValueError(f"{self.jwks_uri} answered {status}")
            doc = orjson.loads(body)
            keys = KeySet.import_key_set(doc)
        except Exception as exc:
            logger.warning(
                "authorization: the keys of issuer %s could not be fetched (%s: %s); %s",
                self.issuer,
                type(exc).__name__,
                str(exc)[:200],
                "keeping the previous keys" if self.keys is not None else "refusing requests",
            )
            return
        self.keys = keys
        self.fetched_at = time.monotonic()
        self.kids = frozenset(str(k.kid) for k in keys.keys if k.kid is not None)

    async def _discover(self, fetch: Fetch) -> str:
        for name in ("oauth-authorization-server", "openid-configuration"):
            for url in (
                _well_known(self.issuer, name),
                self.issuer.rstrip("/") + f"/.well-known/{name}",
            ):
                try:
                    status, body = await fetch("GET", url, {"accept": "application/json"}, None)
                except Exception:
                    continue
                if status != 200:
                    continue
                try:
                    doc = orjson.loads(body)
                except orjson.JSONDecodeError:
                    continue  # an HTML page at a well-known path: try the next place
                if not isinstance(doc, dict):
                    continue
                if doc.get("issuer") != self.issuer:
                    raise ValueError(
                        f"{url} names issuer {doc.get('issuer')!r}, not {self.issuer!r}"
                    )
                jwks = doc.get("jwks_uri")
                if isinstance(jwks, str):
                    jwks = checked_url(jwks, "jwks_uri")  # https, as the issuer: no http keys
                if not isinstance(jwks, str):
                    raise ValueError(f"{url} names no jwks_uri")
                return jwks
        raise ValueError(f"no authorization server metadata found for {self.issuer}")


class TokenVerifier:
    """Checks bearer tokens for one resource server configuration.

    Args:
        config: the checked configuration.
        fetch: how to talk HTTP to the issuer (default: aiohttp, created on first use).
        clock: seconds since the epoch (for ``exp``/``nbf`` and the cache).
    """

    def __init__(
        self,
        config: AuthConfig,
        *,
        fetch: Fetch | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.config = config
        self._fetch = fetch
        self._own_fetch: _AiohttpFetch | None = None
        self._clock = clock
        self._issuers = {i: _IssuerKeys(i, config.jwks_uri, config) for i in config.issuers}
        self._cache: OrderedDict[bytes, tuple[float, Identity]] = OrderedDict()

    @property
    def jwks_fetches(self) -> int:
        """JWKS fetches (and discovery) attempted so far, over every issuer."""
        return sum(keys.fetches for keys in self._issuers.values())

    async def close(self) -> None:
        """Close the HTTP session (if this verifier opened one)."""
        if self._own_fetch is not None:
            await self._own_fetch.close()

    async def _fetcher(self) -> Fetch:
        if self._fetch is None:
            self._own_fetch = _AiohttpFetch(self.config.timeout_s)
            self._fetch = self._own_fetch
        return self._fetch

    def cached(self, token: str) -> Identity | None:
        """The identity of a token verified before and still trusted, else ``None`` (no I/O)."""
        entry = self._cache.get(hashlib.sha256(token.encode()).digest())
        if entry is None or entry[0] <= self._clock():
            return None
        return entry[1]

    async def verify(self, token: str) -> Identity:
        """The identity ``token`` proves.

        Raises:
            AuthRefusedError: 401 for any token that does not verify, 503 when the issuer's keys
                cannot be had (fail closed).
        """
        if len(token) > MAX_TOKEN_BYTES:
            raise _invalid(f"the token is longer than {MAX_TOKEN_BYTES} bytes")
        key = hashlib.sha256(token.encode()).digest()
        now = self._clock()
        entry = self._cache.get(key)
        if entry is not None and entry[0] > now:
            self._cache.move_to_end(key)
            return entry[1]
        if token.count(".") == 2:
            identity, expires = await self._verify_jwt(token, now)
        elif self.config.introspection is not None:
            identity, expires = await self._introspect(token, now)
        else:
            raise _invalid("the token is not a JWT and no introspection endpoint is configured")
        if self.config.cache_size:
            self._cache[key] = (min(expires, now + self.config.cache_max_s), identity)
            while len(self._cache) > self.config.cache_size:
                self._cache.popitem(last=False)
        return identity

    async def _verify_jwt(self, token: str, now: float) -> tuple[Identity, float]:
        from joserfc import errors, jwt

        head, payload, _sig = token.split(".")
        header = _b64json(head)
        alg = header.get("alg")
        if alg not in self.config.algorithms:
            raise _invalid(f"the token's algorithm {alg!r} is not accepted")
        typ = header.get("typ")
        if self.config.require_at_jwt and (
            not isinstance(typ, str) or typ.lower() not in _ACCESS_TOKEN_TYPES
        ):
            raise _invalid(
                f"the token's typ is {typ!r}, not 'at+jwt' (RFC 9068): not an access token "
                "(require_at_jwt: false accepts issuers that do not set it)"
            )
        issuer = _b64json(payload).get("iss")
        keys = self._issuers.get(issuer) if isinstance(issuer, str) else None
        if keys is None:
            raise _invalid(f"the token's issuer {issuer!r} is not trusted here")
        kid = header.get("kid")
        key_set = await keys.key_set(kid if isinstance(kid, str) else None, await self._fetcher())
        try:
            with warnings.catch_warnings():  # "EdDSA" is deprecated by RFC 9864, still issued
                warnings.simplefilter("ignore", errors.SecurityWarning)
                decoded = jwt.decode(token, key_set, algorithms=list(self.config.algorithms))
            claims = dict(decoded.claims)
            registry = jwt.JWTClaimsRegistry(
                now=int(now),
                leeway=int(self.config.leeway_s),
                iss={"essential": True, "value": str(issuer)},
                exp={"essential": True},
            )
            registry.validate(claims)
        except errors.JoseError as exc:
            raise _invalid(f"the token does not verify: {exc.error}: {exc.description}") from exc
        except (ValueError, TypeError) as exc:
            raise _invalid(f"the token does not verify: {exc}") from exc
        self._check_audience(claims.get("aud"))
        return self._identity(claims), float(claims["exp"])

    def _check_audience(self, aud: object) -> None:
        audiences = [aud] if isinstance(aud, str) else aud if isinstance(aud, list) else []
        if self.config.resource not in audiences:
            raise _invalid(
                f"the token is for another resource ({aud!r}), not {self.config.resource}"
            )

    def _identity(self, claims: Mapping[str, Any]) -> Identity:
        raw_scope = claims.get("scope", claims.get("scp", ""))
        scopes = raw_scope.split() if isinstance(raw_scope, str) else raw_scope
        client = (
            claims.get(self.config.client_claim) or claims.get("azp") or claims.get("client_id")
        )
        subject = claims.get("sub")
        return Identity(
            auth="oauth",
            client_id=client if isinstance(client, str) else None,
            subject=subject if isinstance(subject, str) else None,
            scopes=frozenset(s for s in scopes if isinstance(s, str))
            if isinstance(scopes, list)
            else frozenset(),
            tool_scopes=self.config.tools,
            claims=claims,
        )

    async def _introspect(self, token: str, now: float) -> tuple[Identity, float]:
        spec = self.config.introspection
        assert spec is not None
        basic = base64.b64encode(f"{spec.client_id}:{spec.client_secret}".encode()).decode()
        from urllib.parse import urlencode

        body = urlencode({"token": token, "token_type_hint": "access_token"}).encode()
        try:
            status, answer = await (await self._fetcher())(
                "POST",
                spec.endpoint,
                {
                    "authorization": f"Basic {basic}",
                    "content-type": "application/x-www-form-urlencoded",
                    "accept": "application/json",
                },
                body,
            )
            doc = orjson.loads(answer) if status == 200 else None
        except Exception as exc:
            logger.warning("authorization: introspection at %s failed: %s", spec.endpoint, exc)
            doc = None
        if not isinstance(doc, dict):
            raise AuthRefusedError(
                503, "temporarily_unavailable", "the token introspection endpoint cannot be used"
            )
        if doc.get("active") is not True:
            raise _invalid("the token is not active")
        if "aud" in doc or spec.require_audience:  # no aud: a token for any API of the issuer
            self._check_audience(doc.get("aud"))
        if "iss" in doc and doc["iss"] not in self.config.issuers:
            raise _invalid(f"the token's issuer {doc['iss']!r} is not trusted here")
        exp = doc.get("exp")
        expires = float(exp) if isinstance(exp, int | float) else now + 60.0
        return self._identity(doc), min(expires, now + 60.0)
