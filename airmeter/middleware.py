"""The meter middleware: fills aircore's meter slot (structurally; airmeter never imports it).

It is an ``async (ctx, call_next)`` middleware with ``start(server_name=, store=)``/``stop()``.
From the call context it reads (each optional) ``tool_name``, ``arguments``, ``request_id``,
``session_id``, ``protocol_version``, ``transport``, ``client_name``, ``server_name``, ``layer``,
``annotations``, ``tool_meta`` and ``usage`` (a dict where handlers put ``tokens_in``,
``tokens_out``, ``cost``); handlers may also call :func:`airmeter.report_usage`. Failed calls
are recorded with their error type (``tool_error`` for an ``isError`` result, the JSON-RPC code
of an exception carrying ``code``, ``cancelled`` for an ``asyncio.CancelledError``, else the
exception's type name) and the exception is re-raised: the meter never swallows an error.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

import orjson

from airmeter.budget import BUDGET_ERROR_TYPE, Budget
from airmeter.classify import Classifier
from airmeter.errors import BudgetExceededError, MeterConfigError
from airmeter.layers import Layer
from airmeter.meter import Meter
from airmeter.otel_settings import otel_enabled
from airmeter.record import RECORD_FIELDS
from airmeter.redact import Redactor
from airmeter.types import Sink
from airmeter.usage import _CURRENT, CallUsage
from airstore.types import Store

__all__ = [
    "CANCELLED_ERROR_TYPE",
    "MeterMiddleware",
    "blocked_result",
    "create_meter_hook",
    "error_type_of",
]

logger = logging.getLogger(__name__)

# The tuple built in MeterMiddleware._record follows this order; checked at import.
assert RECORD_FIELDS == (
    "ts_ms", "server", "tool", "layer", "latency_ms", "ok", "error_type", "request_id",
    "session_id", "protocol_version", "transport", "client_name", "instance_id", "input_bytes",
    "output_bytes", "tokens_in", "tokens_out", "cost", "error_message", "category",
    "tool_version", "arguments", "result",
)  # fmt: skip

_perf = time.perf_counter
_dumps = orjson.dumps
_now = time.time


def blocked_result(message: str) -> dict[str, Any]:
    """The ``isError`` tool result a blocked call answers with."""
    return {"content": [{"type": "text", "text": message}], "isError": True}


_INVALID_PARAMS = "-32602"
CANCELLED_ERROR_TYPE = "cancelled"
"""The ``error_type`` of a call cancelled before it finished (``notifications/cancelled`` from
the client, or the server shutting down): ``ok`` is false, but it is not the tool's failure."""
_CANCELLED_MESSAGE = "the call was cancelled before it finished"


def error_type_of(exc: BaseException) -> str:
    """``str(code)`` for an exception carrying an int JSON-RPC ``code``, else its type name."""
    code = getattr(exc, "code", None)
    if isinstance(code, int) and not isinstance(code, bool):
        return str(code)
    return type(exc).__name__


def _is_error_result(value: Any) -> bool:
    if type(value) is dict:  # the common case, without an ABC check
        return value.get("isError") is True
    if isinstance(value, Mapping):
        return value.get("isError") is True
    return getattr(value, "isError", None) is True or getattr(value, "is_error", None) is True


def _arguments_refused(ctx: Any) -> bool:
    """Whether the context's arguments fail its tool's validator (aircore's ``tool.validator``).

    aircore meters a call it refuses for its arguments by handing the meter a ``call_next``
    that raises -32602; the client gets that refusal whatever the meter answers. A budget that
    would block such a call lets it through to ``call_next`` instead, so the record says what
    the client got (and the refusal, which runs nothing, costs nothing).
    """
    validate = getattr(getattr(getattr(ctx, "tool", None), "validator", None), "validate", None)
    if validate is None:
        return False
    try:
        validate(getattr(ctx, "arguments", None))
    except ValueError:
        return True
    except Exception:  # a validator that cannot judge: keep the budget's refusal
        return False
    return False


def _size(value: Any) -> int | None:
    try:
        return len(_dumps(value, default=str))
    except (TypeError, orjson.JSONEncodeError):
        return None


def _jsonable(value: Any) -> Any:
    try:
        return orjson.loads(orjson.dumps(value, default=str))
    except (TypeError, orjson.JSONEncodeError):
        return repr(value)


class _ToolInfo:
    """What the middleware caches per tool: its layer, category and version."""

    __slots__ = ("category", "layer", "version")

    def __init__(self, layer: Layer, category: str | None, version: str | None) -> None:
        self.layer = layer
        self.category = category
        self.version = version


class MeterMiddleware:
    """Meters every tool call through it; satisfies aircore's ``MeterHook``.

    Args:
        meter: the :class:`Meter` to record into; by default one is created on :meth:`start`
            with the server's store (``Meter(store=store, server=server_name)``).
        budget: a :class:`Budget`; blocking budgets refuse calls with an ``isError`` result.
        classifier: overrides the meter's classifier for tools without an explicit layer.
        capture_arguments: record call arguments (redacted); off by default.
        capture_results: record results (redacted); off by default.
        redactor: how to redact captured arguments and results.
        measure_sizes: record input/output sizes in bytes (JSON-encoded).
        meter_options: keyword options for the :class:`Meter` created on start.
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
        **meter_options: Any,
    ) -> None:
        if meter is not None and meter_options:
            raise MeterConfigError("pass either a meter or options to build one, not both")
        self._meter = meter
        self._meter_options = meter_options
        self._owns_meter = meter is None
        self.budget = budget
        self._classifier = classifier
        self._capture_args = capture_arguments
        self._capture_results = capture_results
        self._redactor = redactor or Redactor()
        self._sizes = measure_sizes
        self._tools: dict[str, _ToolInfo] = {}
        self._server = meter.server if meter is not None else "air"
        self._instance = meter.instance_id if meter is not None else None

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
            if otel_enabled():  # OTEL_EXPORTER_OTLP_*ENDPOINT set: export without --otel too
                from airmeter.otel_attach import with_env_otel_sink

                options["sinks"] = with_env_otel_sink(options.get("sinks", ()), options["server"])
            self._meter = Meter(store=store, **options)
        self._server = server_name or self._meter.server
        self._instance = self._meter.instance_id
        await self._meter.start()
        budget_store = self._meter.store
        if self.budget is not None and budget_store is not None:
            await self.budget.load(budget_store)

    def add_sink(self, sink: Sink) -> None:
        """Add a sink to the meter, or to the meter :meth:`start` will create."""
        if self._meter is not None:
            self._meter.add_sink(sink)
        else:
            self._meter_options["sinks"] = [*self._meter_options.get("sinks", ()), sink]

    async def stop(self) -> None:
        """Stop the meter (delivering everything pending) if this middleware created it."""
        if self._meter is not None and self._owns_meter:
            await self._meter.stop()
        elif self._meter is not None:
            await self._meter.flush()

    def _tool_info(self, ctx: Any, tool: str) -> _ToolInfo:
        meta = getattr(ctx, "tool_meta", None) or {}
        explicit = getattr(ctx, "layer", None)
        classifier = self._classifier or self.meter.classifier
        params = getattr(getattr(ctx, "tool", None), "input_schema", None)
        if params is None:
            params = getattr(ctx, "arguments", None)
        layer = classifier.classify(tool, params, getattr(ctx, "annotations", None),
                                    explicit).layer  # fmt: skip
        # "categoryKey" is the standard's _meta name; "category_key" what older servers sent
        category = (meta.get("categoryKey", meta.get("category_key"))
                    if isinstance(meta, Mapping) else None)  # fmt: skip
        version = meta.get("version") if isinstance(meta, Mapping) else None
        info = _ToolInfo(layer, None if category is None else str(category),
                         None if version is None else str(version))  # fmt: skip
        self._tools[tool] = info
        return info

    async def __call__(self, ctx: Any, call_next: Callable[[Any], Awaitable[Any]]) -> Any:
        """Run the rest of the chain and record the call; errors are recorded and re-raised."""
        meter = self._meter
        if meter is None:  # not started: meter nothing, change nothing
            return await call_next(ctx)
        tool: str = ctx.tool_name
        info = self._tools.get(tool)
        if info is None:
            info = self._tool_info(ctx, tool)
        budget = self.budget
        usage = CallUsage(None if budget is None or budget.tokens_per_call is None
                          else budget.check_tokens)  # fmt: skip
        ts = _now()
        if budget is not None:
            refusal = budget.check_call()
            if refusal is not None and not _arguments_refused(ctx):
                self._record(ctx, tool, info, ts, 0.0, False, BUDGET_ERROR_TYPE, refusal,
                             usage, 0.0, None)  # fmt: skip
                return blocked_result(refusal)
        token = _CURRENT.set(usage)
        t0 = _perf()
        try:
            result = await call_next(ctx)
        except BudgetExceededError as exc:
            latency = (_perf() - t0) * 1000.0
            self._finish(ctx, tool, info, ts, latency, False, BUDGET_ERROR_TYPE, exc.message,
                         usage, None)  # fmt: skip
            return blocked_result(exc.message)
        except BaseException as exc:
            latency = (_perf() - t0) * 1000.0
            if type(exc).__name__ == "InputRequired":  # elicitation: a normal outcome
                self._finish(ctx, tool, info, ts, latency, True, None, None, usage, None)
            elif isinstance(exc, asyncio.CancelledError):  # not the tool's failure
                self._finish(ctx, tool, info, ts, latency, False, CANCELLED_ERROR_TYPE,
                             _CANCELLED_MESSAGE, usage, None)  # fmt: skip
            else:
                message = str(exc)
                etype = error_type_of(exc)
                if etype == _INVALID_PARAMS:  # refused arguments: the call costs nothing
                    self._record(ctx, tool, info, ts, latency, False, etype, message, usage,
                                 0.0, None)  # fmt: skip
                else:
                    self._finish(ctx, tool, info, ts, latency, False, etype, message, usage,
                                 None)  # fmt: skip
            raise
        finally:
            _CURRENT.reset(token)
        latency = (_perf() - t0) * 1000.0
        if _is_error_result(result):
            return self._finish(ctx, tool, info, ts, latency, False, "tool_error", None,
                                usage, result)  # fmt: skip
        return self._finish(ctx, tool, info, ts, latency, True, None, None, usage, result)

    def _finish(
        self, ctx: Any, tool: str, info: _ToolInfo, ts: float, latency: float, ok: bool,
        error_type: str | None, message: str | None, usage: CallUsage, result: Any,
    ) -> Any:  # fmt: skip
        reported = getattr(ctx, "usage", None)
        if reported:  # the context's usage dict (aircore's ToolContext.usage)
            usage.check = None
            usage.add(tokens_in=reported.get("tokens_in"), tokens_out=reported.get("tokens_out"),
                      cost=reported.get("cost"))  # fmt: skip
        budget = self.budget
        if budget is not None:
            if ok and budget.tokens_per_call is not None:
                try:
                    budget.check_tokens(usage)
                except BudgetExceededError as exc:
                    ok, error_type, message = False, BUDGET_ERROR_TYPE, exc.message
                    result = blocked_result(exc.message)
            cost: float | None = budget.cost_of(info.layer, usage)
            budget.add(cost or 0.0)
        else:
            cost = usage.cost
        self._record(ctx, tool, info, ts, latency, ok, error_type, message, usage, cost, result)
        return result

    def _record(
        self, ctx: Any, tool: str, info: _ToolInfo, ts: float, latency: float, ok: bool,
        error_type: str | None, message: str | None, usage: CallUsage, cost: float | None,
        result: Any,
    ) -> None:  # fmt: skip
        arguments = getattr(ctx, "arguments", None)
        meter = self._meter
        assert meter is not None
        sizes = self._sizes
        # Values in RECORD_FIELDS order; the delivery task builds the frozen CallRecord.
        meter.record_fields((
            int(ts * 1000), getattr(ctx, "server_name", None) or self._server, tool,
            info.layer, latency, ok, error_type, getattr(ctx, "request_id", None),
            getattr(ctx, "session_id", None), getattr(ctx, "protocol_version", None),
            getattr(ctx, "transport", None), getattr(ctx, "client_name", None),
            self._instance,
            _size(arguments) if sizes and arguments is not None else None,
            _size(result) if sizes and result is not None else None,
            usage.tokens_in, usage.tokens_out, cost, message, info.category, info.version,
            self._redactor(_jsonable(arguments)) if self._capture_args and arguments else None,
            self._redactor(_jsonable(result)) if self._capture_results else None,
        ))  # fmt: skip


def create_meter_hook(**options: Any) -> MeterMiddleware:
    """The factory aircore loads for ``define_server(meter=True)``.

    Args:
        **options: passed to :class:`MeterMiddleware` (``budget``, ``capture_arguments`` …,
            and :class:`Meter` options).

    Returns:
        A middleware that creates its meter on ``start(server_name=, store=)``.
    """
    return MeterMiddleware(**options)
