"""The gateway's own credentials for an upstream: an OAuth client-credentials token.

The MCP authorization spec forbids passing a client's token on (it was minted for the gateway,
``aud`` = the gateway); an upstream that is itself a resource server gets a token the gateway
asks for in its own name (RFC 6749 §4.4), for the upstream's resource (RFC 8707). The token is
kept until ``refresh_ahead_s`` before it expires (at most half its lifetime): from then on the
next request starts one refresh in the background and goes on with the current token, so
callers wait for the token endpoint only when there is no valid token at all. An upstream
answering 401 makes the gateway drop the token and fetch a new one, once per request.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Mapping
from typing import Any
from urllib.parse import urlencode, urlsplit, urlunsplit

import orjson

from airgateway.config import UpstreamOAuth
from airgateway.errors import UpstreamUnavailableError
from airhttp.guards import bearer_token

__all__ = ["DEFAULT_EXPIRES_IN_S", "ClientCredentials", "TokenFetch"]

logger = logging.getLogger(__name__)

DEFAULT_EXPIRES_IN_S = 300.0
"""The lifetime assumed for a token answer without ``expires_in``."""
MAX_ANSWER_BYTES = 256 * 1024
"""The largest token or metadata answer read."""
TOKEN_TIMEOUT_S = 10.0

TokenFetch = Callable[[str, str, Mapping[str, str], bytes | None], Awaitable[tuple[int, bytes]]]
"""``(method, url, headers, body) -> (status, body)``."""


class _AiohttpFetch:
    """One aiohttp session, opened on first use (aiohttp loads only then)."""

    def __init__(self) -> None:
        self.session: Any = None

    async def __call__(
        self, method: str, url: str, headers: Mapping[str, str], body: bytes | None
    ) -> tuple[int, bytes]:
        import aiohttp

        if self.session is None:
            self.session = aiohttp.ClientSession(
                timeout=aiohttp.ClientTimeout(total=TOKEN_TIMEOUT_S)
            )
        async with self.session.request(
            method, url, headers=dict(headers), data=body, allow_redirects=False
        ) as response:
            data = bytearray()
            async for chunk in response.content.iter_chunked(64 * 1024):
                data += chunk
                if len(data) > MAX_ANSWER_BYTES:
                    raise ValueError(f"{url} answered more than {MAX_ANSWER_BYTES} bytes")
            return int(response.status), bytes(data)

    async def close(self) -> None:
        if self.session is not None:
            await self.session.close()
            self.session = None


def _well_known(issuer: str, name: str) -> list[str]:
    parts = urlsplit(issuer)
    path = parts.path.rstrip("/")
    return [
        urlunsplit((parts.scheme, parts.netloc, f"/.well-known/{name}{path}", "", "")),
        issuer.rstrip("/") + f"/.well-known/{name}",
    ]


class ClientCredentials:
    """Tokens for one upstream (see the module docstring).

    Args:
        config: the upstream's ``oauth:`` section.
        label: names the upstream in errors and logs.
        fetch: how to talk HTTP (default: aiohttp, opened on first use).
        clock: monotonic seconds.
    """

    def __init__(
        self,
        config: UpstreamOAuth,
        *,
        label: str,
        fetch: TokenFetch | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.config = config
        self.label = label
        self._own = _AiohttpFetch() if fetch is None else None
        self._fetch: TokenFetch = fetch if fetch is not None else self._own  # type: ignore[assignment]
        self._clock = clock
        self._endpoint = config.token_endpoint
        self._header: str | None = None
        """``"Bearer <token>"``, made once per token."""
        self._expires = float("-inf")
        self._renew_at = float("-inf")
        self._lock = asyncio.Lock()
        self._refresh: asyncio.Task[None] | None = None
        self.fetches = 0
        """Token requests made so far."""

    async def header(self) -> str:
        """The ``Authorization`` header value for the next upstream request.

        Raises:
            UpstreamUnavailableError: no token could be had (``sent=False``: nothing reached the
                upstream).
        """
        current = self.current()
        if current is not None:
            return current
        async with self._lock:  # one fetch; the other callers take its token
            if self._header is None or self._clock() >= self._expires:
                await self._renew()
            assert self._header is not None
            return self._header

    def current(self) -> str | None:
        """:meth:`header` without waiting: the value while the token is valid (starting the
        refresh in the background once it is due), else ``None`` (then await :meth:`header`).
        The upstream hot path asks this first: no coroutine per request."""
        header = self._header
        if header is None:
            return None
        now = self._clock()
        if now >= self._expires:
            return None
        if now >= self._renew_at and self._refresh is None:
            self._refresh = asyncio.ensure_future(self._renew_in_background())
        return header

    def refused(self, header: str) -> None:
        """The upstream answered 401 to ``header``: that token is not used again."""
        if self._header is not None and header == self._header:
            self._header = None
            self._expires = float("-inf")

    async def close(self) -> None:
        """Stop a background refresh and close the HTTP session. Idempotent."""
        if self._refresh is not None:
            self._refresh.cancel()
            await asyncio.gather(self._refresh, return_exceptions=True)
            self._refresh = None
        if self._own is not None:
            await self._own.close()

    async def _renew_in_background(self) -> None:
        try:
            async with self._lock:
                if self._clock() >= self._renew_at:
                    await self._renew()
        except UpstreamUnavailableError as exc:
            logger.warning("%s: could not refresh its token ahead of expiry: %s", self.label, exc)
        finally:
            self._refresh = None

    async def _renew(self) -> None:
        self.fetches += 1
        try:
            endpoint = self._endpoint or await self._discover()
            self._endpoint = endpoint
            form = {"grant_type": "client_credentials"}
            if self.config.scope:
                form["scope"] = self.config.scope
            if self.config.resource:
                form["resource"] = self.config.resource
            import base64
            from urllib.parse import quote

            basic = base64.b64encode(
                f"{quote(self.config.client_id, safe='')}:"
                f"{quote(self.config.client_secret, safe='')}".encode()
            ).decode()
            status, body = await self._fetch(
                "POST",
                endpoint,
                {
                    "authorization": f"Basic {basic}",
                    "content-type": "application/x-www-form-urlencoded",
                    "accept": "application/json",
                },
                urlencode(form).encode(),
            )
            doc = orjson.loads(body) if body else None
            if status != 200 or not isinstance(doc, dict):
                error = doc.get("error") if isinstance(doc, dict) else None
                raise ValueError(f"the token endpoint answered HTTP {status} ({error or '-'})")
            token = doc.get("access_token")
            if not isinstance(token, str) or not token:
                raise ValueError("the token endpoint answered no access_token")
            if bearer_token("Bearer " + token) != token:  # it goes into a header line upstream
                raise ValueError(
                    "the token endpoint answered an access_token that is not a bearer token "
                    "(RFC 6750 b64token: letters, digits and -._~+/ then = padding)"
                )
            expires_in = doc.get("expires_in", DEFAULT_EXPIRES_IN_S)
            if isinstance(expires_in, bool) or not isinstance(expires_in, int | float):
                expires_in = DEFAULT_EXPIRES_IN_S
        except (OSError, ValueError, TimeoutError) as exc:
            raise UpstreamUnavailableError(
                f"{self.label}: no token from its authorization server: {exc}",
                replica=self.label,
                sent=False,
            ) from exc
        except Exception as exc:  # aiohttp's errors, a bad URL: the same for the caller
            raise UpstreamUnavailableError(
                f"{self.label}: no token from its authorization server: "
                f"{type(exc).__name__}: {exc}",
                replica=self.label,
                sent=False,
            ) from exc
        now = self._clock()
        lifetime = max(float(expires_in), 1.0)
        self._header = "Bearer " + token
        self._expires = now + lifetime
        self._renew_at = now + lifetime - min(self.config.refresh_ahead_s, lifetime / 2)

    async def _discover(self) -> str:
        issuer = self.config.issuer
        assert issuer is not None
        for name in ("oauth-authorization-server", "openid-configuration"):
            for url in _well_known(issuer, name):
                try:
                    status, body = await self._fetch("GET", url, {"accept": "application/json"},
                                                     None)  # fmt: skip
                    doc = orjson.loads(body) if status == 200 else None
                except (OSError, ValueError):
                    continue
                if not isinstance(doc, dict) or doc.get("issuer") != issuer:
                    continue
                endpoint = doc.get("token_endpoint")
                if isinstance(endpoint, str):
                    from airhttp.oauth_config import checked_url

                    return checked_url(endpoint, "token_endpoint")
        raise ValueError(f"no authorization server metadata with a token_endpoint for {issuer}")
