"""The fixed outer layers of every call: the error boundary and validation.

``run_call`` validates the arguments (compiled once per tool), runs the composed chain (meter →
plugins → user middleware → handler), checks structured output against the tool's
``outputSchema`` and shapes the ``CallToolResult``. Every failure becomes an ``isError`` result
``[code] message``; only the 2026-07-28 protocol errors propagate as JSON-RPC errors.
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
from aircore.results import to_call_result

__all__ = ["PROTOCOL_CODES", "error_result", "run_call"]

logger = logging.getLogger(__name__)

PROTOCOL_CODES = frozenset(
    {HEADER_MISMATCH, MISSING_REQUIRED_CLIENT_CAPABILITY, UNSUPPORTED_PROTOCOL_VERSION}
)
"""Codes that leave a tool call as JSON-RPC errors instead of ``isError`` results."""


def error_result(code: int, message: str) -> dict[str, Any]:
    """An ``isError`` ``CallToolResult`` with the seed's ``[code] message`` text."""
    return {"content": [{"type": "text", "text": f"[{code}] {message}"}], "isError": True}


async def run_call(
    chain: Callable[[ToolContext], Awaitable[Any]], ctx: ToolContext
) -> dict[str, Any]:
    """Validate, run ``chain`` and build the ``CallToolResult``.

    Raises:
        AirError: only for :data:`PROTOCOL_CODES`.
    """
    tool = ctx.tool
    validator = tool.validator
    if validator is not None:
        try:
            ctx.arguments = validator.validate(ctx.arguments)
        except ValueError as exc:
            return error_result(INVALID_PARAMS, f"Invalid arguments for tool {tool.name!r}: {exc}")
    try:
        value = await chain(ctx)
        if tool.output_schema is not None and not (
            isinstance(value, dict) and isinstance(value.get("content"), list)
        ):
            problems = tool.output_validator.errors(value) if tool.output_validator else []
            if problems:
                return error_result(
                    INTERNAL_ERROR,
                    f"Output of tool {tool.name!r} does not match its outputSchema: "
                    + "; ".join(problems),
                )
            return to_call_result(value, structured=True)
        return to_call_result(value)
    except AirError as exc:
        if exc.code in PROTOCOL_CODES:
            raise
        return error_result(exc.code, exc.message)
    except Exception as exc:
        logger.warning("tool %s failed: %s: %s", tool.name, type(exc).__name__, exc)
        return error_result(INTERNAL_ERROR, str(exc) or type(exc).__name__)
