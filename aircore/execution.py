"""The fixed outer layers of every call: the error boundary and validation.

``run_call`` validates the arguments (compiled once per tool), runs the composed chain (meter →
output check → plugins → user middleware → handler) and shapes the ``CallToolResult``. Every
failure becomes an ``isError`` result ``[code] message``; only the 2026-07-28 protocol errors
propagate as JSON-RPC errors. Calls refused by validation never reach the chain, but the meter
still sees them (through ``meter(ctx, <raises -32602>)``), so every call is metered.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Awaitable, Callable
from typing import Any

from aircore.context import ToolContext
from aircore.errors import (
    HEADER_MISMATCH,
    INTERNAL_ERROR,
    INVALID_PARAMS,
    MISSING_REQUIRED_CLIENT_CAPABILITY,
    UNSUPPORTED_PROTOCOL_VERSION,
    AirError,
)
from aircore.failure_log import FAILURES
from aircore.results import to_call_result

__all__ = ["PROTOCOL_CODES", "error_result", "output_check", "run_call"]

Chain = Callable[[ToolContext], Awaitable[Any]]
Middleware = Callable[[ToolContext, Chain], Awaitable[Any]]

logger = logging.getLogger(__name__)

PROTOCOL_CODES = frozenset(
    {HEADER_MISMATCH, MISSING_REQUIRED_CLIENT_CAPABILITY, UNSUPPORTED_PROTOCOL_VERSION}
)
"""Codes that leave a tool call as JSON-RPC errors instead of ``isError`` results."""


def error_result(code: int, message: str) -> dict[str, Any]:
    """An ``isError`` ``CallToolResult`` with the seed's ``[code] message`` text."""
    return {"content": [{"type": "text", "text": f"[{code}] {message}"}], "isError": True}


def _is_content_result(value: Any) -> bool:
    return isinstance(value, dict) and isinstance(value.get("content"), list)


async def output_check(ctx: ToolContext, call_next: Chain) -> Any:
    """Middleware (just inside the meter) that refuses output not matching ``outputSchema``.

    Raises:
        AirError: -32603 naming every mismatch, so the meter records the call as failed.
    """
    value = await call_next(ctx)
    validator = ctx.tool.output_validator
    if validator is not None and not _is_content_result(value):
        problems = validator.errors(value)
        if problems:
            raise AirError(
                INTERNAL_ERROR,
                f"Output of tool {ctx.tool.name!r} does not match its outputSchema: "
                + "; ".join(problems),
            )
    return value


async def _metered_refusal(meter: Middleware, ctx: ToolContext, error: AirError) -> None:
    async def refuse(_: ToolContext) -> Any:
        raise error

    # The meter re-raises what it recorded; the caller answers with the refusal itself.
    with contextlib.suppress(AirError):
        await meter(ctx, refuse)


async def run_call(
    chain: Chain, ctx: ToolContext, meter: Middleware | None = None
) -> dict[str, Any]:
    """Validate, run ``chain`` and build the ``CallToolResult``.

    Args:
        chain: the composed per-tool chain (meter first, when there is one).
        ctx: the call's context.
        meter: the meter middleware, told about calls that validation refuses.

    Raises:
        AirError: only for :data:`PROTOCOL_CODES`.
    """
    tool = ctx.tool
    validator = tool.validator
    if validator is not None:
        try:
            ctx.arguments = validator.validate(ctx.arguments)
        except ValueError as exc:
            refusal = AirError(INVALID_PARAMS, f"Invalid arguments for tool {tool.name!r}: {exc}")
            if meter is not None:
                await _metered_refusal(meter, ctx, refusal)
            return error_result(refusal.code, refusal.message)
    try:
        value = await chain(ctx)
        if tool.output_schema is not None and not _is_content_result(value):
            return to_call_result(value, structured=True)
        return to_call_result(value)
    except AirError as exc:
        if exc.code in PROTOCOL_CODES:
            raise
        return error_result(exc.code, exc.message)
    except Exception as exc:
        FAILURES.tool_failed(tool.name, ctx.request_id, exc)  # the traceback, for the author
        return error_result(INTERNAL_ERROR, str(exc) or type(exc).__name__)
