"""``MeterEngine``: the one metering engine behind aircore's meter hook and both SDK adapters.

Per call, on the call path, it does only what cannot wait: read the clock, classify the tool
(cached), open the usage scope for :func:`~airmeter.report_usage`, run the rest of the chain,
tell the outcome apart and, with a budget, account the cost. Everything else (sizes, captured
values, redaction, cutting, the frozen :class:`~airmeter.CallRecord`) happens once in the
meter's delivery task (see :mod:`airmeter.build`). An adapter that hands records to a plain
:class:`~airmeter.Recorder` gets them built at the end of the call instead.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, TypeVar, cast

from airmeter.budget import TOKENS_LIMIT, Budget
from airmeter.build import PendingCall, RecordBuilder, ToolInfo
from airmeter.classify import MAX_CACHED_TOOLS, Classifier
from airmeter.errors import BudgetExceededError
from airmeter.meter import Meter
from airmeter.outcome import (
    BUDGET_ERROR_TYPE,
    CANCELLED_ERROR_TYPE,
    INVALID_PARAMS,
    TOOL_ERROR,
    error_class_of,
    error_type_of,
)
from airmeter.types import CallInfo, CallSuspended, Recorder
from airmeter.usage import _CURRENT, CallUsage

__all__ = [
    "CANCELLED_MESSAGE",
    "ErrorResult",
    "ErrorTyper",
    "MeterEngine",
    "RefusedResult",
    "blocked_result",
    "is_error_result",
]

logger = logging.getLogger(__name__)

A = TypeVar("A")
R = TypeVar("R")

ErrorTyper = Callable[[BaseException], str]
"""Maps an exception raised through the meter to its ``error_type``."""
ErrorResult = Callable[[Any], bool]
"""Whether a call's result is an ``isError`` result."""
RefusedResult = Callable[[CallInfo], str | None]
"""For a call that ended in an ``isError`` result: why its arguments were refused before the
tool ran (a server that answers invalid arguments with such a result), else ``None``."""

CANCELLED_MESSAGE = "the call was cancelled before it finished"

_perf = time.perf_counter


def blocked_result(message: str) -> dict[str, Any]:
    """The ``isError`` tool result a blocked call answers with."""
    return {"content": [{"type": "text", "text": message}], "isError": True}


def is_error_result(value: Any) -> bool:
    """Whether ``value`` is a tool result with ``isError: true`` (a dict or a mapping)."""
    if type(value) is dict:  # the common case, without an ABC check
        return value.get("isError") is True
    return isinstance(value, Mapping) and value.get("isError") is True


class MeterEngine:
    """Times, classifies and records every call run through it; errors are re-raised.

    Args:
        recorder: a :class:`~airmeter.Meter` (records are then built in its delivery task), or
            any :class:`~airmeter.Recorder` (records are built at the end of each call).
        builder: how records are built (server name, capture, redaction, caps).
        classifier: decides the layer of tools without an explicit one.
        budget: a :class:`~airmeter.Budget` to account costs in (and, through :meth:`gate`,
            to block calls with).
        error_type: the ``error_type`` of an exception (adapters translate their framework's).
        error_result: whether a result is an ``isError`` result.
        refused_result: for an ``isError`` result, why the arguments were refused before the
            tool ran, else ``None``; a refused call is recorded like aircore's -32602 (class
            ``refused``, cost 0). Adapters of servers that answer invalid arguments with an
            ``isError`` result pass it.
        on_record: called with each finished call before it is submitted (adapters annotate
            the framework's span, building the record only when a span records).
        clock: seconds since the epoch, the start of each call (a back-filled history passes
            its own).
        timer: a monotonic reading in seconds; a call's latency is the difference across it
            (a back-filled history passes its own).
    """

    def __init__(
        self,
        recorder: Recorder,
        *,
        builder: RecordBuilder,
        classifier: Classifier,
        budget: Budget | None = None,
        error_type: ErrorTyper = error_type_of,
        error_result: ErrorResult = is_error_result,
        refused_result: RefusedResult | None = None,
        on_record: Callable[[PendingCall], object] | None = None,
        clock: Callable[[], float] = time.time,
        timer: Callable[[], float] = _perf,
    ) -> None:
        self.builder = builder
        self._clock = clock
        self._timer = timer
        self.classifier = classifier
        self.budget = budget
        self._error_type = error_type
        self._error_result = error_result
        self._refused_result = refused_result
        self._on_record = on_record
        self._tools: dict[str, ToolInfo] = {}
        if isinstance(recorder, Meter):
            self._submit: Callable[[PendingCall], None] = recorder.defer
        else:
            plain = recorder

            def submit(p: PendingCall) -> None:
                plain.record(p.build())

            self._submit = submit

    def tool_info(self, call: CallInfo) -> ToolInfo:
        """The cached layer, category and version of the call's tool."""
        tool = call.tool_name
        info = self._tools.get(tool)
        if info is None:
            schema = call.input_schema
            params = schema if schema is not None else call.arguments
            layer = self.classifier.classify(tool, params, call.annotations, call.layer).layer
            meta = call.tool_meta
            category = version = None
            if meta is not None:
                # "categoryKey" is the standard's _meta name; "category_key" what older servers sent
                c, v = meta.get("categoryKey", meta.get("category_key")), meta.get("version")
                category = None if c is None else str(c)
                version = None if v is None else str(v)
            if len(self._tools) >= MAX_CACHED_TOOLS:
                self._tools.clear()  # a flood of made-up names: start over, stay bounded
            info = self._tools[tool] = ToolInfo(tool, layer, category, version)
        return info

    async def gate(self, call: CallInfo, call_next: Callable[[A], Awaitable[R]], arg: A) -> R:
        """The budget's gate: refuse the call (raise) when a blocking budget is spent.

        Composed inside argument validation, so a call refused for its arguments is recorded
        as that refusal whatever the budget says.

        Raises:
            BudgetExceededError: the budget refuses the call (the engine records it and answers
                with an ``isError`` result).
        """
        budget = self.budget
        if budget is not None:
            refusal = budget.refusal()
            if refusal is None and budget.counted:
                refusal = await budget.admit()  # per client, through the store
            if refusal is not None:
                raise refusal
        return await call_next(arg)

    async def run(self, call: CallInfo, call_next: Callable[[A], Awaitable[R]], arg: A) -> R:
        """Run ``call_next(arg)`` and record the call described by ``call``.

        Returns:
            What ``call_next`` returned; for a call a budget blocked, an ``isError`` result.

        Raises:
            BaseException: whatever ``call_next`` raised, unchanged (after recording it).
        """
        info = self._tools.get(call.tool_name) or self.tool_info(call)
        budget = self.budget
        usage = CallUsage(None if budget is None or budget.tokens_per_call is None
                          else budget.check_tokens)  # fmt: skip
        ts = self._clock()
        token = _CURRENT.set(usage)
        _perf = self._timer
        t0 = _perf()
        try:
            result = await call_next(arg)
        except BudgetExceededError as exc:
            latency = (_perf() - t0) * 1000.0
            if exc.limit == TOKENS_LIMIT:  # the handler ran and reported too many tokens
                self._finish(call, info, ts, latency, False, BUDGET_ERROR_TYPE, exc.message,
                             usage, None)  # fmt: skip
            else:  # the gate refused it: nothing ran, nothing is spent
                self._emit(call, info, ts, latency, False, BUDGET_ERROR_TYPE, "budget",
                           exc.message, None, usage, 0.0)  # fmt: skip
            return cast(R, blocked_result(exc.message))
        except CallSuspended:  # input required: the server did what it should
            self._finish(call, info, ts, (_perf() - t0) * 1000.0, True, None, None, usage, None)
            raise
        except BaseException as exc:
            latency = (_perf() - t0) * 1000.0
            etype = self._error_type(exc)
            eclass = error_class_of(etype)
            if eclass == "refused":  # rejected before the handler: the call costs nothing
                self._emit(call, info, ts, latency, False, etype, eclass, str(exc), None, usage,
                           0.0)  # fmt: skip
            else:
                message = CANCELLED_MESSAGE if etype == CANCELLED_ERROR_TYPE else str(exc)
                self._finish(call, info, ts, latency, False, etype, message, usage, None)
            raise
        finally:
            _CURRENT.reset(token)
        latency = (_perf() - t0) * 1000.0
        if self._error_result(result):
            refused = self._refused_result
            why = None if refused is None else self._refusal(refused, call)
            if why is not None:  # rejected before the tool ran: the call costs nothing
                self._emit(call, info, ts, latency, False, INVALID_PARAMS, "refused", why, None,
                           usage, 0.0)  # fmt: skip
                return result
            error = self._finish(call, info, ts, latency, False, TOOL_ERROR, None, usage, result)
            return cast(R, error)
        return cast(R, self._finish(call, info, ts, latency, True, None, None, usage, result))

    @staticmethod
    def _refusal(refused: RefusedResult, call: CallInfo) -> str | None:
        try:
            return refused(call)
        except Exception:  # metering never breaks the call: then it is the tool's error
            logger.exception("telling whether tool %r refused its arguments failed",
                             call.tool_name)  # fmt: skip
            return None

    def _finish(
        self, call: CallInfo, info: ToolInfo, ts: float, latency: float, ok: bool,
        error_type: str | None, message: str | None, usage: CallUsage, result: Any,
    ) -> Any:  # fmt: skip
        """Account the call's cost (and the per-call token limit), then record it."""
        reported = call.usage
        if reported:  # the context's usage dict (aircore's ToolContext.usage)
            usage.check = None
            usage.add(tokens_in=reported.get("tokens_in"), tokens_out=reported.get("tokens_out"),
                      cost=reported.get("cost"))  # fmt: skip
        budget = self.budget
        eclass = None if ok else error_class_of(error_type)
        if budget is not None:
            if ok and budget.tokens_per_call is not None:
                try:
                    budget.check_tokens(usage)
                except BudgetExceededError as exc:
                    ok, error_type, eclass, message = (
                        False,
                        BUDGET_ERROR_TYPE,
                        "budget",
                        exc.message,
                    )
                    result = blocked_result(exc.message)
            cost: float | None = budget.cost_of(info.layer, usage)
            budget.add(cost or 0.0)
        else:
            cost = usage.cost
        self._emit(call, info, ts, latency, ok, error_type, eclass, message, result, usage, cost)
        return result

    def _emit(
        self, call: CallInfo, info: ToolInfo, ts: float, latency: float, ok: bool,
        error_type: str | None, error_class: str | None, message: str | None, result: Any,
        usage: CallUsage, cost: float | None,
    ) -> None:  # fmt: skip
        try:
            if info.tool != call.tool_name:  # the adapter found the tool unknown (UNKNOWN_TOOL)
                info = self.tool_info(call)
            pending = PendingCall(self.builder, call, info, ts, latency, ok, error_type,
                                  error_class, message, result, usage.tokens_in, usage.tokens_out,
                                  cost)  # fmt: skip
            if self._on_record is not None:
                self._on_record(pending)
            self._submit(pending)
        except Exception:  # metering never breaks the call
            logger.exception("metering the call of tool %r failed", call.tool_name)
