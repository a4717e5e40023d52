"""The dashboard's Host/Origin guard: airhttp's checks, in front of the Dash (Flask) WSGI app.

The same rules as the MCP endpoint (``airhttp.AccessPolicy``): bound to loopback, a ``Host``
that is not localhost (or listed) gets 421, which stops DNS rebinding; a browser ``Origin`` that
is not localhost (or listed) gets 403; a declared body above the cap gets 413. The page's own
requests carry its own origin, so a same-origin ``Origin`` (scheme-less ``host:port`` equal to
``Host``) is accepted: for a remote bind that is what the browser sends. The token, when set, is
checked by :mod:`dashboard.server` (it also accepts the page's cookie).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any
from urllib.parse import urlsplit

from airhttp import AccessPolicy, Refusal, is_loopback, wsgi_refusal

__all__ = ["HostOriginGuard", "dashboard_policy"]

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
