"""Serve Prometheus text at ``/metrics``: a tiny ASGI app behind airhttp's guards, and the
app aircore's HTTP transport mounts beside ``/mcp``."""

from __future__ import annotations

import inspect
import logging
from collections.abc import Awaitable, Callable, Collection
from typing import Protocol

from airhttp import AccessPolicy, GuardedApp
from airhttp.types import Receive, Scope, Send
from airmeter.errors import MeterConfigError
from airmeter.health import render_health
from airmeter.meter import Meter
from airmeter.middleware import MeterMiddleware
from airmeter.prometheus import CONTENT_TYPE, PrometheusSink
from airmeter.prometheus_snapshot import render_snapshot

__all__ = ["MetricsApp", "MetricsSource", "metrics_app", "prometheus_text", "server_metrics_app"]

logger = logging.getLogger(__name__)

Render = Callable[[], str | Awaitable[str]]

_TEXT = "text/plain; charset=utf-8"


class MetricsSource(Protocol):
    """What ``/metrics`` is served for: a server with a meter slot (aircore's ``AirServer``,
    seen by its transports as ``aircore.types.Served``, is one). airmeter renders the slot
    when it holds airmeter's hook (:class:`~airmeter.MeterMiddleware`), a :class:`Meter` or
    a :class:`PrometheusSink`."""

    @property
    def meter(self) -> object | None:
        """The server's meter hook; ``None``: the server does not meter."""


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


class MetricsApp:
    """An ASGI app answering ``GET``/``HEAD`` at ``path`` with ``render()`` (sync or async).

    Other paths answer 404, other methods 405, a failing render 500. Guards, like the MCP
    endpoint's: a browser ``Origin`` that is not localhost (or in ``allowed_origins``) gets 403;
    with ``check_host``, a ``Host`` that is not localhost (or in ``allowed_hosts``) gets 421;
    with ``token``, a missing ``Authorization: Bearer <token>`` gets 401. Lifespan events are
    acknowledged, so it also runs alone under uvicorn.
    """

    def __init__(
        self,
        render: Render,
        *,
        path: str = "/metrics",
        token: str | None = None,
        check_host: bool = False,
        allowed_hosts: Collection[str] = (),
        allowed_origins: Collection[str] = (),
    ) -> None:
        self._render = render
        self._path = path
        policy = AccessPolicy(
            token=token,
            check_host=check_host,
            allowed_hosts=allowed_hosts,
            allowed_origins=allowed_origins,
        )
        # airhttp's guard: the same Host/Origin/token checks as every other HTTP surface
        self._guarded = GuardedApp(self._serve, policy=policy)

    async def _lifespan(self, receive: Receive, send: Send) -> None:
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                await send({"type": "lifespan.shutdown.complete"})
                return

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await self._lifespan(receive, send)
            return
        if scope["type"] != "http":
            return
        if scope["path"] != self._path:
            await _respond(send, 404, b"not found\n", _TEXT)
            return
        if scope["method"] not in ("GET", "HEAD"):
            await _respond(send, 405, b"method not allowed\n", _TEXT)
            return
        await self._guarded(scope, receive, send)

    async def _serve(self, scope: Scope, receive: Receive, send: Send) -> None:
        try:
            text = self._render()
            if inspect.isawaitable(text):
                text = await text
            body = text.encode()
        except Exception:
            logger.exception("rendering %s failed", self._path)
            await _respond(send, 500, b"metrics unavailable\n", _TEXT)
            return
        await _respond(send, 200, body, CONTENT_TYPE, head=scope["method"] == "HEAD")


def metrics_app(
    render: Render,
    *,
    path: str = "/metrics",
    token: str | None = None,
    check_host: bool = False,
    allowed_hosts: Collection[str] = (),
    allowed_origins: Collection[str] = (),
) -> MetricsApp:
    """Build the ASGI app serving ``render()`` at ``path``.

    Use it alone (``uvicorn.run(metrics_app(sink.render))``) or mount it beside an MCP
    endpoint (a Starlette ``Route(path, app)``).

    Args:
        render: Produces the exposition text, e.g. :meth:`PrometheusSink.render`; may be async.
        path: The route served.
        token: Require ``Authorization: Bearer <token>``.
        check_host: Refuse a ``Host`` other than localhost or ``allowed_hosts`` (421).
        allowed_hosts: Extra ``Host`` names accepted.
        allowed_origins: Extra browser ``Origin`` values accepted besides localhost.

    Returns:
        The ASGI app.
    """
    return MetricsApp(
        render,
        path=path,
        token=token,
        check_host=check_host,
        allowed_hosts=allowed_hosts,
        allowed_origins=allowed_origins,
    )


async def prometheus_text(source: object) -> str:
    """The exposition text of a meter, wherever it lives.

    Args:
        source: A :class:`PrometheusSink`; a :class:`Meter` (its ``PrometheusSink`` when it
            has one, which carries the advised histogram buckets, else
            :func:`render_snapshot` of its whole history, both followed by the meter's own
            counters: drops, sink errors and timeouts); or the
            :class:`~airmeter.MeterMiddleware` holding one.

    Returns:
        The text; an empty exposition when the meter has not started yet.

    Raises:
        MeterConfigError: ``source`` is none of these.
    """
    if isinstance(source, PrometheusSink):
        return source.render()
    if isinstance(source, MeterMiddleware):
        try:
            meter = source.meter
        except MeterConfigError:  # a middleware before start(): nothing recorded yet
            return PrometheusSink().render()
    elif isinstance(source, Meter):
        meter = source
    else:
        raise MeterConfigError(f"no meter to render in {type(source).__name__}")
    health = render_health([meter.health])  # drops and sink failures, beside the calls
    clients = "\n".join(meter.clients.render()) + "\n"  # the bounded client label
    for sink in meter.sinks:
        if isinstance(sink, PrometheusSink):
            return sink.render() + clients + health
    return render_snapshot(await meter.snapshot()) + clients + health


def server_metrics_app(
    server: MetricsSource,
    *,
    token: str | None = None,
    check_host: bool = False,
    allowed_hosts: Collection[str] = (),
    allowed_origins: Collection[str] = (),
) -> MetricsApp | None:
    """The ``/metrics`` app for an aircore server, or ``None`` when it has no meter.

    aircore's HTTP transport mounts it beside ``/mcp`` for a metered server.

    Args:
        server: An ``AirServer`` (any :class:`MetricsSource`).
        token: The bearer token the MCP endpoint requires, required here too.
        check_host: Check ``Host`` as the MCP endpoint does.
        allowed_hosts: Extra ``Host`` names accepted.
        allowed_origins: Extra browser ``Origin`` values accepted.

    Returns:
        The app, or ``None``.
    """
    if server.meter is None:
        return None

    async def render() -> str:
        return await prometheus_text(server.meter)

    return MetricsApp(
        render,
        token=token,
        check_host=check_host,
        allowed_hosts=allowed_hosts,
        allowed_origins=allowed_origins,
    )
