"""The fixed links of every call: the error boundary, argument validation and the output check.

``run_call`` is the error boundary: it runs the composed chain (meter → validation → the meter's
gate → output check → plugins → user middleware → handler) and shapes the ``CallToolResult``.
Every failure becomes an ``isError`` result ``[code] message``; only the 2026-07-28 protocol
errors propagate as JSON-RPC errors. Validation is a link like any other: a call refused for its
arguments raises -32602 through the meter, which records it, and the boundary answers it.
Validation checks the compiled schema and, for tools with typed parameters, converts the
arguments to the handler's types in the same step (:func:`check_arguments`).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from aircore.context import ToolContext
from aircore.errors import (
    HEADER_MISMATCH,
    INTERNAL_ERROR,
    MISSING_REQUIRED_CLIENT_CAPABILITY,
    UNSUPPORTED_PROTOCOL_VERSION,
    AirError,
    InvalidParamsError,
)
from aircore.failure_log import FAILURES, masked_text
from aircore.results import structured_result, to_call_result
from airmeter.types import CallSuspended

if TYPE_CHECKING:
    from aircore.tool import Tool

__all__ = [
    "PROTOCOL_CODES",
    "check_arguments",
    "error_result",
    "exception_text",
    "exit_failure",
    "keep_call_result",
    "output_check",
    "render_output",
    "run_call",
    "validate_arguments",
]

Chain = Callable[[ToolContext], Awaitable[Any]]

logger = logging.getLogger(__name__)

PROTOCOL_CODES = frozenset(
    {HEADER_MISMATCH, MISSING_REQUIRED_CLIENT_CAPABILITY, UNSUPPORTED_PROTOCOL_VERSION}
)
"""Codes that leave a tool call as JSON-RPC errors instead of ``isError`` results."""


def error_result(code: int, message: str) -> dict[str, Any]:
    """An ``isError`` ``CallToolResult`` with the seed's ``[code] message`` text."""
    return {"content": [{"type": "text", "text": f"[{code}] {message}"}], "isError": True}


def exception_text(exc: BaseException) -> str:
    """What ``exc`` says (its class name when it says nothing), even when its ``__str__``
    raises."""
    try:
        text = str(exc)
    except Exception:  # a broken __str__ must not turn a tool failure into a protocol error
        return f"{type(exc).__name__} (its message cannot be printed)"
    return text or type(exc).__name__


def exit_failure(who: str, exc: BaseException) -> AirError | None:
    """The -32603 failure that a ``BaseException`` escaping a handler (one that is not an
    ``Exception``) stands for, or ``None`` for one that must go on: the cancellation of the
    call, ``KeyboardInterrupt`` (the operator ends the server), ``GeneratorExit`` (the
    coroutine is being closed) and a suspended call (an input round). A ``SystemExit``
    (argparse in a wrapped CLI), a ``CancelledError`` the handler raised without being
    cancelled, or a library's own ``BaseException`` would otherwise leave the request without
    an answer.

    Args:
        who: the handler, for the message (``"tool 'x'"``).
        exc: what it raised.
    """
    if isinstance(exc, KeyboardInterrupt | GeneratorExit | CallSuspended):
        return None  # GeneratorExit: the coroutine is being closed (a task destroyed pending)
    if isinstance(exc, asyncio.CancelledError):
        task = asyncio.current_task()
        if task is None or task.cancelling():
            return None
        return AirError(INTERNAL_ERROR, f"{who} raised CancelledError without being cancelled")
    if isinstance(exc, SystemExit):
        return AirError(INTERNAL_ERROR, f"{who} tried to exit the server (SystemExit: {exc.code})")
    return AirError(INTERNAL_ERROR, f"{type(exc).__name__}: {exception_text(exc)}")


def _is_content_result(value: Any) -> bool:
    return isinstance(value, dict) and isinstance(value.get("content"), list)


async def output_check(ctx: ToolContext, call_next: Chain) -> Any:
    """Middleware (inside validation, so inside the meter, around plugins and user middleware):
    the ``CallToolResult`` is built here, so a value that cannot become one is recorded as
    failed. With an ``outputSchema`` the value becomes ``structuredContent`` (a returned model,
    dataclass or ``TypedDict`` serialized, a non-object type wrapped as ``{"result": …}``) and
    is checked (:func:`render_output`); without one see :func:`keep_call_result`.

    Raises:
        AirError: -32603 naming every mismatch with the ``outputSchema``, or the place of a value
            that is not JSON (``ResultError``), so the meter records the call as failed.
    """
    value = await call_next(ctx)
    if ctx.tool.output_schema is None:
        return keep_call_result(ctx, value)
    return render_output(ctx.tool, value)


def keep_call_result(ctx: ToolContext, value: Any) -> Any:
    """Build the ``CallToolResult`` of a tool without an ``outputSchema`` inside the chain and
    keep it on ``ctx`` (:func:`run_call` answers with it), while the chain goes on returning
    ``value``: the meter measures and redacts the tool's own value, and records a value that
    is not JSON as the failure the client gets.

    Returns:
        ``value`` itself.

    Raises:
        ResultError: -32603, ``value`` is not JSON (the message names where).
    """
    ctx.call_result = to_call_result(value)
    ctx.call_result_of = value
    return value


def render_output(tool: Tool, value: Any) -> Any:
    """The ``CallToolResult`` of a value of a tool with an ``outputSchema`` (see
    :func:`output_check`); a content result (``{"content": [...]}``) passes as it is.

    Raises:
        AirError: -32603, the value does not match the ``outputSchema``.
    """
    if value.__class__ is str and tool.output_text:  # -> str, the common case, kept cheap
        text = [{"type": "text", "text": value}]
        return {"content": text, "structuredContent": {"result": value}}
    if _is_content_result(value):
        return value
    structure = tool.structure
    structured = value if structure is None else structure(value)
    validator = tool.output_validator
    if validator is not None:
        problems = validator.errors(structured)
        if problems:
            raise AirError(
                INTERNAL_ERROR,
                f"Output of tool {tool.name!r} does not match its outputSchema: "
                + "; ".join(problems),
            )
    return structured_result(structured, wrapped=tool.output_wrapped)


def check_arguments(ctx: ToolContext) -> None:
    """The validation step: check ``ctx.arguments`` against the tool's compiled schema (schema
    defaults filled in), then, for tools with typed parameters, convert them to the handler's
    annotated types (``ctx.bound_arguments``).

    Raises:
        InvalidParamsError: -32602 naming every bad field.
    """
    tool = ctx.tool
    validator = tool.validator
    if validator is not None:
        try:
            ctx.arguments = validator.validate(ctx.arguments)
        except ValueError as exc:
            raise InvalidParamsError(f"Invalid arguments for tool {tool.name!r}: {exc}") from None
    convert = tool.convert
    if convert is not None:
        arguments = ctx.arguments
        ctx.bound_arguments = convert(arguments)
        ctx.bound_source = arguments


async def validate_arguments(ctx: ToolContext, call_next: Chain) -> Any:
    """Middleware (just inside the meter): :func:`check_arguments`, then the rest of the chain.

    Raises:
        InvalidParamsError: -32602 naming every problem; nothing inside this link runs.
    """
    check_arguments(ctx)
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
    except AirError as exc:
        if exc.code in PROTOCOL_CODES:
            raise
        return error_result(exc.code, exc.message)
    except Exception as exc:
        # the traceback, for the author
        FAILURES.tool_failed(tool.name, ctx.request_id, exc, call_id=ctx.call_id)
        # the client gets what the log and the meter show: secret-shaped parts masked
        return error_result(INTERNAL_ERROR, masked_text(exception_text(exc)))
    result = ctx.call_result
    if result is not None and ctx.call_result_of is value:  # built inside the chain
        return result
    try:
        return to_call_result(value)  # a value a meter's budget or a plugin put in its place
    except AirError as exc:
        return error_result(exc.code, exc.message)
