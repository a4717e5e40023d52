"""Meter the official SDK's ``MCPServer`` (``mcp`` 2.x) with a context-tier server middleware.

The SDK composes ``server.middleware`` as ``(ctx, call_next)``, outermost first, with its own
``OpenTelemetryMiddleware`` first: so when an OpenTelemetry SDK is installed, our middleware
runs inside the SDK's SERVER span and annotates it (``air.layer`` …) instead of causing a
second span. Usage::

    from airmeter.integrations import instrument_mcp_server

    mcp = MCPServer("notes")
    instrument_mcp_server(mcp, meter)  # meter: anything with .record(CallRecord)
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.server.mcpserver import MCPServer
from mcp.shared.exceptions import MCPError
from mcp_types import INVALID_PARAMS
from pydantic import BaseModel, ValidationError

from airmeter.build import encode_json
from airmeter.classify import Classifier
from airmeter.engine import RefusedResult
from airmeter.integrations._common import CallFacts, HopAnswer, LayerOf, make_engine, store_url_of
from airmeter.outcome import UNKNOWN_TOOL, error_type_of
from airmeter.types import CallInfo, Recorder

__all__ = ["SdkMeterMiddleware", "instrument_mcp_server"]

logger = logging.getLogger(__name__)

_TOOLS_CALL = "tools/call"


def _is_error(result: Any) -> bool:
    if isinstance(result, Mapping):
        return result.get("isError") is True
    return getattr(result, "is_error", False) is True


def _error_type(exc: BaseException) -> str:
    if isinstance(exc, MCPError):
        return str(exc.error.code)
    if isinstance(exc, ValidationError):
        return str(INVALID_PARAMS)
    return error_type_of(exc)


def _invalid(tool: str, exc: ValidationError) -> str:
    """Where and why, without the values (they are the caller's data)."""
    problems = "; ".join(
        f"{'.'.join(str(part) for part in err['loc']) or 'arguments'}: {err['msg']}"
        for err in exc.errors(include_url=False, include_input=False)
    )
    return f"Invalid arguments for tool {tool!r}: {problems}"


def _refused_by(server: MCPServer[Any]) -> RefusedResult | None:
    """How to tell that ``server`` refused a call's arguments (or its tool name) before the
    tool ran, for a call that ended in an ``isError`` result.

    ``MCPServer`` answers arguments that fail a tool's input model, and an unknown tool, with
    an ``isError`` result like any failure of the tool, so the middleware cannot see which it
    was. The arguments are validated again with the tool's own model, the one the SDK checks
    before running the tool, and only after an ``isError`` result: a successful call pays
    nothing. The SDK has no public way to reach a tool's model; this reads its tool manager
    (tests pin it against the installed ``mcp``), and without one every ``isError`` result
    stays a ``tool_error``.
    """
    try:
        tools = server._tool_manager
        get_tool = tools.get_tool
    except AttributeError:
        logger.warning("airmeter: this mcp version hides MCPServer's tools; calls with invalid "
                       "arguments are recorded as tool_error")  # fmt: skip
        return None

    def refused(call: CallInfo) -> str | None:
        tool = get_tool(call.tool_name)
        if tool is None:
            why = f"Unknown tool: {call.tool_name}"
            if isinstance(call, CallFacts):  # ours: recorded as UNKNOWN_TOOL, one series
                call.tool_name = UNKNOWN_TOOL
            return why
        try:
            tool.fn_metadata.validate_arguments(dict(call.arguments or {}))
        except ValidationError as exc:
            return _invalid(call.tool_name, exc)
        except Exception:  # a validator that crashes: the SDK counts it as the tool's failure
            return None
        return None

    return refused


def _encode(result: Any) -> bytes | None:
    if isinstance(result, BaseModel):
        return result.model_dump_json(by_alias=True, exclude_none=True).encode()
    return encode_json(result)


class SdkMeterMiddleware:
    """A ``ServerMiddleware`` that records every ``tools/call`` as a :class:`CallRecord`.

    Success, ``isError`` results (``error_type="tool_error"``; the SDK turns exceptions in a
    tool into such results) and errors raised through the chain (``MCPError`` → its code,
    invalid params → ``"-32602"``, anything else → the exception type) are all recorded;
    exceptions are re-raised unchanged. With ``server`` given, an ``isError`` result that
    answers arguments the tool's input model rejects, or an unknown tool, is recorded as
    aircore records it: ``"-32602"``, class ``refused``, cost 0 (see :func:`_refused_by`).
    The calls run through airmeter's one :class:`~airmeter.engine.MeterEngine`, like an
    aircore server's.
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
        server: MCPServer[Any] | None = None,
    ) -> None:
        """Create the middleware.

        Args:
            recorder: Receives each record (a :class:`~airmeter.Meter`, or a test double).
            server_name: ``server`` field of the records; by default the recorder's
                ``server`` (a :class:`~airmeter.Meter` has one), else ``""``.
            layer_of: Maps a tool name to its layer; overrides ``classifier``.
            classifier: The classifier; by default the recorder's (a
                :class:`~airmeter.Meter` has one), else a fresh :class:`~airmeter.Classifier`.
            transport: ``transport`` field; by default ``"http"`` when the request came over
                HTTP, else ``"stdio"``.
            measure_sizes: Record ``input_bytes``/``output_bytes`` (serializes the result
                once more, off the call path when the recorder is a meter).
            server: The ``MCPServer`` this middleware is installed on, so that invalid
                arguments are recorded as ``refused``, not as ``tool_error``
                (:func:`instrument_mcp_server` passes it).
        """
        self._engine, self._layer_of = make_engine(
            recorder,
            server_name=server_name,
            layer_of=layer_of,
            classifier=classifier,
            measure_sizes=measure_sizes,
            error_type=_error_type,
            error_result=_is_error,
            refused_result=None if server is None else _refused_by(server),
            encode_result=_encode,
        )
        self._transport = transport
        self._store_url = store_url_of(recorder)

    async def __call__(
        self, ctx: ServerRequestContext[Any, Any], call_next: CallNext
    ) -> HandlerResult:
        params = ctx.params
        name = params.get("name") if params is not None else None
        if ctx.method != _TOOLS_CALL or not isinstance(name, str):
            return await call_next(ctx)
        arguments = params.get("arguments") if params is not None else None
        facts = self._facts(ctx, name, arguments)
        meta = params.get("_meta") if params is not None else None
        if not HopAnswer.asked(ctx.meta if meta is None else meta):
            return await self._engine.run(facts, call_next, ctx)
        hop = HopAnswer(self._store_url)  # behind `air gateway`: counted here, once
        facts.call_id = hop.call_id
        return _with_meta(await self._engine.run(facts, call_next, ctx), hop)

    def _facts(self, ctx: ServerRequestContext[Any, Any], tool: str, arguments: Any) -> CallFacts:
        request = ctx.request
        headers = getattr(request, "headers", None)
        client = ctx.session.client_params
        layer_of = self._layer_of
        return CallFacts(
            tool_name=tool,
            arguments=arguments if isinstance(arguments, Mapping) else {},
            request_id=None if ctx.request_id is None else str(ctx.request_id),
            session_id=headers.get("mcp-session-id") if headers is not None else None,
            protocol_version=ctx.protocol_version,
            transport=self._transport or ("http" if request is not None else "stdio"),
            client_name=client.client_info.name if client is not None else None,
            layer=None if layer_of is None else int(layer_of(tool)),
        )


def _with_meta(result: HandlerResult, hop: HopAnswer) -> HandlerResult:
    """``result`` whose ``_meta`` tells the gateway the call was metered here."""
    if isinstance(result, BaseModel) and "meta" in type(result).model_fields:
        return result.model_copy(update={"meta": hop.meta(getattr(result, "meta", None))})
    if isinstance(result, Mapping):
        return {**result, "_meta": hop.meta(result.get("_meta"))}
    return result


def instrument_mcp_server(
    server: MCPServer[Any],
    recorder: Recorder,
    *,
    layer_of: LayerOf | None = None,
    classifier: Classifier | None = None,
    transport: str | None = None,
    measure_sizes: bool = True,
) -> SdkMeterMiddleware:
    """Append a :class:`SdkMeterMiddleware` to ``server.middleware`` (inside the SDK's
    OpenTelemetry span) and return it. ``server_name`` is the server's name.

    Args:
        server: The ``MCPServer``.
        recorder: Receives each record.
        layer_of: Maps a tool name to its layer; overrides ``classifier``.
        classifier: The classifier; by default the recorder's, else a fresh one.
        transport: ``transport`` field; inferred by default.
        measure_sizes: Record input/output sizes in bytes.

    Returns:
        The installed middleware.
    """
    middleware = SdkMeterMiddleware(
        recorder,
        server_name=server.name,
        layer_of=layer_of,
        classifier=classifier,
        transport=transport,
        measure_sizes=measure_sizes,
        server=server,
    )
    server.middleware.append(middleware)
    return middleware
