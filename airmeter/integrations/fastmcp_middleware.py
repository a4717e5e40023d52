"""Meter a FastMCP (4.x) server with a :class:`fastmcp.server.middleware.Middleware` subclass.

Usage::

    from airmeter.integrations import FastMCPMeterMiddleware

    mcp = FastMCP("notes")
    mcp.add_middleware(FastMCPMeterMiddleware(meter, server_name=mcp.name))
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import mcp_types as mt
from fastmcp.exceptions import ToolError
from fastmcp.server.middleware import CallNext, Middleware, MiddlewareContext
from fastmcp.tools.base import ToolResult
from mcp.shared.exceptions import MCPError

from airmeter.classify import Classifier
from airmeter.integrations._common import (
    TOOL_ERROR,
    LayerOf,
    elapsed_ms,
    make_call_meter,
    start_clock,
)
from airmeter.types import Recorder

__all__ = ["FastMCPMeterMiddleware"]

# FastMCP's names for its transports → the names our records use.
_TRANSPORTS = {"stdio": "stdio", "streamable-http": "http", "http": "http", "sse": "sse"}


def _error_type(exc: BaseException) -> str:
    """The most telling error type: FastMCP wraps a tool's exception in a ``ToolError``
    (``raise … from exc``), so the cause's type is reported; a ``ToolError`` the tool raised
    itself is a tool error like an ``isError`` result."""
    root: BaseException = exc
    if type(exc) is ToolError:
        if exc.__cause__ is None:
            return TOOL_ERROR
        root = exc.__cause__
    if isinstance(root, MCPError):
        return str(root.error.code)
    return type(root).__name__


class FastMCPMeterMiddleware(Middleware):
    """Records every tool call of a FastMCP server as a :class:`~airmeter.CallRecord`.

    ``isError`` results give ``error_type="tool_error"``; exceptions give the type of their
    root (see :func:`_error_type`) and are re-raised unchanged for FastMCP to turn into the
    response it always gives.
    """

    def __init__(
        self,
        recorder: Recorder,
        *,
        server_name: str | None = None,
        layer_of: LayerOf | None = None,
        classifier: Classifier | None = None,
        transport: str | None = None,
        measure_sizes: bool = True,
    ) -> None:
        """Create the middleware.

        Args:
            recorder: Receives each record (a :class:`~airmeter.Meter`, or a test double).
            server_name: ``server`` field of the records; by default the recorder's
                ``server`` (a :class:`~airmeter.Meter` has one), else ``""``.
            layer_of: Maps a tool name to its layer; overrides ``classifier``.
            classifier: The classifier; by default the recorder's (a
                :class:`~airmeter.Meter` has one), else a fresh :class:`~airmeter.Classifier`.
            transport: ``transport`` field; by default the transport FastMCP runs on.
            measure_sizes: Record ``input_bytes``/``output_bytes``.
        """
        self._meter = make_call_meter(
            recorder,
            server_name=server_name,
            layer_of=layer_of,
            classifier=classifier,
            measure_sizes=measure_sizes,
        )
        self._transport = transport

    async def on_call_tool(
        self,
        context: MiddlewareContext[mt.CallToolRequestParams],
        call_next: CallNext[mt.CallToolRequestParams, ToolResult],
    ) -> ToolResult:
        """Time the call, record it, pass the result or the exception on unchanged."""
        ts_ms, perf_ns = start_clock()
        common = self._fields(context, ts_ms)
        meter = self._meter
        try:
            result = await call_next(context)
        except BaseException as exc:
            meter.emit(
                latency_ms=elapsed_ms(perf_ns), ok=False, error_type=_error_type(exc), **common
            )
            raise
        latency = elapsed_ms(perf_ns)
        output_bytes = None
        if meter.measure_sizes:
            output_bytes = len(result.model_dump_json(by_alias=True, exclude_none=True))
        meter.emit(
            latency_ms=latency,
            ok=not result.is_error,
            error_type=TOOL_ERROR if result.is_error else None,
            output_bytes=output_bytes,
            **common,
        )
        return result

    def _fields(
        self, context: MiddlewareContext[mt.CallToolRequestParams], ts_ms: int
    ) -> dict[str, Any]:
        message = context.message
        arguments = message.arguments
        fields: dict[str, Any] = {
            "ts_ms": ts_ms,
            "tool": message.name,
            "layer": self._meter.layer(
                message.name, arguments if isinstance(arguments, Mapping) else None
            ),
            "input_bytes": self._meter.input_bytes(arguments),
            "transport": self._transport,
        }
        fctx = context.fastmcp_context
        if fctx is None:
            return fields
        if fields["transport"] is None and fctx.transport is not None:
            fields["transport"] = _TRANSPORTS.get(fctx.transport, fctx.transport)
        rctx = fctx.request_context
        if rctx is not None:
            fields["request_id"] = rctx.request_id
            fields["protocol_version"] = rctx.protocol_version
            client = rctx.session.client_params
            fields["client_name"] = client.client_info.name if client is not None else None
            fields["session_id"] = fctx.session_id
        return fields
