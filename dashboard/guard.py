"""The dashboard's Host/Origin guard: airhttp's checks, in front of the Dash (Flask) WSGI app.

The same rules as the MCP endpoint (``airhttp.AccessPolicy``): bound to loopback, a ``Host``
that is not localhost (or listed) gets 421, which stops DNS rebinding; a browser ``Origin`` that
is not localhost (or listed) gets 403; a declared body above the cap gets 413. The page's own
requests carry its own origin, so a same-origin ``Origin`` (scheme-less ``host:port`` equal to
``Host``) is accepted: for a remote bind that is what the browser sends.

:class:`RequestScreen` applies the same checks and the token (``Authorization: Bearer``, the
page's cookie, or ``?token=``) to a request's head alone: the server calls it as soon as the
head is in, before any body is read, so a client without the token holds nothing
(:mod:`dashboard.wsgi_server`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any
from urllib.parse import parse_qs, urlsplit

from werkzeug.http import parse_cookie

from airhttp import AccessPolicy, Refusal, bearer_token, is_loopback, token_ok, wsgi_refusal

__all__ = ["TOKEN_COOKIE", "TOKEN_REFUSAL", "HostOriginGuard", "RequestScreen", "dashboard_policy"]

TOKEN_COOKIE = "air_dashboard_token"
"""The cookie that carries the token once the page was opened with ``?token=``."""

TOKEN_REFUSAL = Refusal(
    status=401,
    reason="401 Unauthorized: this dashboard needs its token "
    "(Authorization: Bearer <token>, or open the URL with ?token=<token>)",
    headers=(("WWW-Authenticate", 'Bearer realm="air dashboard"'),),
)

StartResponse = Callable[..., Any]
WSGIApp = Callable[[dict[str, Any], StartResponse], Iterable[bytes]]

_PHRASES = {403: "Forbidden", 413: "Payload Too Large", 421: "Misdirected Request"}
_CHECKED = ("HTTP_HOST", "HTTP_ORIGIN", "CONTENT_LENGTH")


def dashboard_policy(
    host: str, *, allowed_hosts: Sequence[str] = (), allowed_origins: Sequence[str] = ()
) -> AccessPolicy:
    """The policy of a dashboard bound to ``host``: the Host check is on for a loopback bind
    (and whenever hosts are listed); the token stays with :mod:`dashboard.server`."""
    return AccessPolicy(
        token=None,
        check_host=is_loopback(host) or bool(allowed_hosts),
        allowed_hosts=allowed_hosts,
        allowed_origins=allowed_origins,
    )


def _same_origin(origin: str, host: str | None) -> bool:
    try:
        netloc = urlsplit(origin.strip()).netloc.lower()
    except ValueError:
        return False
    return bool(netloc) and host is not None and netloc == host.strip().lower()


class HostOriginGuard:
    """WSGI middleware: refuse what :func:`airhttp.wsgi_refusal` refuses, then call ``app``.

    Args:
        app: the WSGI app (Flask's ``wsgi_app``).
        policy: from :func:`dashboard_policy`.
        max_body: the largest declared request body in bytes.
    """

    def __init__(self, app: WSGIApp, *, policy: AccessPolicy, max_body: int) -> None:
        self.app = app
        self.policy = policy
        self.max_body = max_body

    def refusal(self, environ: dict[str, Any]) -> Refusal | None:
        """The answer to refuse ``environ`` with, or ``None`` to let it through."""
        seen = {k: environ[k] for k in _CHECKED if k in environ}
        origin = seen.get("HTTP_ORIGIN")
        if origin is not None and _same_origin(origin, seen.get("HTTP_HOST")):
            del seen["HTTP_ORIGIN"]  # the page talking to its own server (the Host is checked)
        return wsgi_refusal(seen, self.policy, max_body=self.max_body)

    def __call__(self, environ: dict[str, Any], start_response: StartResponse) -> Iterable[bytes]:
        refused = self.refusal(environ)
        if refused is None:
            return self.app(environ, start_response)
        body = refused.reason.encode() + b"\n"
        start_response(
            f"{refused.status} {_PHRASES.get(refused.status, 'Refused')}",
            [
                *refused.headers,
                ("Content-Type", "text/plain; charset=utf-8"),
                ("Content-Length", str(len(body))),
                ("Connection", "close"),
            ],
        )
        return [body]


def _cookie(header: str | None, name: str) -> str | None:
    """One cookie's value, read as Flask reads it (werkzeug's lenient parser)."""
    return parse_cookie(header).get(name) if header else None


def _query_token(query: str) -> str | None:
    values = parse_qs(query, max_num_fields=64).get("token")
    return values[0] if values else None


class RequestScreen:
    """A request's head checked before its body is read: Host/Origin/length as
    :class:`HostOriginGuard`, then the token when one is set.

    Args:
        guard: the Host/Origin guard of the same dashboard.
        token: the token every request must carry (``None``: none needed).
    """

    def __init__(self, guard: HostOriginGuard, *, token: str | None) -> None:
        self.guard = guard
        self.token = token

    def token_ok(self, head: Mapping[str, Any]) -> bool:
        """Whether ``head`` carries the token (bearer, the page's cookie, or ``?token=``)."""
        token = self.token
        if token is None:
            return True
        return (
            token_ok(bearer_token(head.get("HTTP_AUTHORIZATION")), token)
            or token_ok(_cookie(head.get("HTTP_COOKIE"), TOKEN_COOKIE), token)
            or token_ok(_query_token(head.get("QUERY_STRING", "")), token)
        )

    def refusal(self, head: Mapping[str, Any]) -> Refusal | None:
        """The answer to refuse a request with, from its head alone; ``None`` to read on.

        Args:
            head: WSGI-style keys of the head (``HTTP_HOST``, ``HTTP_ORIGIN``,
                ``HTTP_AUTHORIZATION``, ``HTTP_COOKIE``, ``CONTENT_LENGTH``, ``QUERY_STRING``).
        """
        refused = self.guard.refusal(dict(head))
        if refused is not None:
            return refused
        return None if self.token_ok(head) else TOKEN_REFUSAL
