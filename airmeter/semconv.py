"""The MCP semantic conventions for OpenTelemetry, as names and one mapping from a record.

Status of the upstream conventions: *Development*. Keeping every name here means a revision
of the conventions is a one-file change. Shared by :class:`~airmeter.otel.OtelSink`, the
span helper and :mod:`airmeter.prometheus`.
"""

from __future__ import annotations

from typing import Final

from airmeter.outcome import error_class_of
from airmeter.pseudonym import PSEUDONYM_PREFIX
from airmeter.record import CallRecord

__all__ = [
    "AIR_AUTH",
    "AIR_CALL_ID",
    "AIR_ERROR_CLASS",
    "AIR_LAYER",
    "AIR_SERVER",
    "CALLS_COUNTER",
    "CLIENT_ID",
    "DURATION_BUCKETS_S",
    "DURATION_HISTOGRAM",
    "ENDUSER_ID",
    "ENDUSER_PSEUDO_ID",
    "ERROR_TYPE",
    "GEN_AI_OPERATION_NAME",
    "GEN_AI_TOOL_NAME",
    "JSONRPC_REQUEST_ID",
    "MCP_METHOD_NAME",
    "MCP_PROTOCOL_VERSION",
    "MCP_SESSION_ID",
    "NETWORK_TRANSPORT",
    "TOOLS_CALL",
    "metric_attributes",
    "network_transport",
    "span_attributes",
    "span_name",
]

MCP_METHOD_NAME: Final = "mcp.method.name"
GEN_AI_TOOL_NAME: Final = "gen_ai.tool.name"
GEN_AI_OPERATION_NAME: Final = "gen_ai.operation.name"
JSONRPC_REQUEST_ID: Final = "jsonrpc.request.id"
MCP_PROTOCOL_VERSION: Final = "mcp.protocol.version"
MCP_SESSION_ID: Final = "mcp.session.id"
NETWORK_TRANSPORT: Final = "network.transport"
ERROR_TYPE: Final = "error.type"
AIR_LAYER: Final = "air.layer"
AIR_ERROR_CLASS: Final = "air.error.class"
AIR_CALL_ID: Final = "air.call.id"
AIR_SERVER: Final = "air.server"
ENDUSER_ID: Final = "enduser.id"
"""The caller's subject as the record holds it: the keyed pseudonym (``p:…``) by default."""
ENDUSER_PSEUDO_ID: Final = "enduser.pseudo.id"
"""Set beside ``enduser.id`` when the subject is a pseudonym (semantic conventions 1.32+)."""
CLIENT_ID: Final = "client.id"
"""The OAuth client the call came from (spans only: its cardinality is the callers')."""
AIR_AUTH: Final = "air.auth"
"""How the call was admitted: ``none``, ``token`` or ``oauth``."""

TOOLS_CALL: Final = "tools/call"
EXECUTE_TOOL: Final = "execute_tool"

DURATION_HISTOGRAM: Final = "mcp.server.operation.duration"
"""Histogram of call durations, unit ``s``."""

CALLS_COUNTER: Final = "air.mcp.calls"
"""Counter of calls, attributes ``air.layer``, ``gen_ai.tool.name`` and ``error.type``."""

DURATION_BUCKETS_S: Final[tuple[float, ...]] = (
    0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0, 2.0, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0,
)  # fmt: skip
"""The advised explicit bucket boundaries of ``mcp.server.operation.duration``, in seconds."""

_OTHER_ERROR: Final = "_OTHER"

# The record's `transport` is what the server calls it; the conventions want the OSI-ish
# transport underneath (`pipe` for stdio, `tcp` for HTTP).
_TRANSPORTS: Final[dict[str, str]] = {
    "stdio": "pipe",
    "pipe": "pipe",
    "http": "tcp",
    "https": "tcp",
    "streamable-http": "tcp",
    "streamable_http": "tcp",
    "sse": "tcp",
    "tcp": "tcp",
    "unix": "unix",
    "quic": "quic",
}


def span_name(record: CallRecord) -> str:
    """``"tools/call <tool>"``."""
    return f"{TOOLS_CALL} {record.tool}"


def network_transport(transport: str | None) -> str | None:
    """Map a server's transport name to ``network.transport`` (``pipe``/``tcp``), or ``None``."""
    if transport is None:
        return None
    return _TRANSPORTS.get(transport.lower())


def _error_type(record: CallRecord) -> str | None:
    if record.ok:
        return None
    return record.error_type or _OTHER_ERROR


def metric_attributes(record: CallRecord) -> dict[str, str]:
    """The low-cardinality attributes of a record, for metric points (no ids)."""
    attrs = {
        MCP_METHOD_NAME: TOOLS_CALL,
        GEN_AI_TOOL_NAME: record.tool,
        GEN_AI_OPERATION_NAME: EXECUTE_TOOL,
        AIR_LAYER: record.layer.code,
    }
    if record.protocol_version is not None:
        attrs[MCP_PROTOCOL_VERSION] = record.protocol_version
    transport = network_transport(record.transport)
    if transport is not None:
        attrs[NETWORK_TRANSPORT] = transport
    error = _error_type(record)
    if error is not None:
        attrs[ERROR_TYPE] = error
        attrs[AIR_ERROR_CLASS] = record.error_class or error_class_of(record.error_type)
    return attrs


def span_attributes(record: CallRecord) -> dict[str, str]:
    """Every span attribute of a record: the metric attributes plus ids and the server name."""
    attrs = metric_attributes(record)
    if record.request_id is not None:
        attrs[JSONRPC_REQUEST_ID] = record.request_id
    if record.call_id is not None:
        attrs[AIR_CALL_ID] = record.call_id
    if record.session_id is not None:
        attrs[MCP_SESSION_ID] = record.session_id
    if record.server:
        attrs[AIR_SERVER] = record.server
    if record.auth is not None:  # who called: spans only, never metric points (cardinality)
        attrs[AIR_AUTH] = record.auth
        if record.client_id is not None:
            attrs[CLIENT_ID] = record.client_id
        subject = record.subject
        if subject is not None:
            attrs[ENDUSER_ID] = subject
            if subject.startswith(PSEUDONYM_PREFIX):
                attrs[ENDUSER_PSEUDO_ID] = subject
    return attrs
