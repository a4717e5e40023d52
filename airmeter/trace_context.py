"""The trace context a call's request carried, kept until its record becomes a span.

MCP passes W3C trace context in ``params._meta`` (``traceparent``, ``tracestate``), so a
client's trace can run through a gateway into a server. A server calls
:func:`remember_parent` with the call's id and the request's ``_meta`` as the call starts; an
:class:`~airmeter.otel.OtelSink` later makes the call's span from its record and takes the
parent from here (:func:`take_parent`), so the span joins the caller's trace. A caller that
made a call's span itself, live (the gateway, which must pass its own span on to the
upstream), marks the call with :func:`mark_traced`, and the sink adds no second span.

Nothing is kept unless an ``OtelSink`` is open in the process (the cost on a call is then one
check), and the tables are bounded. This module imports no OpenTelemetry package: servers call
it on every call, and start-up stays light.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Mapping
from typing import Any, Final

__all__ = [
    "MAX_REMEMBERED",
    "TRACEPARENT",
    "TRACESTATE",
    "exporting",
    "mark_traced",
    "remember_parent",
    "sink_closed",
    "sink_opened",
    "take_parent",
    "take_traced",
]

TRACEPARENT: Final = "traceparent"
TRACESTATE: Final = "tracestate"
MAX_REMEMBERED: Final = 4096
"""Calls remembered at most; the oldest go first (records a sink never sees age out)."""
_MAX_HEADER: Final = 512
"""Longer ``traceparent``/``tracestate`` values are not trace context (W3C: 55 / 512)."""

_open_sinks = 0
_parents: OrderedDict[str, tuple[str, str | None]] = OrderedDict()
_traced: OrderedDict[str, None] = OrderedDict()


def exporting() -> bool:
    """Whether an ``OtelSink`` is open in this process."""
    return _open_sinks > 0


def sink_opened() -> None:
    """Count an open ``OtelSink`` (called by the sink)."""
    global _open_sinks
    _open_sinks += 1


def sink_closed() -> None:
    """Count a closed ``OtelSink``; the tables are emptied when none is left."""
    global _open_sinks
    _open_sinks = max(0, _open_sinks - 1)
    if not _open_sinks:
        _parents.clear()
        _traced.clear()


def remember_parent(call_id: str | None, meta: Mapping[str, Any] | None) -> None:
    """Keep the trace context of a call's request for the span made from its record.

    Args:
        call_id: the call's id (the record's ``call_id``).
        meta: the request's ``params._meta`` (``traceparent``, optional ``tracestate``).
    """
    if not _open_sinks or call_id is None or not meta:
        return
    parent = meta.get(TRACEPARENT)
    if not isinstance(parent, str) or len(parent) > _MAX_HEADER:
        return
    state = meta.get(TRACESTATE)
    _parents[call_id] = (parent, state if isinstance(state, str) and len(state) <= 512 else None)
    if len(_parents) > MAX_REMEMBERED:
        _parents.popitem(last=False)


def take_parent(call_id: str | None) -> tuple[str, str | None] | None:
    """The ``(traceparent, tracestate)`` remembered for a call, forgotten as it is read."""
    if call_id is None or not _parents:
        return None
    return _parents.pop(call_id, None)


def mark_traced(call_id: str) -> None:
    """Say that the call's span was made already (its record gets no second one)."""
    _traced[call_id] = None
    if len(_traced) > MAX_REMEMBERED:
        _traced.popitem(last=False)


def take_traced(call_id: str | None) -> bool:
    """Whether :func:`mark_traced` was called for the call; consumes the mark."""
    if call_id is None or not _traced:
        return False
    return _traced.pop(call_id, False) is None
