"""Put our attributes on a span that already traces the call, instead of starting a second one.

The official SDK's ``OpenTelemetryMiddleware`` (and FastMCP) open a SERVER span per request
when an OpenTelemetry SDK is installed. An adapter that sees such a span current calls
:func:`annotate_current_span`; :class:`~airmeter.otel.OtelSink` then records the metrics of
that record but starts no span of its own for it.
"""

from __future__ import annotations

from collections import OrderedDict
from typing import Final

from opentelemetry import trace
from opentelemetry.trace import SpanKind

from airmeter.record import CallRecord
from airmeter.semconv import GEN_AI_TOOL_NAME, MCP_METHOD_NAME, TOOLS_CALL, span_attributes

__all__ = ["annotate_current_span", "was_traced"]

_MAX_TRACED: Final = 4096
# Records whose call span someone else owns, keyed by id(). The value keeps the record alive
# so its id cannot be reused while it is here; bounded so records a sink never sees (no
# OtelSink configured, or dropped under overload) age out.
_traced: OrderedDict[int, CallRecord] = OrderedDict()


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
        ``True`` when the span was annotated; the record is then marked so that
        :func:`was_traced` is true for it once.
    """
    span = trace.get_current_span()
    if not span.is_recording() or not _is_call_span(span, record.tool):
        return False
    span.set_attributes(span_attributes(record))
    _traced[id(record)] = record
    if len(_traced) > _MAX_TRACED:
        _traced.popitem(last=False)
    return True


def was_traced(record: CallRecord) -> bool:
    """Whether :func:`annotate_current_span` put this record on an existing span; consumes
    the mark (a sink asks once per record)."""
    if not _traced:
        return False
    return _traced.pop(id(record), None) is record
