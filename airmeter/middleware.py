"""``MeterMiddleware``: the meter hook of an aircore server (the :class:`MeterEngine` with a
lifecycle).

aircore composes it as the outermost link of every tool's chain (inside the error boundary),
and its :meth:`MeterMiddleware.gate` (the budget) just inside argument validation. What it
reads from a call is :class:`~airmeter.types.CallInfo`, which aircore's ``ToolContext``
satisfies. Failed calls are recorded with their error type and class (see
:mod:`airmeter.outcome`) and the exception is re-raised: the meter never swallows an error.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any, TypeVar

from airmeter.budget import REFRESH_S, Budget
from airmeter.build import RecordBuilder
from airmeter.classify import Classifier
from airmeter.context_cost import definition_tokens, store_definitions
from airmeter.engine import MeterEngine, blocked_result
from airmeter.errors import MeterConfigError
from airmeter.fields import DEFAULT_MAX_FIELD_BYTES
from airmeter.meter import Meter
from airmeter.otel_settings import otel_enabled
from airmeter.outcome import CANCELLED_ERROR_TYPE, error_type_of
from airmeter.pseudonym import subject_key
from airmeter.redact import Redactor
from airmeter.settings import TokenMode
from airmeter.tokens import EstimateCounter, TokenCounting, counting_for
from airmeter.types import CallInfo, Sink
from airstore.errors import AirstoreError
from airstore.types import Store

__all__ = [
    "CANCELLED_ERROR_TYPE",
    "MeterMiddleware",
    "blocked_result",
    "create_meter_hook",
    "error_type_of",
]

logger = logging.getLogger(__name__)

C = TypeVar("C", bound=CallInfo)

DEFINITIONS_TIMEOUT = 10.0
"""Longest wait on the store for the definitions' token counts."""


class MeterMiddleware:
    """Meters every tool call through it; satisfies aircore's ``MeterHook``.

    Args:
        meter: the :class:`Meter` to record into; by default one is created on :meth:`start`
            with the server's store (``Meter(store=store, server=server_name)``).
        budget: a :class:`Budget`; blocking budgets refuse calls with an ``isError`` result.
        classifier: overrides the meter's classifier for tools without an explicit layer.
        capture_arguments: record call arguments (redacted, cut); off by default.
        capture_results: record results (redacted, cut); off by default.
        redactor: how to redact captured values and error messages.
        measure_sizes: record input/output sizes in bytes (JSON-encoded, off the call path).
        max_field_bytes: cap of error messages and captured values in a record (encoded
            bytes; 64 … 16384).
        count_tokens: how to count the context tokens of each result (``result_tokens``),
            off the call path: ``"exact"`` (the exact tokenizer when the ``tokens`` extra is
            installed, else the estimate), ``"estimate"`` or ``"off"``; by default
            ``$AIR_TOKENS``, else ``"exact"``.
        clock: seconds since the epoch, stamped as each call's start (``air demo`` back-fills a
            history with its own).
        timer: a monotonic reading in seconds that latencies are measured with (default
            ``time.perf_counter``; a back-filled history passes its own).
        sinks: more sinks for the meter created on start (with ``meter`` given, add them to it).
        meter_options: keyword options for the :class:`Meter` created on start.

    Raises:
        MeterConfigError: both a meter and options to build one, or a bad option.
    """

    def __init__(
        self,
        meter: Meter | None = None,
        *,
        budget: Budget | None = None,
        classifier: Classifier | None = None,
        capture_arguments: bool = False,
        capture_results: bool = False,
        redactor: Redactor | None = None,
        measure_sizes: bool = True,
        max_field_bytes: int = DEFAULT_MAX_FIELD_BYTES,
        count_tokens: TokenMode | None = None,
        clock: Callable[[], float] = time.time,
        timer: Callable[[], float] = time.perf_counter,
        sinks: Sequence[Sink] = (),
        **meter_options: Any,
    ) -> None:
        if meter is not None and (meter_options or sinks):
            raise MeterConfigError("pass either a meter or options to build one, not both")
        self._meter = meter
        self._meter_options = meter_options
        self._sinks = list(sinks)
        self._owns_meter = meter is None
        self.budget = budget
        self._gated = False
        self._classifier = classifier
        self._clock = clock
        self._timer = timer
        self._builder_options: dict[str, Any] = {
            "capture_arguments": capture_arguments,
            "capture_results": capture_results,
            "redactor": redactor or Redactor(),
            "measure_sizes": measure_sizes,
            "max_field_bytes": max_field_bytes,
            "tokens": counting_for(count_tokens),
        }
        RecordBuilder(server="air", instance_id=None, **self._builder_options)  # checks options
        self._engine: MeterEngine | None = None if meter is None else self._engine_for(meter)
        self._definitions: dict[str, list[Mapping[str, Any]]] = {}
        self._context_task: asyncio.Task[None] | None = None
        self._budget_task: asyncio.Future[None] | None = None  # other processes' spending

    def _engine_for(self, meter: Meter, server: str | None = None) -> MeterEngine:
        builder = RecordBuilder(server=server or meter.server, instance_id=meter.instance_id,
                                **self._builder_options)  # fmt: skip
        return MeterEngine(meter, builder=builder, classifier=self._classifier or meter.classifier,
                           budget=self.budget, clock=self._clock,
                           timer=self._timer)  # fmt: skip

    @property
    def meter(self) -> Meter:
        """The meter records go to.

        Raises:
            MeterConfigError: no meter was given and :meth:`start` has not run.
        """
        if self._meter is None:
            raise MeterConfigError("the meter middleware has no meter before start()")
        return self._meter

    async def start(self, *, server_name: str | None = None, store: Store | None = None) -> None:
        """Create (if needed) and start the meter; seed the budget from the store.

        A server started again after a stop gets a new meter (when this middleware created
        the previous one), with the store it has now.
        """
        if self._meter is None or (self._owns_meter and self._meter.closed):
            options = dict(self._meter_options)
            options.setdefault("server", server_name or "air")
            sinks: list[Sink] = [*options.pop("sinks", ()), *self._sinks]
            if otel_enabled():  # OTEL_EXPORTER_OTLP_*ENDPOINT set: export without --otel too
                from airmeter.otel import with_env_otel_sink  # the OTel SDK: only when on

                sinks = with_env_otel_sink(sinks, options["server"])
            self._meter = Meter(store=store, sinks=sinks, **options)
        self._engine = self._engine_for(self._meter, server_name)
        await self._meter.start()
        if self._meter.store is not None:
            self._engine.builder.subject_key = await subject_key(self._meter.store)
        tokens = self._builder_options["tokens"]
        if tokens is not None:
            tokens.preload()  # in the background: the first records may carry no count
        budget_store = self._meter.store
        if self.budget is not None and budget_store is not None:
            name = server_name or self._meter.server  # what its records carry
            await self.budget.load(budget_store, server=name)
            if self._budget_task is None or self._budget_task.done():
                self._budget_task = asyncio.ensure_future(
                    _refresh_budget(self.budget, budget_store, name)
                )

    def add_sink(self, sink: Sink) -> None:
        """Add a sink to the meter, or to the meter :meth:`start` will create."""
        if self._meter is not None:
            self._meter.add_sink(sink)
        else:
            self._sinks.append(sink)

    def describe_tools(self, server_name: str, definitions: Sequence[Mapping[str, Any]]) -> None:
        """Take the server's ``tools/list`` entries; their token counts (the context each
        definition costs) are written to the store in the background, off every call path.

        Args:
            server_name: the server they belong to.
            definitions: the entries as ``tools/list`` sends them (``_meta`` is not counted).
        """
        self._definitions[server_name] = [dict(d) for d in definitions]
        tokens = self._builder_options["tokens"]
        meter = self._meter
        if tokens is None or meter is None or meter.store is None:
            return
        if self._context_task is not None and not self._context_task.done():
            self._context_task.cancel()
        self._context_task = asyncio.ensure_future(
            self._record_definitions(meter.store, tokens, server_name)
        )

    async def _record_definitions(
        self, store: Store, tokens: TokenCounting, server: str, *, now: bool = False
    ) -> None:
        """Count and store one server's definitions: with the tokenizer once it has loaded, or
        with the estimate at once (``now``: the server is stopping)."""
        try:
            counter = EstimateCounter() if now else await tokens.ready()
            defs = self._definitions.get(server, [])
            counts = await asyncio.to_thread(definition_tokens, defs, counter)
            await asyncio.wait_for(store_definitions(store, server, counts, counter),
                                   DEFINITIONS_TIMEOUT)  # fmt: skip
        except asyncio.CancelledError:
            raise
        except Exception:  # context cost is telemetry: never breaks the server
            logger.exception("airmeter: recording the tool definitions' tokens failed")

    async def _finish_definitions(self) -> None:
        """At stop: let a pending count finish when the tokenizer is ready, else store the
        estimate now (a stop never waits for the tokenizer to load)."""
        task = self._context_task
        if task is None or task.done():
            return
        tokens = self._builder_options["tokens"]
        meter = self._meter
        if tokens is not None and tokens.counter is not None:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(asyncio.shield(task), DEFINITIONS_TIMEOUT)
            if task.done():
                return
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
        if tokens is not None and meter is not None and meter.store is not None:
            for server in list(self._definitions):
                await self._record_definitions(meter.store, tokens, server, now=True)

    async def stop(self) -> None:
        """Stop the meter (delivering everything pending) if this middleware created it."""
        task, self._budget_task = self._budget_task, None
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
        if self.budget is not None:
            try:  # the last calls' cost reaches the store the other replicas read
                await self.budget.send_charges()
            except AirstoreError as exc:
                logger.warning("airmeter: could not store the budget's last charges: %s", exc)
        await self._finish_definitions()
        if self._meter is not None and self._owns_meter:
            await self._meter.stop()
        elif self._meter is not None:
            await self._meter.flush()

    async def __call__(self, ctx: C, call_next: Callable[[C], Awaitable[Any]]) -> Any:
        """Run the rest of the chain and record the call; errors are recorded and re-raised.

        Unless a server composed :meth:`gate`, a blocking budget that is spent refuses the
        call here, before the rest of the chain runs.
        """
        engine = self._engine
        if engine is None:  # not started: meter nothing, change nothing
            return await call_next(ctx)
        if self._gated or self.budget is None:
            return await engine.run(ctx, call_next, ctx)
        return await engine.run(ctx, self._gate_then(call_next), ctx)

    def _gate_then(self, call_next: Callable[[C], Awaitable[Any]]) -> Callable[[C], Any]:
        async def gated(ctx: C) -> Any:
            return await self._gate(ctx, call_next)

        return gated

    def gate(self) -> Callable[[C, Callable[[C], Awaitable[Any]]], Awaitable[Any]]:
        """The budget link, for a server to compose just inside argument validation.

        From then on the meter's own link leaves the budget to this one, so a call refused
        for its arguments is recorded as that refusal whatever the budget says, and a call the
        budget blocks is recorded as ``budget`` (aircore composes it for every tool).

        Returns:
            An ``async (ctx, call_next)`` middleware.
        """
        self._gated = True
        return self._gate

    async def _gate(self, ctx: C, call_next: Callable[[C], Awaitable[Any]]) -> Any:
        engine = self._engine
        if engine is None:
            return await call_next(ctx)
        return await engine.gate(ctx, call_next, ctx)


def create_meter_hook(**options: Any) -> MeterMiddleware:
    """The meter aircore creates for ``define_server(meter=True)``.

    Args:
        **options: passed to :class:`MeterMiddleware` (``budget``, ``capture_arguments`` …,
            and :class:`Meter` options).

    Returns:
        A middleware that creates its meter on ``start(server_name=, store=)``.
    """
    return MeterMiddleware(**options)


async def _refresh_budget(budget: Budget, store: Store, server: str) -> None:
    """Every :data:`~airmeter.budget.REFRESH_S`: take in what every process serving
    ``server`` into ``store`` has spent, so a limit holds for all of them together (each one
    alone would let its own share through)."""
    while True:
        await asyncio.sleep(REFRESH_S)
        try:
            await budget.load(store, server=server)
        except Exception as exc:  # a store hiccup: the next refresh tries again
            logger.warning("airmeter: could not read the budget's spending: %s", exc)
