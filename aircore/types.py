"""The vocabulary of aircore: handler and middleware aliases, and the protocols others satisfy.

``MeterHook`` is the meter slot of the chain: any object with ``async __call__(ctx, call_next)``,
``async start(...)`` and ``async stop()`` fits (airmeter's ``MeterMiddleware`` is one).
``CallInfo`` is airmeter's: what a meter reads from a call, which ``ToolContext`` satisfies.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol, TypeAlias, runtime_checkable

from airmeter.types import CallInfo

if TYPE_CHECKING:
    from aircore.context import ToolContext
    from aircore.server import AirServer
    from airstore import Store

__all__ = [
    "CallInfo",
    "CallNext",
    "GatedMeterHook",
    "Handler",
    "JSONDict",
    "MeterHook",
    "Middleware",
    "MiddlewareFn",
    "NetworkTransport",
    "ToolAwareMeterHook",
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
class MeterHook(Protocol):
    """The meter slot: a middleware with a lifecycle.

    The server calls ``await start(server_name=..., store=...)`` once before serving and
    ``await stop()`` on shutdown. ``__call__`` wraps every tool call as the outermost link
    (inside the error boundary); it records and re-raises, never swallowing an exception.
    """

    async def __call__(self, ctx: ToolContext, call_next: CallNext) -> Any: ...

    async def start(self, *, server_name: str, store: Store | None) -> None: ...

    async def stop(self) -> None: ...


@runtime_checkable
class GatedMeterHook(MeterHook, Protocol):
    """A meter hook with a gate: a link the server composes just inside argument validation
    (airmeter's budget), so that a call refused for its arguments is never refused twice."""

    def gate(self) -> MiddlewareFn:
        """The link to compose inside validation (the hook stops doing its work itself)."""


@runtime_checkable
class ToolAwareMeterHook(MeterHook, Protocol):
    """A meter hook told the server's ``tools/list`` entries after start and on every change
    (airmeter counts the context tokens each definition costs)."""

    def describe_tools(
        self, server_name: str, definitions: Sequence[Mapping[str, Any]]
    ) -> None: ...


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
