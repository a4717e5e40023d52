"""The trace context a call's request carries, read once and carried on the call.

MCP passes W3C trace context in ``params._meta`` (``traceparent``, ``tracestate``), so a
client's trace can run through a gateway into a server. A server reads it with
:func:`trace_context_of` as the call starts and puts it on the call
(:attr:`~airmeter.CallInfo.traceparent` / :attr:`~airmeter.CallInfo.tracestate`: aircore's
``ToolContext`` carries both); the record built from the call keeps it
(:attr:`~airmeter.CallRecord.trace_parent`, never written to the call log), and an
:class:`~airmeter.otel.OtelSink` makes the call's span a child of it. A call whose span exists
already (the gateway's live span, or the SDK's span an adapter annotated) has a record marked
:attr:`~airmeter.CallRecord.traced`, and the sink adds no second span.

Nothing is kept in this module: the context travels with the call and its record. It imports
no OpenTelemetry package: servers call it on every call that carries trace context, and
start-up stays light.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

__all__ = ["MAX_HEADER", "TRACEPARENT", "TRACESTATE", "trace_context_of"]

TRACEPARENT: Final = "traceparent"
TRACESTATE: Final = "tracestate"
MAX_HEADER: Final = 512
"""Longer ``traceparent``/``tracestate`` values are not trace context (W3C: 55 / 512)."""


def trace_context_of(meta: Mapping[str, Any] | None) -> tuple[str | None, str | None]:
    """The ``(traceparent, tracestate)`` a request's ``params._meta`` carries.

    Args:
        meta: the request's ``params._meta`` (or ``None``).

    Returns:
        Each value when it is a string of at most :data:`MAX_HEADER` characters, else
        ``None``; no ``tracestate`` without a ``traceparent``. Whether the ``traceparent``
        parses is the sink's question (an invalid one starts a new trace).
    """
    if not meta:
        return None, None
    parent = meta.get(TRACEPARENT)
    if not isinstance(parent, str) or len(parent) > MAX_HEADER:
        return None, None
    state = meta.get(TRACESTATE)
    return parent, state if isinstance(state, str) and len(state) <= MAX_HEADER else None
