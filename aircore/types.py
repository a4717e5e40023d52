"""The vocabulary of aircore: handler and middleware aliases, and the protocols others satisfy.

``MeterHook`` is the meter slot of the chain: any object with ``async __call__(ctx, call_next)``,
``async start(...)`` and ``async stop()`` fits (airmeter's ``MeterMiddleware`` is one).
``CallInfo`` is airmeter's: what a meter reads from a call, which ``ToolContext`` satisfies.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, MutableSet, Sequence
from typing import TYPE_CHECKING, Any, Protocol, TypeAlias, runtime_checkable

from airmeter.types import CallInfo

if TYPE_CHECKING:
    from aircore.context import ToolContext
    from aircore.prompt import Prompt
    from aircore.protocol.session import Connection
    from aircore.resource import Resource
    from aircore.tool import Tool
    from airstore import Store, StoreLocation

__all__ = [
    "AfterHook",
    "BeforeHook",
    "CallInfo",
    "CallNext",
    "ErrorHook",
    "GatedMeterHook",
    "Handler",
    "JSONDict",
    "MessageHandler",
    "MeterHook",
    "MeterSlot",
    "Middleware",
    "MiddlewareFn",
    "NetworkTransport",
    "Served",
    "ServerModel",
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


@runtime_checkable
class BeforeHook(Protocol):
    """A hook middleware's ``before(ctx)``: ``None`` (go on), ``{"params": …}``,
    ``{"abort": True, "abort_response": …}`` or ``{"meta": …}``; sync or async."""

    def before(self, ctx: ToolContext) -> Any: ...


@runtime_checkable
class AfterHook(Protocol):
    """A hook middleware's ``after(ctx, result)``: a replacement result or ``None``."""

    def after(self, ctx: ToolContext, result: Any) -> Any: ...


@runtime_checkable
class ErrorHook(Protocol):
    """A hook middleware's ``on_error(ctx, error)``: a result that ends the error, or ``None``."""

    def on_error(self, ctx: ToolContext, error: BaseException) -> Any: ...


Middleware: TypeAlias = (
    "MiddlewareFn | BeforeHook | AfterHook | ErrorHook | Mapping[str, Callable[..., Any]]"
)
"""A :data:`MiddlewareFn`, an object with any of the ``before``/``after``/``on_error`` hooks, or a
dict of them."""


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


class MessageHandler(Protocol):
    """What a transport hands each decoded JSON-RPC message to (the server's dispatcher).

    ``headers`` are the HTTP request's (lower-case names) for a 2026-07-28 request over HTTP,
    checked against the body; ``None`` elsewhere. ``close`` ends what outlives a request
    (listen streams, tasks) at shutdown.
    """

    async def handle(
        self, message: Any, conn: Connection, *, headers: Mapping[str, str] | None = None
    ) -> dict[str, Any] | None:
        """The response to ``message``, or ``None`` (notifications, client responses)."""

    def close(self) -> None:
        """End every listen stream and running task (shutdown)."""


class ServerModel(Protocol):
    """What the protocol layer (the dispatcher, ``tools/call``) reads of a server: its
    registries, what it announces, and the call chain (an :class:`~aircore.AirServer` is one).
    """

    @property
    def name(self) -> str: ...

    @property
    def capabilities(self) -> dict[str, Any]: ...

    @property
    def server_info(self) -> dict[str, Any]: ...

    @property
    def instructions(self) -> str | None: ...

    @property
    def subscribers(self) -> MutableSet[Any]:
        """Connections subscribed to resource updates (``resource_updated`` reaches them)."""

    @property
    def tools(self) -> Mapping[str, Tool]: ...

    @property
    def aliases(self) -> Mapping[str, str]:
        """Deprecated tool names → the tools' names (:mod:`aircore.definitions.renames`)."""

    @property
    def meter(self) -> MeterSlot | None:
        """The server's meter (``None``: calls are not metered)."""

    @property
    def store_location(self) -> StoreLocation | None:
        """Where the server's store is, when it opened one by URL (``None`` otherwise)."""

    @property
    def prompts(self) -> Mapping[str, Prompt]: ...

    @property
    def resources(self) -> Sequence[Resource]: ...

    @property
    def state(self) -> dict[str, Any]: ...

    @property
    def store(self) -> Store | None: ...

    def tool_listing(self) -> list[dict[str, Any]]:
        """The ``tools/list`` entries."""

    async def call_tool_ctx(self, ctx: ToolContext) -> dict[str, Any]:
        """Run one call through the chain; its ``CallToolResult``."""


class Served(Protocol):
    """What a transport serves: a message handler with a lifecycle (an
    :class:`~aircore.AirServer` is one). Transports are typed against this, never the
    server, so that the server, the protocol layer and the transports form no import circle.
    """

    @property
    def name(self) -> str:
        """The server's name (shown when serving)."""

    @property
    def version(self) -> str:
        """The server's version (the HTTP status page)."""

    @property
    def tools(self) -> Mapping[str, Tool]:
        """The tools by name (the HTTP status page counts them; their ``required_scopes``
        join the resource server's per-tool scopes)."""

    @property
    def meter(self) -> MeterSlot | None:
        """The meter hook, if the server meters (HTTP then serves ``/metrics``)."""

    @property
    def store_location(self) -> StoreLocation | None:
        """Where the store was opened, once started (``None``: given as a store, or memory)."""

    @property
    def dispatcher(self) -> MessageHandler:
        """Where messages go."""

    async def start(self) -> None:
        """Start (idempotent)."""

    async def stop(self) -> None:
        """Stop (idempotent)."""


MeterSlot: TypeAlias = "MeterHook | MiddlewareFn"
"""What fills the meter slot: a :class:`MeterHook` (started and stopped with the server), or a
plain :data:`MiddlewareFn` (no lifecycle)."""


class Transport(Protocol):
    """One way of serving a :class:`Served` (an :class:`~aircore.AirServer`: stdio,
    Streamable HTTP…).

    ``aircore.transports.TRANSPORTS`` maps each name to a factory;
    :func:`aircore.serving.run_server` (``AirServer.run``, ``air serve``) looks the name up
    there. ``options`` names the keyword options ``serve`` takes, so a caller holding options
    for every transport passes each only its own.
    """

    name: str
    options: frozenset[str]

    async def serve(self, server: Served, **options: Any) -> None:
        """Start ``server``, serve until EOF or a signal, stop it."""
