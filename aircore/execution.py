"""The fixed links of every call: the error boundary, argument validation and the output check.

``run_call`` is the error boundary: it runs the composed chain (meter → validation → the meter's
gate → output check → plugins → user middleware → handler) and shapes the ``CallToolResult``.
Every failure becomes an ``isError`` result ``[code] message``; only the 2026-07-28 protocol
errors propagate as JSON-RPC errors. Validation is a link like any other: a call refused for its
arguments raises -32602 through the meter, which records it, and the boundary answers it.
"""

from __future__ import annotations

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

__all__ = ["PROTOCOL_CODES", "error_result", "output_check", "run_call", "validate_arguments"]

Chain = Callable[[ToolContext], Awaitable[Any]]

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
    """Middleware (inside validation) that refuses output not matching ``outputSchema``.

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


async def validate_arguments(ctx: ToolContext, call_next: Chain) -> Any:
    """Middleware (just inside the meter) that checks the arguments against ``inputSchema``
    (compiled once per tool) and passes the validated copy on.

    Raises:
        AirError: -32602 naming every problem; nothing inside this link runs.
    """
    tool = ctx.tool
    validator = tool.validator
    if validator is not None:
        try:
            ctx.arguments = validator.validate(ctx.arguments)
        except ValueError as exc:
            message = f"Invalid arguments for tool {tool.name!r}: {exc}"
            raise AirError(INVALID_PARAMS, message) from exc
    return await call_next(ctx)


async def run_call(chain: Chain, ctx: ToolContext) -> dict[str, Any]:
    """The error boundary: run ``chain`` and build the ``CallToolResult``.

    Args:
        chain: the composed per-tool chain (meter first, when there is one).
        ctx: the call's context.

    Raises:
        AirError: only for :data:`PROTOCOL_CODES`.
    """
    tool = ctx.tool
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
