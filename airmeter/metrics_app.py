"""A tiny ASGI app that serves Prometheus text at ``/metrics``; mountable in any ASGI server."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

from airmeter.prometheus import CONTENT_TYPE

__all__ = ["ASGIApp", "metrics_app"]

logger = logging.getLogger(__name__)

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]


async def _respond(
    send: Send, status: int, body: bytes, content_type: str, *, head: bool = False
) -> None:
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", content_type.encode()),
                (b"content-length", str(len(body)).encode()),
            ],
        }
    )
    await send({"type": "http.response.body", "body": b"" if head else body})


def metrics_app(render: Callable[[], str], *, path: str = "/metrics") -> ASGIApp:
    """Build an ASGI app answering ``GET``/``HEAD path`` with ``render()``.

    Use it alone (``uvicorn.run(metrics_app(sink.render))``) or mount it beside an MCP
    endpoint. Other paths answer 404, other methods 405; lifespan events are acknowledged.

    Args:
        render: Produces the exposition text, e.g. :meth:`PrometheusSink.render`.
        path: The route served.

    Returns:
        The ASGI callable.
    """

    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            while True:
                message = await receive()
                if message["type"] == "lifespan.startup":
                    await send({"type": "lifespan.startup.complete"})
                elif message["type"] == "lifespan.shutdown":
                    await send({"type": "lifespan.shutdown.complete"})
                    return
        if scope["type"] != "http":
            return
        if scope["path"] != path:
            await _respond(send, 404, b"not found\n", "text/plain; charset=utf-8")
            return
        method = scope["method"]
        if method not in ("GET", "HEAD"):
            await _respond(send, 405, b"method not allowed\n", "text/plain; charset=utf-8")
            return
        try:
            body = render().encode()
        except Exception:
            logger.exception("rendering /metrics failed")
            await _respond(send, 500, b"metrics unavailable\n", "text/plain; charset=utf-8")
            return
        await _respond(send, 200, body, CONTENT_TYPE, head=method == "HEAD")

    return app
