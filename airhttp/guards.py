"""HTTP request guards: ``Origin`` and ``Host`` checks (DNS-rebinding protection), the
loopback test for bind addresses and the bearer-token check. Dependency-free: the dashboard
uses them too."""

from __future__ import annotations

import hmac
import ipaddress
from collections.abc import Collection
from urllib.parse import urlsplit

__all__ = ["LOCAL_HOSTS", "bearer_token", "host_ok", "is_loopback", "origin_ok", "token_ok"]

LOCAL_HOSTS = frozenset({"localhost", "127.0.0.1", "::1", "[::1]"})
"""Host names a loopback server answers to."""


def origin_ok(origin: str | None, allowed: Collection[str]) -> bool:
    """Whether a request's ``Origin`` may talk to us: none (not a browser), localhost, or listed
    in ``allowed`` (normalized without a trailing slash; ``"*"`` allows any)."""
    if origin is None:
        return True
    if origin.rstrip("/") in allowed or "*" in allowed:
        return True
    try:
        host = urlsplit(origin).hostname
    except ValueError:
        return False
    return host is not None and host in LOCAL_HOSTS


def host_ok(host: str | None, allowed: Collection[str]) -> bool:
    """Whether a ``Host`` header names this loopback server (or a host listed in ``allowed``,
    lower-case, with or without port)."""
    if host is None:
        return False
    if host.lower() in allowed:
        return True
    try:
        name = urlsplit(f"//{host}").hostname
    except ValueError:
        return False
    return name is not None and (name in LOCAL_HOSTS or name in allowed)


def is_loopback(host: str) -> bool:
    """True for ``localhost`` and loopback IP addresses (not for a name like ``127.example``)."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def bearer_token(header: str | None) -> str | None:
    """The token of an ``Authorization: Bearer <token>`` header (scheme case-insensitive)."""
    scheme, _, given = (header or "").partition(" ")
    return given.strip() if scheme.lower() == "bearer" else None


def token_ok(candidate: str | None, token: str) -> bool:
    """Whether ``candidate`` is ``token``, compared in constant time (``None`` never is)."""
    return candidate is not None and hmac.compare_digest(candidate.encode(), token.encode())
