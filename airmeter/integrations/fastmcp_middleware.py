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
from fastmcp.exceptions import NotFoundError, ToolError, ValidationError
from fastmcp.server.middleware import CallNext, Middleware, MiddlewareContext
from fastmcp.tools.base import ToolResult
from mcp.shared.exceptions import MCPError
from pydantic import ValidationError as PydanticValidationError

from airmeter.classify import Classifier
from airmeter.integrations._common import CallFacts, HopAnswer, LayerOf, make_engine, store_url_of
from airmeter.outcome import INVALID_PARAMS, TOOL_ERROR, UNKNOWN_TOOL, error_type_of
from airmeter.types import Recorder

__all__ = ["FastMCPMeterMiddleware"]

# FastMCP's names for its transports → the names our records use.
_TRANSPORTS = {"stdio": "stdio", "streamable-http": "http", "http": "http", "sse": "sse"}
_SERVER_ERROR = -32000  # the code FastMCP gives a tool past its timeout


def _error_type(exc: BaseException) -> str:
    """The most telling error type: FastMCP wraps a tool's exception in a ``ToolError``
    (``raise … from exc``), so the cause's type is reported; a ``ToolError`` the tool raised
    itself is a tool error like an ``isError`` result. Arguments FastMCP rejects before the
    tool runs (its ``ValidationError`` made from pydantic's) and an unknown tool
    (``NotFoundError``), both raised unwrapped, are ``"-32602"``, class ``refused``, as in
    aircore. A tool that outlives its FastMCP ``timeout=`` comes as ``MCPError(-32000)``
    raised ``from None`` while handling the ``TimeoutError``: it is ``"TimeoutError"``, class
    ``timeout``, not the generic server-error code."""
    if isinstance(exc, NotFoundError) or (
        isinstance(exc, ValidationError) and isinstance(exc.__cause__, PydanticValidationError)
    ):
        return INVALID_PARAMS  # a ValidationError the tool's body raised: a tool's error
    root: BaseException = exc
    if type(exc) is ToolError:
        if exc.__cause__ is None:
            return TOOL_ERROR
        root = exc.__cause__
    if isinstance(root, MCPError):
        if root.error.code == _SERVER_ERROR and isinstance(root.__context__, TimeoutError):
            return "TimeoutError"
        return str(root.error.code)
    return error_type_of(root)


def _is_error(result: Any) -> bool:
    return isinstance(result, ToolResult) and result.is_error is True


def _encode(result: Any) -> bytes | None:
    if isinstance(result, ToolResult):
        return result.model_dump_json(by_alias=True, exclude_none=True).encode()
    return None


def _request_meta(context: MiddlewareContext[mt.CallToolRequestParams]) -> object:
    """The request's ``_meta`` (FastMCP keeps it on the request context, not the message)."""
    if context.message.meta is not None:
        return context.message.meta
    fctx = context.fastmcp_context
    rctx = None if fctx is None else fctx.request_context
    return None if rctx is None else rctx.meta


class FastMCPMeterMiddleware(Middleware):
    """Records every tool call of a FastMCP server as a :class:`~airmeter.CallRecord`.

    ``isError`` results give ``error_type="tool_error"``; exceptions give the type of their
    root (see :func:`_error_type`) and are re-raised unchanged for FastMCP to turn into the
    response it always gives. The calls run through airmeter's one
    :class:`~airmeter.engine.MeterEngine`, like an aircore server's.
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
        self._engine, self._layer_of = make_engine(
            recorder,
            server_name=server_name,
            layer_of=layer_of,
            classifier=classifier,
            measure_sizes=measure_sizes,
            error_type=_error_type,
            error_result=_is_error,
            encode_result=_encode,
        )
        self._transport = transport
        self._store_url = store_url_of(recorder)

    async def on_call_tool(
        self,
        context: MiddlewareContext[mt.CallToolRequestParams],
        call_next: CallNext[mt.CallToolRequestParams, ToolResult],
    ) -> ToolResult:
        """Time the call, record it, pass the result or the exception on unchanged.

        A call of a tool FastMCP does not have is recorded under :data:`UNKNOWN_TOOL` (the
        name asked for stays in the message), so made-up names stay one series.
        """
        facts = self._facts(context)
        hop = HopAnswer(self._store_url) if HopAnswer.asked(_request_meta(context)) else None
        if hop is not None:  # behind `air gateway`: counted here, once (airmeter.hops)
            facts.call_id = hop.call_id

        async def call(ctx: MiddlewareContext[mt.CallToolRequestParams]) -> ToolResult:
            try:
                return await call_next(ctx)
            except NotFoundError:
                facts.tool_name = UNKNOWN_TOOL
                raise

        result = await self._engine.run(facts, call, context)
        if hop is not None:
            result.meta = hop.meta(result.meta)
        return result

    def _facts(self, context: MiddlewareContext[mt.CallToolRequestParams]) -> CallFacts:
        message = context.message
        arguments = message.arguments
        layer_of = self._layer_of
        facts = CallFacts(
            tool_name=message.name,
            arguments=arguments if isinstance(arguments, Mapping) else {},
            transport=self._transport,
            layer=None if layer_of is None else int(layer_of(message.name)),
        )
        fctx = context.fastmcp_context
        if fctx is None:
            return facts
        if facts.transport is None and fctx.transport is not None:
            facts.transport = _TRANSPORTS.get(fctx.transport, fctx.transport)
        rctx = fctx.request_context
        if rctx is not None:
            facts.request_id = None if rctx.request_id is None else str(rctx.request_id)
            facts.protocol_version = rctx.protocol_version
            client = rctx.session.client_params
            facts.client_name = client.client_info.name if client is not None else None
            facts.session_id = fctx.session_id
        return facts
