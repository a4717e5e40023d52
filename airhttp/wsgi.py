"""The same guards for a WSGI app (the Dash dashboard, Flask): pure functions on ``environ``."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

from airhttp.limits import DEFAULT_MAX_BODY
from airhttp.policy import AccessPolicy, Refusal

__all__ = ["GuardedWSGI", "wsgi_refusal"]

StartResponse = Callable[..., Any]
WSGIApp = Callable[[dict[str, Any], StartResponse], Iterable[bytes]]


def wsgi_refusal(
    environ: Mapping[str, Any], policy: AccessPolicy, *, max_body: int = DEFAULT_MAX_BODY
) -> Refusal | None:
    """Check one WSGI request against ``policy`` and the body limit.

    Call it from a Flask ``before_request`` hook (``request.environ``) or use
    :class:`GuardedWSGI`.

    Args:
        environ: the WSGI environ (``HTTP_HOST``, ``HTTP_ORIGIN``, ``HTTP_AUTHORIZATION``,
            ``CONTENT_LENGTH``).
        policy: who may talk to the app.
        max_body: the largest declared body in bytes.

    Returns:
        The refusal to answer, or ``None`` when the request may proceed.
    """
    refusal = policy.refusal(
        host=environ.get("HTTP_HOST"),
        origin=environ.get("HTTP_ORIGIN"),
        authorization=environ.get("HTTP_AUTHORIZATION"),
    )
    if refusal is not None:
        return refusal
    length = str(environ.get("CONTENT_LENGTH") or "").strip()
    if length and not (length.isascii() and length.isdigit()):
        return Refusal(status=400, reason="Bad Request: Content-Length is not a number")
    if length and int(length) > max_body:
        return Refusal(
            status=413, reason=f"Payload Too Large: request body larger than {max_body} bytes"
        )
    return None


_PHRASES = {
    400: "Bad Request",
    401: "Unauthorized",
    403: "Forbidden",
    413: "Payload Too Large",
    421: "Misdirected",
}


class GuardedWSGI:
    """Wrap a WSGI app so every request passes :func:`wsgi_refusal` first (text answers).

    Args:
        app: the WSGI app.
        policy: who may talk to it.
        max_body: the largest declared body in bytes.
    """

    def __init__(
        self, app: WSGIApp, *, policy: AccessPolicy, max_body: int = DEFAULT_MAX_BODY
    ) -> None:
        self.app = app
        self.policy = policy
        self.max_body = max_body

    def __call__(self, environ: dict[str, Any], start_response: StartResponse) -> Iterable[bytes]:
        refusal = wsgi_refusal(environ, self.policy, max_body=self.max_body)
        if refusal is None:
            return self.app(environ, start_response)
        body = refusal.reason.encode() + b"\n"
        status = f"{refusal.status} {_PHRASES.get(refusal.status, 'Refused')}"
        headers = [
            *refusal.headers,
            ("Content-Type", "text/plain; charset=utf-8"),
            ("Content-Length", str(len(body))),
        ]
        start_response(status, headers)
        return [body]
