"""Spans of calls made outside the sink's worker: annotated, live, or joined to a caller.

The official SDK's ``OpenTelemetryMiddleware`` (and FastMCP) open a SERVER span per request
when an OpenTelemetry SDK is installed. An adapter that sees such a span current calls
:func:`annotate_current_span`; :class:`~airmeter.otel.OtelSink` then records the metrics of
that record but starts no span of its own for it.

A :class:`CallSpan` is a call's span opened when the call starts (the gateway's, which passes
its own context on to the upstream with :meth:`CallSpan.inject`) and finished with the call's
record; :func:`parent_context` turns the trace context a request carried (on the record:
see :mod:`airmeter.trace_context`) into the parent of the span made later from it. Both mark
the record :attr:`~airmeter.CallRecord.traced` before it reaches the meter; no table is kept.
"""

from __future__ import annotations

from collections.abc import Mapping, MutableMapping
from typing import Any, Final

from opentelemetry import trace
from opentelemetry.context import Context
from opentelemetry.trace import SpanKind, Status, StatusCode, Tracer
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

from airmeter.record import CallRecord
from airmeter.semconv import (
    EXECUTE_TOOL,
    GEN_AI_OPERATION_NAME,
    GEN_AI_TOOL_NAME,
    MCP_METHOD_NAME,
    TOOLS_CALL,
    span_attributes,
)
from airmeter.trace_context import TRACEPARENT, TRACESTATE

__all__ = ["CallSpan", "annotate_current_span", "parent_context"]

_W3C: Final = TraceContextTextMapPropagator()


def _mark_traced(record: CallRecord) -> None:
    # The record is frozen for its readers; its span's owner marks it once, before the record
    # is handed to the meter (the idiom of a frozen dataclass's own __post_init__).
    object.__setattr__(record, "traced", True)


def _is_call_span(span: trace.Span, tool: str) -> bool:
    # Only SDK spans expose kind and attributes; an opaque span is not ours to judge.
    kind = getattr(span, "kind", None)
    attributes = getattr(span, "attributes", None)
    if kind is not SpanKind.SERVER or attributes is None:
        return False
    if attributes.get(MCP_METHOD_NAME) != TOOLS_CALL:
        return False
    return attributes.get(GEN_AI_TOOL_NAME) in (None, tool)


def annotate_current_span(record: CallRecord) -> bool:
    """Add the record's attributes (``air.layer``, ids, ``error.type``…) to the current span
    when it is a recording SERVER span for this ``tools/call``.

    Call it from inside the call (middleware), before handing the record to the meter.

    Args:
        record: The finished call.

    Returns:
        ``True`` when the span was annotated; the record is then marked
        :attr:`~airmeter.CallRecord.traced` (a sink makes no second span for it).
    """
    span = trace.get_current_span()
    if not span.is_recording() or not _is_call_span(span, record.tool):
        return False
    span.set_attributes(span_attributes(record))
    _mark_traced(record)
    return True


def _context(carrier: Mapping[str, Any] | None) -> Context | None:
    if not carrier:
        return None
    parent = carrier.get(TRACEPARENT)
    if not isinstance(parent, str):
        return None
    headers = {TRACEPARENT: parent}
    state = carrier.get(TRACESTATE)
    if isinstance(state, str):
        headers[TRACESTATE] = state
    context = _W3C.extract(headers)
    return context if trace.get_current_span(context).get_span_context().is_valid else None


def parent_context(record: CallRecord) -> Context | None:
    """The caller's trace context the record's call carried (``None``: a new trace)."""
    if record.trace_parent is None:
        return None
    return _context({TRACEPARENT: record.trace_parent, TRACESTATE: record.trace_state})


class CallSpan:
    """A call's SERVER span, opened when the call starts and finished with its record.

    Made by :meth:`airmeter.OtelSink.start_call_span`. Never raises into the caller.

    Args:
        tracer: the sink's tracer.
        tool: the tool's name (the span is ``tools/call <tool>``).
        carrier: the request's ``params._meta``; its ``traceparent``/``tracestate`` make the
            span's parent (none: the span starts a trace).
        attributes: more attributes known at the start.
    """

    __slots__ = ("_span",)

    def __init__(
        self,
        tracer: Tracer,
        tool: str,
        *,
        carrier: Mapping[str, Any] | None = None,
        attributes: Mapping[str, str] | None = None,
    ) -> None:
        attrs = {MCP_METHOD_NAME: TOOLS_CALL, GEN_AI_TOOL_NAME: tool,
                 GEN_AI_OPERATION_NAME: EXECUTE_TOOL, **(attributes or {})}  # fmt: skip
        self._span = tracer.start_span(
            f"{TOOLS_CALL} {tool}", context=_context(carrier), kind=SpanKind.SERVER,
            attributes=attrs,
        )  # fmt: skip

    def inject(self, carrier: MutableMapping[str, Any]) -> None:
        """Write this span's ``traceparent`` (and ``tracestate``) into ``carrier`` (the
        ``_meta`` of the request passed on), replacing the caller's."""
        carrier.pop(TRACESTATE, None)
        _W3C.inject(carrier, context=trace.set_span_in_context(self._span))

    def end(self, record: CallRecord, attributes: Mapping[str, str] | None = None) -> None:
        """Finish the span with the record's attributes (``error.type``, ids, layer …) and mark
        the record :attr:`~airmeter.CallRecord.traced`, so the sink makes no second span for it
        (call it before handing the record to the meter).

        Args:
            record: the call's record.
            attributes: more attributes (the gateway's upstream and replica).
        """
        span = self._span
        span.set_attributes({**span_attributes(record), **(attributes or {})})
        if not record.ok:
            span.set_status(Status(StatusCode.ERROR))
        span.end()
        _mark_traced(record)
