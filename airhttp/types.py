"""The ASGI vocabulary airhttp speaks (the same shapes starlette and uvicorn use, so an app
typed against either is accepted as it stands)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

__all__ = ["ASGIApp", "Message", "Receive", "Scope", "Send"]

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
