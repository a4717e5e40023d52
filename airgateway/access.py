"""Access at the gateway: which client a bearer token names, what it may call, how often.

Annotations are hints, not authorization (seed 002): the gateway enforces access itself.
Without a ``clients:`` section, the gateway's own ``--token`` (if any) admits everyone; with
one, each token names a client whose ``allow`` globs (``fnmatch``) say which tools and
prompts it may use. Rate limits (per client, and per tool glob) count in fixed one-second
windows in the store, so they hold across gateway processes sharing a ``redis://`` store;
a store without an atomic ``incr`` counts in this process only.

With ``auth:`` the gateway is an OAuth 2.1 resource server (:mod:`airgateway.serve`): an OAuth
caller is the first client whose ``match:`` its verified token fits (``client_id``, ``sub``, a
``scope`` it holds, a value of the group claim; ``match: {}`` fits every caller), so that
entry's allow list and rate limit apply. When ``clients:`` is given, an OAuth caller no entry
matches is refused (403), as a static token naming no client is (401). Static client tokens keep
working beside OAuth.
"""

from __future__ import annotations

import fnmatch
import logging
import math
import time
from collections.abc import Mapping, Sequence
from typing import Any

from airgateway.config import ClientConfig
from airgateway.errors import AccessDeniedError, RateLimitedError
from airgateway.types import Counter
from airhttp.guards import token_ok
from airhttp.identity import Identity
from airstore.errors import AirstoreError
from airstore.types import Store

__all__ = ["RATES_NAMESPACE", "Access", "Unauthorized", "Unmatched"]

logger = logging.getLogger(__name__)

RATES_NAMESPACE = "gateway.rates"
_MAX_VISIBLE = 1024
"""Filtered lists cached at most (clients x list kinds; a changed index makes new ones)."""


class Unauthorized(Exception):  # noqa: N818 - a sentinel the endpoint answers 401 for
    """The request's bearer token admits no client."""


class Unmatched(Exception):  # noqa: N818 - a sentinel the endpoint answers 403 for
    """An OAuth caller whose token fits no ``clients:`` entry's ``match:``."""


def _fits(identity: Identity, claim: str, value: str) -> bool:
    if claim == "client_id":
        return identity.client_id == value
    if claim == "sub":
        return identity.subject == value
    if claim == "scope":
        return value in identity.scopes
    held = identity.claims.get(claim)
    if isinstance(held, list | tuple):
        return any(isinstance(item, str | int) and str(item) == value for item in held)
    return isinstance(held, str | int) and not isinstance(held, bool) and str(held) == value


class _LocalCounter:
    """Counts in this process (a store without ``incr``)."""

    def __init__(self) -> None:
        self._counts: dict[str, tuple[float, int]] = {}

    async def incr(self, ns: str, key: str, by: int = 1, ttl: float | None = None) -> int:
        now = time.monotonic()
        full = f"{ns}\0{key}"
        expires, count = self._counts.get(full, (0.0, 0))
        if expires <= now:
            count = 0
        count += by
        self._counts[full] = (now + (ttl or 60.0), count)
        if len(self._counts) > 10_000:
            self._counts = {k: v for k, v in self._counts.items() if v[0] > now}
        return count


class Access:
    """Admits requests (see the module docstring).

    Args:
        clients: the configured clients.
        per_tool: tool glob -> calls per second (all clients together).
        token: the gateway's ``--token``.
        store: where rate counters live.
    """

    def __init__(
        self,
        clients: Sequence[ClientConfig],
        per_tool: Mapping[str, float],
        *,
        token: str | None,
        store: Store,
    ) -> None:
        self.clients = tuple(clients)
        self.per_tool = dict(per_tool)
        self.token = token
        self._visible: dict[tuple[str, int], tuple[list[dict[str, Any]], list[dict[str, Any]]]]
        self._visible = {}
        """(client, id of a listed list) -> (that list, what the client sees of it)."""
        self._counter: Counter
        if isinstance(store, Counter):
            self._counter = store
        else:
            logger.info("the store has no incr(): rate limits count in this process only")
            self._counter = _LocalCounter()

    @property
    def guarded(self) -> bool:
        """Whether requests need a bearer token at all."""
        return bool(self.clients) or self.token is not None

    def identify(self, given: str | None, identity: Identity | None = None) -> ClientConfig | None:
        """The client a bearer token names, or (an OAuth caller, ``identity``) the first client
        whose ``match:`` its claims fit; ``None``: the anonymous client.

        Raises:
            Unauthorized: a token is required and this one admits no client.
            Unmatched: an OAuth caller no ``clients:`` entry matches.
        """
        if identity is not None and identity.auth == "oauth":
            if not self.clients:
                return None
            for client in self.clients:
                if client.match is not None and all(
                    _fits(identity, claim, value) for claim, value in client.match.items()
                ):
                    return client
            raise Unmatched
        if self.clients:
            for client in self.clients:
                if client.token is not None and token_ok(given, client.token):
                    return client
            if self.token is not None and token_ok(given, self.token):
                return None
            raise Unauthorized
        if self.token is not None and not token_ok(given, self.token):
            raise Unauthorized
        return None

    def allows(self, client: ClientConfig | None, name: str) -> bool:
        """Whether the client's allow list matches ``name`` (the anonymous client: always)."""
        return client is None or any(fnmatch.fnmatchcase(name, glob) for glob in client.allow)

    def visible(
        self, client: ClientConfig | None, items: list[dict[str, Any]]
    ) -> list[dict[str, Any]]:
        """The listed tools or prompts ``client`` may use, in order (what ``tools/list`` and
        ``prompts/list`` show it). Cached per client until the index hands out a new list."""
        if client is None:
            return items
        key = (client.name, id(items))
        cached = self._visible.get(key)
        if cached is not None and cached[0] is items:
            return cached[1]
        shown = [item for item in items if self.allows(client, str(item.get("name")))]
        if len(self._visible) >= _MAX_VISIBLE:
            self._visible.clear()
        self._visible[key] = (items, shown)
        return shown

    def check(self, client: ClientConfig | None, name: str) -> None:
        """Refuse a tool or prompt the client's allow list does not match.

        Raises:
            AccessDeniedError: no glob of the client's allow list matches ``name``.
        """
        if not self.allows(client, name):
            assert client is not None
            raise AccessDeniedError(
                f"client {client.name!r} may not use {name!r}", client=client.name, name=name
            )

    async def admit(self, client: ClientConfig | None, tool: str) -> None:
        """Count one call against the client's and the tool's rate limits.

        Raises:
            RateLimitedError: a limit is exceeded in this window.
        """
        if client is not None and client.rate_per_s is not None:
            await self._take(f"client:{client.name}", client.rate_per_s)
        for glob, rate in self.per_tool.items():
            if fnmatch.fnmatchcase(tool, glob):
                await self._take(f"tool:{glob}", rate)

    async def _take(self, scope: str, rate: float) -> None:
        window = max(1.0, 1.0 / rate)
        allowed = max(1, math.floor(rate * window))
        slot = int(time.time() // window)
        try:
            count = await self._counter.incr(RATES_NAMESPACE, f"{scope}:{slot}", 1, window * 2)
        except AirstoreError as exc:  # the store is down: admit rather than fail every call
            logger.warning("rate limit %s not counted: %s", scope, exc)
            return
        if count > allowed:
            raise RateLimitedError(
                f"rate limit of {rate:g}/s for {scope} exceeded; retry later",
                scope=scope,
                limit=rate,
            )
