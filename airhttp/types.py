"""The ASGI vocabulary airhttp speaks (the same shapes starlette and uvicorn use, so an app
typed against either is accepted as it stands)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Coroutine, MutableMapping, Sequence
from typing import Any

__all__ = ["ASGIApp", "Answer", "FastHandler", "Message", "Receive", "Scope", "Send"]

Scope = MutableMapping[str, Any]
"""One connection's or request's description (``type``, ``method``, ``path``, ``headers``…)."""

Message = MutableMapping[str, Any]
"""One ASGI event (``http.request``, ``http.response.start``, ``http.disconnect``…)."""

Receive = Callable[[], Awaitable[Message]]
"""Awaits the next event from the client."""

Send = Callable[[Message], Awaitable[None]]
"""Sends one event to the client."""

ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]
"""An ASGI 3 application."""

Answer = tuple[int, Sequence[tuple[bytes, bytes]], bytes]
"""A whole response of a fast handler: status, headers (as in ``http.response.start``; the
server adds ``content-length``, ``date`` and ``connection``) and body."""

FastHandler = Callable[[Scope, bytes], Coroutine[Any, Any, Answer] | None]
"""A raw-request hook before the ASGI app (:class:`~airhttp.HttpServer`'s ``fast``): called
with the request's ASGI scope and its whole body once it is in, it returns the coroutine that
makes the whole answer, or ``None`` to leave the request to the ASGI app (which then gets the
same body). The coroutine is cancelled when the client goes away."""
