"""A guard around any ASGI app: Host/Origin/token checks, the body limit and the in-flight
cap, answered before the app runs. Used by ``/mcp``, ``/``, ``/metrics`` and the gateway."""

from __future__ import annotations

from collections.abc import Callable, Coroutine
from typing import Any

import orjson

from airhttp.limits import Limits
from airhttp.policy import AccessPolicy, Refusal
from airhttp.types import Answer, ASGIApp, FastHandler, Message, Receive, Scope, Send

__all__ = ["GuardedApp", "RenderRefusal", "json_refusal", "send_refusal", "text_refusal"]

RenderRefusal = Callable[[Refusal], tuple[bytes, bytes]]
"""Turns a refusal into ``(content_type, body)``."""

_TOO_LARGE = "Payload Too Large: request body larger than {} bytes"
BUSY = Refusal(
    status=503,
    reason="Service Unavailable: too many requests in flight",
    headers=(("retry-after", "1"),),
)


def text_refusal(refusal: Refusal) -> tuple[bytes, bytes]:
    """A ``text/plain`` body: the reason and a newline."""
    return b"text/plain; charset=utf-8", refusal.reason.encode() + b"\n"


def json_refusal(refusal: Refusal) -> tuple[bytes, bytes]:
    """A JSON-RPC error body (``id: null``, code -32600), as the MCP endpoint answers."""
    body = {"jsonrpc": "2.0", "id": None, "error": {"code": -32600, "message": refusal.reason}}
    return b"application/json", orjson.dumps(body)


async def send_refusal(send: Send, refusal: Refusal, render: RenderRefusal = text_refusal) -> None:
    """Answer one request with ``refusal``."""
    content_type, body = render(refusal)
    headers = [(k.encode("latin-1"), v.encode("latin-1")) for k, v in refusal.headers]
    headers += [(b"content-type", content_type), (b"content-length", str(len(body)).encode())]
    await send({"type": "http.response.start", "status": refusal.status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


class GuardedApp:
    """Wrap ``app`` so every HTTP request passes ``policy`` and ``limits`` first.

    A refused request never reaches the app: Host → 421, Origin → 403, token → 401 (with
    ``WWW-Authenticate: Bearer``), a declared ``Content-Length`` over ``limits.max_body`` →
    413, more than ``limits.max_inflight`` requests in flight → 503 (``Retry-After: 1``). A
    body without a length (chunked) is counted as it arrives: past the limit the app sees a
    disconnect and the client gets 413. Other scope types (lifespan, websocket) pass through.

    Args:
        app: the ASGI app to guard.
        policy: who may talk to it.
        limits: the shared limits (only ``max_body`` and ``max_inflight`` act here; the
            server enforces the connection-level ones).
        render: the body of a refusal (text by default; :func:`json_refusal` for JSON-RPC).
    """

    def __init__(
        self,
        app: ASGIApp,
        *,
        policy: AccessPolicy,
        limits: Limits | None = None,
        render: RenderRefusal = text_refusal,
    ) -> None:
        self.app = app
        self.policy = policy
        self.limits = limits or Limits()
        self.render = render
        self.inflight = 0
        self.refused = 0
        """Requests answered with a refusal so far (any reason)."""

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        raw = dict(scope["headers"])  # one C-level pass; names are lower-case in ASGI
        refusal = self._refusal(raw)
        if refusal is not None:
            self.refused += 1
            await send_refusal(send, refusal, self.render)
            return
        self.inflight += 1
        try:
            if b"content-length" not in raw and scope["method"] not in (
                "GET",
                "HEAD",
                "DELETE",
                "OPTIONS",
            ):
                await self._counted(scope, receive, send, self.limits.max_body)
            else:
                await self.app(scope, receive, send)
        finally:
            self.inflight -= 1

    def _refusal(self, raw: dict[bytes, bytes]) -> Refusal | None:
        """Why a request with headers ``raw`` is refused (Host, Origin, token, declared
        length, in-flight cap), or ``None``."""
        host = raw.get(b"host")
        origin = raw.get(b"origin")
        # read only when the policy checks a token (behind an OAuth guard it has none)
        authorization = raw.get(b"authorization") if self.policy.token is not None else None
        refusal = self.policy.refusal(
            host=None if host is None else host.decode("latin-1"),
            origin=None if origin is None else origin.decode("latin-1"),
            authorization=None if authorization is None else authorization.decode("latin-1"),
        )
        if refusal is not None:
            return refusal
        length = raw.get(b"content-length")
        if length is not None:
            max_body = self.limits.max_body
            text = length.strip()
            if not text.isdigit():  # bytes: ASCII digits only
                return Refusal(status=400, reason="Bad Request: Content-Length is not a number")
            if int(text) > max_body:
                return Refusal(status=413, reason=_TOO_LARGE.format(max_body))
        if self.inflight >= self.limits.max_inflight:
            return BUSY
        return None

    def guard_fast(self, handler: FastHandler) -> FastHandler:
        """``handler`` behind this guard, for :class:`~airhttp.HttpServer`'s ``fast`` hook: a
        request this guard would refuse is left to the app (whose guard answers the refusal);
        an admitted one counts in flight while its answer is made.

        Args:
            handler: the raw-request hook to guard.

        Returns:
            The guarded hook.
        """

        def guarded(scope: Scope, body: bytes) -> Coroutine[Any, Any, Answer] | None:
            refused = self._refusal(dict(scope["headers"]))
            if refused is not None or len(body) > self.limits.max_body:
                return None
            answer = handler(scope, body)
            return None if answer is None else self._count(answer)

        return guarded

    async def _count(self, answer: Coroutine[Any, Any, Answer]) -> Answer:
        self.inflight += 1
        try:
            return await answer
        finally:
            self.inflight -= 1

    async def _counted(self, scope: Scope, receive: Receive, send: Send, max_body: int) -> None:
        """Run the app on a body of unknown length, cutting it off past ``max_body``."""
        seen = 0
        over = False
        started = False

        async def counting_receive() -> Message:
            nonlocal seen, over
            if over:
                return {"type": "http.disconnect"}
            message = await receive()
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                if seen > max_body:
                    over = True
                    return {"type": "http.disconnect"}
            return message

        async def watching_send(message: Message) -> None:
            nonlocal started
            if over and not started:
                return  # the 413 below answers instead
            if message["type"] == "http.response.start":
                started = True
            await send(message)

        await self.app(scope, counting_receive, watching_send)
        if over and not started:
            self.refused += 1
            await send_refusal(
                send, Refusal(status=413, reason=_TOO_LARGE.format(max_body)), self.render
            )
