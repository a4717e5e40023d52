"""HTTP request guards: ``Origin`` and ``Host`` checks (DNS-rebinding protection)."""

from __future__ import annotations

from collections.abc import Collection
from urllib.parse import urlsplit

__all__ = ["LOCAL_HOSTS", "host_ok", "origin_ok"]

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
