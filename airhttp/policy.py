"""Who may talk to an HTTP surface: the Host, Origin and bearer-token checks in one record."""

from __future__ import annotations

import functools
from collections.abc import Iterable
from dataclasses import dataclass, field

from airhttp.errors import LimitsError
from airhttp.guards import B64TOKEN, bearer_token, host_ok, origin_ok, token_ok

__all__ = ["AccessPolicy", "Refusal"]


@dataclass(frozen=True, slots=True, kw_only=True)
class Refusal:
    """Why a request is turned away, as an HTTP answer.

    Attributes:
        status: the HTTP status (401, 403, 413, 421, 503…).
        reason: one readable line.
        headers: extra response headers (``WWW-Authenticate``, ``Retry-After``).
    """

    status: int
    reason: str
    headers: tuple[tuple[str, str], ...] = ()


HOST_REFUSAL = Refusal(status=421, reason="Misdirected Request: invalid Host header")
ORIGIN_REFUSAL = Refusal(status=403, reason="Forbidden: invalid Origin")
TOKEN_REFUSAL = Refusal(
    status=401, reason="Unauthorized", headers=(("www-authenticate", "Bearer"),)
)


# the same few Host/Origin values arrive on every request: check each once (bounded caches)
@functools.lru_cache(maxsize=256)
def _host_ok(host: str | None, allowed: frozenset[str]) -> bool:
    return host_ok(host, allowed)


@functools.lru_cache(maxsize=256)
def _origin_ok(origin: str, allowed: frozenset[str]) -> bool:
    return origin_ok(origin, allowed)


def _hosts(values: Iterable[str]) -> frozenset[str]:
    return frozenset(v.strip().lower() for v in values)


@dataclass(frozen=True, slots=True, kw_only=True, init=False)
class AccessPolicy:
    """The Host/Origin/token rules of one HTTP surface.

    Args:
        token: require ``Authorization: Bearer <token>`` (RFC 6750) when set.
        check_host: refuse a ``Host`` that is not localhost or in ``allowed_hosts`` (421);
            on for a loopback bind (DNS-rebinding protection).
        allowed_hosts: extra ``Host`` names (with or without port).
        allowed_origins: extra browser ``Origin`` values besides localhost (``"*"``: any).

    Raises:
        LimitsError: a token that is not an RFC 6750 ``b64token`` (no client could send it).
    """

    token: str | None
    check_host: bool
    allowed_hosts: frozenset[str] = field(default_factory=frozenset)
    allowed_origins: frozenset[str] = field(default_factory=frozenset)

    def __init__(
        self,
        *,
        token: str | None = None,
        check_host: bool = True,
        allowed_hosts: Iterable[str] = (),
        allowed_origins: Iterable[str] = (),
    ) -> None:
        if token is not None and not B64TOKEN.fullmatch(token):
            raise LimitsError(
                "token", token, "a bearer token is letters, digits and -._~+/ (then any '=')"
            )
        object.__setattr__(self, "token", token)
        object.__setattr__(self, "check_host", check_host)
        object.__setattr__(self, "allowed_hosts", _hosts(allowed_hosts))
        # origins compare by exact text (scheme://host:port), normalized without a trailing /
        object.__setattr__(
            self, "allowed_origins", frozenset(o.strip().rstrip("/") for o in allowed_origins)
        )

    def refusal(
        self, *, host: str | None, origin: str | None, authorization: str | None
    ) -> Refusal | None:
        """Check one request's headers; ``None`` when it may proceed.

        Args:
            host: the ``Host`` header (``None`` when absent).
            origin: the ``Origin`` header.
            authorization: the ``Authorization`` header.

        Returns:
            The :class:`Refusal` of the first failed check (Host, then Origin, then token).
        """
        if self.check_host and not _host_ok(host, self.allowed_hosts):
            return HOST_REFUSAL
        if origin is not None and not _origin_ok(origin, self.allowed_origins):
            return ORIGIN_REFUSAL
        if self.token is not None and not token_ok(bearer_token(authorization), self.token):
            return TOKEN_REFUSAL
        return None
