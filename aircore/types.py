"""The vocabulary of aircore: handler and middleware aliases, and the protocols others satisfy.

``MeterHook`` is the meter slot of the chain. airmeter implements it structurally (without
importing aircore): any object with ``async __call__(ctx, call_next)``, ``async start(...)`` and
``async stop()`` fits. ``CallInfo`` lists what such a hook may read from the call context.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Any, Protocol, TypeAlias, runtime_checkable

if TYPE_CHECKING:
    from aircore.context import ToolContext
    from aircore.server import AirServer
    from airstore import Store

__all__ = [
    "CallInfo",
    "CallNext",
    "Handler",
    "JSONDict",
    "MeterHook",
    "Middleware",
    "MiddlewareFn",
    "NetworkTransport",
    "Transport",
]

JSONDict: TypeAlias = dict[str, Any]
"""A JSON object."""

NetworkTransport: TypeAlias = str
"""``"pipe"`` (stdio), ``"tcp"`` (HTTP) or ``"inproc"`` (``handle_message``)."""

Handler: TypeAlias = Callable[..., Any]
"""A tool handler: ``handler(params, ctx)``, sync or async, returning any value
:func:`~aircore.normalize_result` understands."""

CallNext: TypeAlias = "Callable[[ToolContext], Awaitable[Any]]"
"""The rest of the chain: ``await call_next(ctx)`` returns the (raw) tool value."""

MiddlewareFn: TypeAlias = "Callable[[ToolContext, CallNext], Awaitable[Any]]"
"""A plain middleware: ``async def mw(ctx, call_next)``."""

Middleware: TypeAlias = Any
"""A :data:`MiddlewareFn`, or an object with optional ``before``/``after``/``on_error`` hooks."""


@runtime_checkable
class CallInfo(Protocol):
    """What the chain's context exposes to middleware and to the meter hook.

    ``layer`` is the tool's L1-L7 hint (``None``: classify by name); ``usage`` is a dict where a
    handler may put ``tokens_in``, ``tokens_out`` and ``cost``; ``meta`` collects ``before``
    hooks' extra meta.
    """

    tool_name: str
    arguments: dict[str, Any]
    request_id: str | None
    session_id: str | None
    protocol_version: str | None
    transport: str
    client_name: str | None
    server_name: str
    started_at: float
    layer: int | None
    tags: tuple[str, ...]
    annotations: Mapping[str, Any] | None
    tool_meta: Mapping[str, Any] | None
    meta: dict[str, Any]
    usage: dict[str, Any]


@runtime_checkable
class MeterHook(Protocol):
    """The meter slot: a middleware with a lifecycle.

    The server calls ``await start(server_name=..., store=...)`` once before serving and
    ``await stop()`` on shutdown. ``__call__`` wraps every tool call; it records and re-raises,
    never swallowing an exception.
    """

    async def __call__(self, ctx: Any, call_next: Callable[[Any], Awaitable[Any]]) -> Any: ...

    async def start(self, *, server_name: str, store: Store | None) -> None: ...

    async def stop(self) -> None: ...


class Transport(Protocol):
    """One way of serving an :class:`~aircore.AirServer` (stdio, Streamable HTTP…).

    ``aircore.transports.TRANSPORTS`` maps each name to a factory; ``AirServer.run`` and
    ``air serve`` look the name up there. ``options`` names the keyword options ``serve``
    takes, so a caller holding options for every transport passes each only its own.
    """

    name: str
    options: frozenset[str]

    async def serve(self, server: AirServer, **options: Any) -> None:
        """Start ``server``, serve until EOF or a signal, stop it."""
