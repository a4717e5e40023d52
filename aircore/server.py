"""``AirServer`` and ``define_server``: registries, lifecycle and the per-tool chain.

The chain of one call, outermost first: error boundary → meter → validation → the meter's gate
(a budget) → output check → plugins (``use`` order) → user middleware → handler. The boundary is
:meth:`AirServer.call_tool_ctx`; the rest is composed once per tool when the server starts.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
import os
import weakref
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from pathlib import Path
from types import TracebackType
from typing import Any, Self

from aircore.context import ToolContext
from aircore.errors import (
    DefinitionError,
    InvalidParamsError,
)
from aircore.execution import (
    exit_failure,
    keep_call_result,
    output_check,
    render_output,
    run_call,
    validate_arguments,
)
from aircore.failure_log import FAILURES
from aircore.middleware import as_middleware, compose
from aircore.plugins import plugin_hook, validate_plugins
from aircore.prompt import Prompt
from aircore.protocol.session import Connection
from aircore.registry import Registry
from aircore.resource import Resource
from aircore.storage import Storage, open_storage
from aircore.tool import Tool
from aircore.types import GatedMeterHook, MeterHook, MeterSlot, Middleware, ToolAwareMeterHook
from airstore import Store, StoreLocation

__all__ = ["AirServer", "define_server"]

logger = logging.getLogger(__name__)


async def _call_hook(hook: Any, *args: Any) -> None:
    if hook is None:
        return
    value = hook(*args)
    if inspect.isawaitable(value):
        await value


def _load_meter(meter: MeterSlot | bool | None) -> MeterSlot | None:
    if meter is None or meter is False:
        return None
    if meter is True:
        from airmeter import create_meter_hook  # imported only for servers that meter

        return create_meter_hook()
    if not callable(meter):
        raise DefinitionError("meter must be None, True, or a MeterHook: async (ctx, call_next)")
    return meter


class AirServer(Registry):
    """A minimal MCP server: tools, resources, prompts, plugins, middleware and a store.

    Build it with :func:`define_server`; serve it with :meth:`run`, :meth:`serve_stdio`,
    :meth:`serve_http`, or drive it in-process with :meth:`handle_message`.
    """

    def __init__(
        self,
        *,
        name: str,
        version: str = "0.1.0",
        title: str | None = None,
        instructions: str | None = None,
        tools: Sequence[Tool] = (),
        resources: Sequence[Resource] = (),
        prompts: Sequence[Prompt] = (),
        storage: Storage = None,
        meter: MeterSlot | bool | None = None,
        use: Sequence[Any] = (),
        middleware: Sequence[Middleware] = (),
        page_size: int = 100,
        definitions: str | os.PathLike[str] | None = None,
    ) -> None:
        if not isinstance(name, str) or not name:
            raise DefinitionError("server name must be a non-empty string")
        if not isinstance(page_size, int) or page_size < 1:
            raise DefinitionError("page_size must be a positive integer")
        self.name = name
        self.version = version
        self.instructions = instructions
        self.server_info: dict[str, Any] = {"name": name, "version": version}
        if title:
            self.server_info["title"] = title
        self.capabilities: dict[str, Any] = {
            "tools": {"listChanged": False},
            "resources": {"subscribe": True, "listChanged": False},
            "prompts": {"listChanged": False},
            "logging": {},
            "completions": {},
        }
        self.subscribers: weakref.WeakSet[Any] = weakref.WeakSet()
        self.state: dict[str, Any] = {}
        self.aliases: dict[str, str] = {}
        """Deprecated tool names → the tools' names (set from the definitions' rename map)."""
        Registry.__init__(self)
        self.plugins = list(use)
        self.definitions = None if definitions is None else Path(definitions)
        if self.definitions is not None:  # first, so every other plugin sees the defined tools
            from aircore.definitions.plugin import definitions_plugin

            self.plugins.insert(0, definitions_plugin(self.definitions))
        validate_plugins(self.plugins)
        self.meter = _load_meter(meter)
        self._user_middleware = [as_middleware(m) for m in middleware]
        self._plugin_middleware = [
            as_middleware(m) for p in self.plugins for m in (plugin_hook(p, "middleware") or ())
        ]
        self._storage = storage
        self._owns_store = isinstance(storage, str) or storage is None
        self.store: Store | None = storage if isinstance(storage, Store) else None
        self.store_location: StoreLocation | None = None
        """Where the store was opened (set at start when ``storage`` is a URL or the default)."""
        self._chains: dict[str, Callable[[ToolContext], Any]] = {}
        self._started = False
        self._stopped = False
        self._lock = asyncio.Lock()
        self._lazy: object | None = None  # the token of a start made by call_tool()
        self._lazy_guard: AsyncIterator[None] | None = None
        for t in tools:
            self.add_tool(t)
        for r in resources:
            self.add_resource(r)
        for p in prompts:
            self.add_prompt(p)
        from aircore.protocol.dispatch import Dispatcher

        self.dispatcher = Dispatcher(self, page_size=page_size)

    def _tool_added(self, name: str) -> None:
        if self._started:
            self._register_with_plugins(name)
            self._describe_tools()

    def _describe_tools(self) -> None:
        """Tell a meter that wants it what ``tools/list`` sends (it counts their tokens)."""
        if isinstance(self.meter, ToolAwareMeterHook):
            self.meter.describe_tools(self.name, [t.describe() for t in self.tools.values()])

    async def resource_updated(self, uri: str) -> int:
        """Send ``notifications/resources/updated`` to every connection subscribed to ``uri``.

        Returns:
            How many connections were notified.
        """
        sent = 0
        for conn in list(self.subscribers):
            if uri in conn.subscriptions:
                await conn.notify("notifications/resources/updated", {"uri": uri})
                sent += 1
        return sent

    def use_storage(self, storage: str | Store) -> None:
        """Replace the storage before the server starts (``air serve --store``).

        Raises:
            DefinitionError: the server already started.
        """
        if self._started:
            raise DefinitionError("cannot change storage of a running server")
        self._storage = storage
        self._owns_store = isinstance(storage, str)
        self.store = storage if isinstance(storage, Store) else None

    def use_meter(self, meter: MeterSlot | bool | None) -> None:
        """Replace the meter hook before the server starts (``air serve --otel`` gives one
        that exports).

        Args:
            meter: ``None``, ``True`` (airmeter's default hook) or a
                :class:`~aircore.types.MeterHook`.

        Raises:
            DefinitionError: the server already started, or ``meter`` is not a hook.
        """
        if self._started:
            raise DefinitionError("cannot change the meter of a running server")
        self.meter = _load_meter(meter)

    # ---- lifecycle ----------------------------------------------------------------------
    async def start(self) -> None:
        """Open the store, run plugins' ``on_init`` / ``on_start``, start the meter, run
        ``on_tool_register`` for every tool and compose the chains. Idempotent."""
        async with self._lock:
            if self._started:
                return
            # which store (the default one included) is aircore.storage's choice, not ours
            self.store, self.store_location = await open_storage(
                self._storage, metering=self.meter is not None
            )
            meter_started = False
            try:
                for plugin in self.plugins:
                    await _call_hook(plugin_hook(plugin, "on_init"), self)
                for plugin in self.plugins:
                    await _call_hook(plugin_hook(plugin, "on_start"), self)
                if isinstance(self.meter, MeterHook):
                    await self.meter.start(server_name=self.name, store=self.store)
                    meter_started = True
                for name in list(self.tools):
                    self._register_with_plugins(name)
                self._describe_tools()
            except BaseException:
                await self._abort_start(meter_started=meter_started)
                raise
            self._started = True
            self._stopped = False

    async def _abort_start(self, *, meter_started: bool) -> None:
        """Undo a failed :meth:`start`: stop a started meter, close an owned store (logged)."""
        self._chains.clear()
        self._listing = None
        if meter_started and isinstance(self.meter, MeterHook):
            try:
                await self.meter.stop()
            except Exception:
                logger.exception("meter stop failed after a failed start")
        if self.store is not None and self._owns_store:
            try:
                await self.store.close()
            except Exception:
                logger.exception("closing the store failed after a failed start")
            self.store = None

    def _register_with_plugins(self, name: str) -> None:
        tool = self.tools[name]
        for plugin in self.plugins:
            hook = plugin_hook(plugin, "on_tool_register")
            if hook is not None:
                replaced = hook(tool, self)
                if isinstance(replaced, Tool):
                    tool = replaced
        self.tools[name] = tool
        self._listing = None
        self._chains[name] = self._compose(tool)

    def _compose(self, tool: Tool) -> Callable[[ToolContext], Any]:
        inner = [*self._plugin_middleware, *self._user_middleware]
        # the CallToolResult is built inside the meter, so a value that cannot become one is
        # recorded as the failure the client gets: by the output_check link around plugins and
        # middleware, else in the handler itself (one link less)
        keep = None if inner or tool.output_schema is not None else keep_call_result

        async def handler(ctx: ToolContext) -> Any:
            try:
                value = await tool.invoke(ctx.arguments, ctx)
            except Exception:
                raise
            except BaseException as exc:  # SystemExit, a stray CancelledError …: a failure
                failure = exit_failure(f"tool {tool.name!r}", exc)
                if failure is None:
                    raise
                FAILURES.tool_failed(tool.name, ctx.request_id, exc, call_id=ctx.call_id)
                raise failure from exc
            return value if keep is None else keep(ctx, value)

        layers: list[Any] = []
        if self.meter is not None:
            layers.append(self.meter)
        if tool.validator is not None or tool.convert is not None:
            layers.append(validate_arguments)
        if isinstance(self.meter, GatedMeterHook):
            layers.append(self.meter.gate())
        if inner:
            layers.append(output_check)
        elif tool.output_schema is not None:  # nothing between it and the handler: one link less

            async def handler_with_output(ctx: ToolContext) -> Any:
                return render_output(tool, await handler(ctx))

            return compose(layers, handler_with_output)
        return compose([*layers, *inner], handler)

    async def stop(self) -> None:
        """Run plugins' ``on_stop`` (reverse order), stop the meter, close an owned store.
        Idempotent; hook failures are logged, never raised."""
        async with self._lock:
            if not self._started or self._stopped:
                return
            self._lazy = self._lazy_guard = None  # a started loop's end no longer stops us
            self._stopped = True
            self._started = False
            for plugin in reversed(self.plugins):
                try:
                    await _call_hook(plugin_hook(plugin, "on_stop"), self)
                except Exception:
                    logger.exception("plugin %s on_stop failed", plugin_hook(plugin, "meta"))
            if isinstance(self.meter, MeterHook):
                try:
                    await self.meter.stop()
                except Exception:
                    logger.exception("meter stop failed")
            if self.store is not None and self._owns_store:
                try:
                    await self.store.close()
                except Exception:
                    logger.exception("closing the store failed")

    async def __aenter__(self) -> Self:
        await self.start()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.stop()

    # ---- calls --------------------------------------------------------------------------
    async def call_tool_ctx(self, ctx: ToolContext) -> dict[str, Any]:
        """Run one call through the chain and build its ``CallToolResult``.

        Raises:
            AirError: only protocol-level codes (-32020/-32021/-32022); every other failure is
                an ``isError`` result.
        """
        chain = self._chains.get(ctx.tool.name)
        if chain is None:
            await self.start()
            chain = self._chains[ctx.tool.name]
        return await run_call(chain, ctx)

    async def call_tool(
        self, name: str, arguments: Mapping[str, Any] | None = None, **context: Any
    ) -> dict[str, Any]:
        """Call a tool in-process (tests, benchmarks).

        Raises:
            InvalidParamsError: unknown tool.
        """
        tool = self.tools.get(name)
        if tool is None:
            raise InvalidParamsError(f"Unknown tool: {name}")
        if not self._started:  # used before `async with server`: start now, so ctx.store is set
            await self._start_lazily()
            tool = self.tools[name]  # plugins may have replaced it
        ctx = ToolContext(
            tool=tool,
            arguments=dict(arguments or {}),
            server_name=self.name,
            state=self.state,
            store=self.store,
            **context,
        )
        return await self.call_tool_ctx(ctx)

    async def _start_lazily(self) -> None:
        """Start for an in-process call made without ``async with server``, and stop again
        when the event loop ends (``asyncio.run`` closes the async generators it started
        last, after cancelling its tasks): the meter's rollups and the store get written,
        and a call in a later loop starts afresh (a server started in a loop that has ended
        kept a meter that nothing delivered any more)."""
        await self.start()
        token = self._lazy = object()
        guard = self._stop_with_loop(token)
        await anext(guard)
        self._lazy_guard = guard  # kept: a collected guard would stop the server at once

    async def _stop_with_loop(self, token: object) -> AsyncIterator[None]:
        try:
            yield
        finally:
            if self._lazy is token:  # not stopped (and started again) since
                await self.stop()

    async def handle_message(
        self, message: Any, conn: Connection | None = None
    ) -> dict[str, Any] | None:
        """Handle one decoded JSON-RPC message in-process; return the response or ``None``."""
        if conn is None:
            conn = self._inproc
        return await self.dispatcher.handle(message, conn)

    @property
    def _inproc(self) -> Connection:
        conn: Connection | None = self.__dict__.get("_inproc_conn")
        if conn is None:
            conn = Connection(transport="inproc")
            self.__dict__["_inproc_conn"] = conn
        return conn

    # ---- serving ------------------------------------------------------------------------
    async def serve_stdio(self, **options: Any) -> None:
        """Serve over stdin/stdout until EOF or SIGTERM/SIGINT; runs the full lifecycle
        (see :func:`aircore.transports.stdio.serve_stdio` for the options)."""
        from aircore.transports.stdio import serve_stdio

        await serve_stdio(self, **options)

    async def serve_http(self, **options: Any) -> None:
        """Serve Streamable HTTP at ``/mcp`` (:func:`~aircore.transports.http_app.serve_http`)."""
        from aircore.transports.http_app import serve_http

        await serve_http(self, **options)

    def run(self, transport: str | None = None, **options: Any) -> None:
        """Serve until stopped; the transport is auto-detected when not given (or ``"auto"``).

        ``MCP_TRANSPORT`` wins; else a piped stdin means stdio (a client spawned us) and a
        terminal means HTTP (a developer ran us). The name is looked up in
        :data:`aircore.transports.TRANSPORTS`; ``options`` go to that transport's ``serve``
        (``max_message`` for both; ``host``, ``port``, ``token``… for HTTP). Delegates to
        :func:`aircore.serving.run_server`.

        Raises:
            DefinitionError: an unknown transport name, or an option it does not take.
        """
        from aircore.serving import run_server

        run_server(self, transport, **options)


def define_server(
    *,
    name: str,
    version: str = "0.1.0",
    tools: Sequence[Tool] = (),
    resources: Sequence[Resource] = (),
    prompts: Sequence[Prompt] = (),
    storage: Storage = None,
    meter: MeterSlot | bool | None = None,
    use: Sequence[Any] = (),
    middleware: Sequence[Middleware] = (),
    title: str | None = None,
    instructions: str | None = None,
    page_size: int = 100,
    definitions: str | os.PathLike[str] | None = None,
) -> AirServer:
    """Define a server.

    Args:
        name: the server's name (``serverInfo.name``).
        version: ``serverInfo.version``.
        tools, resources, prompts: from :func:`define_tool`, :func:`define_resource`,
            :func:`define_prompt`; more can be added with ``@server.tool`` and ``add_*``.
        storage: a store URL (``"file://.air/data"``, ``"memory://"``…) opened at start and
            closed at stop, or an open :class:`~airstore.Store` (not closed by the server);
            ``None``: when the server meters, the default location (``AIR_DATA_DIR``, else
            ``.air/data`` under the working directory when writable, else
            ``~/.local/share/air/data``; see :func:`airstore.resolve_store_location`), printed
            on stderr by :meth:`AirServer.run`; otherwise an in-memory store. The choice is
            :func:`aircore.storage.open_storage`'s.
        meter: ``None`` (no metering), a :class:`~aircore.types.MeterHook`, or ``True`` to use
            ``airmeter``'s default hook.
        use: plugins, in order.
        middleware: user middleware, outermost first.
        title: ``serverInfo.title``.
        instructions: sent to clients in ``initialize`` / ``server/discover``.
        page_size: list page size for cursor pagination.
        definitions: a tool-definitions directory (``"tool-definitions"``); each tool's
            metadata then comes from its definition file, checked at start (see
            ``docs/tool-definitions.md``).

    Returns:
        The :class:`AirServer`.

    Raises:
        DefinitionError: an invalid definition (duplicate names, bad plugin, bad middleware).
    """
    return AirServer(
        name=name,
        version=version,
        title=title,
        instructions=instructions,
        tools=tools,
        resources=resources,
        prompts=prompts,
        storage=storage,
        meter=meter,
        use=use,
        middleware=middleware,
        page_size=page_size,
        definitions=definitions,
    )
