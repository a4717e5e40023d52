"""A fast lane in front of an ASGI app: requests a handler can answer whole, from their head
and body, skip the app.

The gateway serves on :class:`airhttp.HttpServer` (airhttp's connection limits, keep-alive,
pipelining, graceful stop). Most of its traffic is stateless 2026-07-28 ``tools/call`` POSTs;
:class:`FastLane` reads such a request's body (only when its head says it may be one and it
declares a length within ``max_body``), offers it to a :data:`FastHandler`, and sends the
handler's ``(status, JSON body)`` as one response — airhttp writes head and body in one piece.
A request the handler leaves goes to the app with its body replayed, exactly as it came.
While a handler's answer is pending, the client closing the connection cancels it (in the
2026-07-28 era closing the POST cancels the call).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

from airhttp import ASGIApp, Message, Receive, Scope, Send

__all__ = ["FastHandler", "FastLane", "Request"]

_JSON = (b"content-type", b"application/json")


class Request:
    """One request offered to a fast handler: method, path, lower-case headers, whole body.

    Attributes:
        method: the method (``POST``).
        path: the path without the query.
        headers: ``(name, value)`` pairs, names lower-case, as the server parsed them.
        body: the whole request body.
    """

    __slots__ = ("body", "headers", "method", "path")

    def __init__(
        self, method: str, path: str, headers: list[tuple[bytes, bytes]], body: bytes
    ) -> None:
        self.method = method
        self.path = path
        self.headers = headers
        self.body = body

    def header(self, name: bytes) -> bytes | None:
        """The first value of a header (``name`` lower-case), or ``None``."""
        for key, value in self.headers:
            if key == name:
                return value
        return None


FastHandler = Callable[[Request], Awaitable[tuple[int, bytes]] | None]
"""Takes a request and returns the coroutine making its answer ``(status, JSON body)``, or
``None`` to leave the request to the app. The coroutine is cancelled when the client leaves."""

Wants = Callable[[Scope], bool]
"""Whether a request (its scope: method, path, headers) may be one for the fast handler."""


def _declared_length(scope: Scope) -> int | None:
    for name, value in scope["headers"]:
        if name == b"content-length":
            text = value.strip()
            return int(text) if text.isdigit() else None
    return None


class FastLane:
    """An ASGI app: the fast handler's requests answered directly, the rest by ``app``.

    Args:
        app: the app for every other request (its guards included).
        fast: the fast handler.
        wants: a cheap look at the head; only requests it accepts have their body read here.
        max_body: the largest declared body read here (larger ones go to ``app`` unread).
    """

    def __init__(self, app: ASGIApp, fast: FastHandler, *, wants: Wants, max_body: int) -> None:
        self.app = app
        self.fast = fast
        self.wants = wants
        self.max_body = max_body

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or not self.wants(scope):
            await self.app(scope, receive, send)
            return
        length = _declared_length(scope)
        if length is None or length > self.max_body:
            await self.app(scope, receive, send)
            return
        parts: list[bytes] = []
        while True:
            message = await receive()
            if message["type"] != "http.request":
                return  # the client left before its body arrived: nobody to answer
            parts.append(message.get("body", b""))
            if not message.get("more_body", False):
                break
        body = parts[0] if len(parts) == 1 else b"".join(parts)
        answer = self.fast(Request(scope["method"], scope["path"], scope["headers"], body))
        if answer is None:
            await self.app(scope, _replay(body, receive), send)
            return
        status, out = await _unless_gone(answer, receive)
        if status:
            await send({"type": "http.response.start", "status": status,
                        "headers": [_JSON, (b"content-length", b"%d" % len(out))]})  # fmt: skip
            await send({"type": "http.response.body", "body": out})


def _replay(body: bytes, receive: Receive) -> Receive:
    """``receive`` that gives ``body`` first, then defers to the server's."""
    given = False

    async def replayed() -> Message:
        nonlocal given
        if not given:
            given = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()

    return replayed


async def _unless_gone(answer: Awaitable[tuple[int, bytes]], receive: Receive) -> tuple[int, bytes]:
    """Await ``answer``; the client leaving first cancels it and gives ``(0, b"")``.

    After the body, the server's ``receive`` returns only when the client is gone: a
    done-callback cancels this task then (no second task for the call: this is the hot path).
    """
    task = asyncio.current_task()
    watcher: asyncio.Future[Any] = asyncio.ensure_future(receive())
    left = finished = False

    def gone(done: asyncio.Future[Any]) -> None:
        nonlocal left
        if not (done.cancelled() or finished) and task is not None:
            left = True
            task.cancel()

    watcher.add_done_callback(gone)
    try:
        return await answer
    except asyncio.CancelledError:
        if left and task is not None and task.cancelling() == 1:
            task.uncancel()  # our own cancellation: the client closed the POST
            return 0, b""
        raise
    finally:
        finished = True
        watcher.remove_done_callback(gone)
        watcher.cancel()
