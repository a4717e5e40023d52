"""HTTP request guards: ``Origin`` and ``Host`` checks (DNS-rebinding protection), the
loopback test for bind addresses and RFC 6750 bearer tokens. Pure functions on header values;
:class:`~airhttp.policy.AccessPolicy` combines them."""

from __future__ import annotations

import hmac
import ipaddress
import re
from collections.abc import Collection
from urllib.parse import urlsplit

__all__ = [
    "LOCAL_HOSTS",
    "bearer_candidate",
    "bearer_token",
    "host_ok",
    "http_url_problem",
    "is_loopback",
    "origin_ok",
    "token_ok",
]

LOCAL_HOSTS = frozenset({"localhost", "127.0.0.1", "::1", "[::1]"})
"""Host names a loopback server answers to."""

# RFC 6750 §2.1: credentials = "Bearer" 1*SP b64token; the scheme is case-insensitive (RFC 9110)
B64TOKEN = re.compile(r"[A-Za-z0-9\-._~+/]+=*", re.ASCII)
_B64TOKEN_BYTES = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~+/"
"""The syntax of a bearer token (RFC 6750 ``b64token``)."""


def http_url_problem(url: str) -> str | None:
    """Why ``url`` cannot name an HTTP server to talk to, as the end of a sentence that names
    it (``"is not an http:// or https:// URL"``, ``"is not a URL (…)"``, ``"has a port that is
    not 0-65535"``, ``"names no host"``); ``None`` when it can."""
    try:
        parts = urlsplit(url)
    except ValueError as exc:  # "Invalid IPv6 URL"
        return f"is not a URL ({exc})"
    if parts.scheme.lower() not in ("http", "https") or "://" not in url:
        return "is not an http:// or https:// URL"
    try:
        parts.port  # noqa: B018 -- read for its check: a port that is no port raises
    except ValueError:
        return "has a port that is not 0-65535"
    if not parts.hostname:
        return "names no host"
    return None


def origin_ok(origin: str | None, allowed: Collection[str]) -> bool:
    """Whether a request's ``Origin`` may talk to us: none (not a browser), localhost, or listed
    in ``allowed`` (normalized without a trailing slash; ``"*"`` allows any)."""
    if origin is None:
        return True
    origin = origin.strip()
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
    host = host.strip().lower()
    if host in allowed:
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
    """The token of an ``Authorization: Bearer <token>`` header, per RFC 6750.

    The scheme is case-insensitive and separated by one or more spaces; the token must be a
    ``b64token``; surrounding whitespace is ignored. Anything else (another scheme, an empty
    or malformed token, a token followed by more words) is ``None``.
    """
    token = bearer_candidate(header)
    # the grammar `bearer +b64token` (case-insensitive scheme), checked without a regex: a
    # case-insensitive regex over a JWT cost ~5 µs per request; bytes.translate deletes the
    # b64token characters in C (tests/airhttp/test_guards.py holds the two to agree)
    if token is None:
        return None
    body = token.rstrip("=")
    if not body or body.encode("ascii").translate(None, _B64TOKEN_BYTES):
        return None
    return token


def bearer_candidate(header: str | None) -> str | None:
    """:func:`bearer_token` but for the token's own syntax: the word after ``Bearer``, or
    ``None``. ``bearer_token(h)`` is this when it is a ``b64token``, else ``None``; so this is
    enough to look a token up among tokens :func:`bearer_token` gave before (a string equal
    to one of them is a ``b64token`` too), and saves checking a long JWT character by
    character on every request."""
    if header is None:
        return None
    value = header.strip(" \t")
    if len(value) < 8 or not value[:7].isascii() or value[:6].lower() != "bearer":
        return None
    token = value[6:].lstrip(" ")
    if len(token) == len(value) - 6 or not token.isascii():  # no space after the scheme
        return None
    return token


def token_ok(candidate: str | None, token: str) -> bool:
    """Whether ``candidate`` is ``token``, compared in constant time (``None`` never is)."""
    return candidate is not None and hmac.compare_digest(candidate.encode(), token.encode())
