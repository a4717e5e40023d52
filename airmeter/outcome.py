"""How a call ended: its error type (kept as the server said it) and its error class.

The class keeps apart what a tool's error rate should count from what it should not:

=============  ===========================================================  ===============
class          when                                                         in error rate
=============  ===========================================================  ===============
tool_error     the tool returned an ``isError`` result                      yes
exception      the handler raised (``error_type`` keeps the type name), or  yes
               the server failed inside the call (-32603, internal error),
               or a gateway could not reach it (-32003)
timeout        the call ran past its time limit (-32001, ``TimeoutError``)  yes
refused        the arguments were rejected before the handler (-32602)      no
protocol       any other JSON-RPC error code                                no
cancelled      the client (or a shutdown) cancelled the call                no
budget         a budget blocked the call                                    no
=============  ===========================================================  ===============

-32603 is JSON-RPC's internal error: aircore answers a handler's own faults with it (a value
that is not JSON, a ``SystemExit``, a result off its ``outputSchema``), so it is the tool's
failure, never the protocol's. -32003 is air gateway's "upstream unavailable" (the server's
process died, its connection was lost, no replica was healthy): the server failed the call,
so a dead upstream shows in its error rate and SLOs instead of as 100 % errors at 0 % rate.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import Final, Literal

from airmeter.types import CodedError

__all__ = [
    "BUDGET_ERROR_TYPE",
    "CANCELLED_ERROR_TYPE",
    "ERROR_CLASSES",
    "RATE_CLASSES",
    "TOOL_ERROR",
    "UNKNOWN_TOOL",
    "ErrorClass",
    "classes_of",
    "error_class_of",
    "error_type_of",
    "rate_errors",
]

ErrorClass = Literal[
    "tool_error", "exception", "timeout", "refused", "protocol", "cancelled", "budget"
]
ERROR_CLASSES: Final[tuple[ErrorClass, ...]] = (
    "tool_error", "exception", "timeout", "refused", "protocol", "cancelled", "budget",
)  # fmt: skip
"""Every error class, those counted in a tool's error rate first."""
RATE_CLASSES: Final[frozenset[str]] = frozenset({"tool_error", "exception", "timeout"})
"""The classes a tool's error rate counts."""

TOOL_ERROR: Final = "tool_error"
"""The ``error_type`` of an ``isError`` result."""
CANCELLED_ERROR_TYPE: Final = "cancelled"
"""The ``error_type`` of a call cancelled before it finished."""
BUDGET_ERROR_TYPE: Final = "budget_exceeded"
"""The ``error_type`` of a call a budget blocked."""
UNKNOWN_TOOL: Final = "(unknown tool)"
"""The ``tool`` of a refused call of a tool the server does not have (the SDK adapters): the
name a client made up stays in ``error_message`` only, so made-up names never multiply series,
rollup rows or cached entries. No real tool can have it (names are ``A-Za-z0-9_-.``)."""

INVALID_PARAMS: Final = "-32602"
INTERNAL_ERROR: Final = "-32603"
REQUEST_TIMEOUT: Final = "-32001"
UPSTREAM_UNAVAILABLE: Final = "-32003"
_TIMEOUT_TYPES: Final = frozenset({"TimeoutError", "ToolTimeoutError", "CancelledTimeout"})


def error_type_of(exc: BaseException) -> str:
    """``str(code)`` for an exception carrying a negative int JSON-RPC ``code`` (a
    :class:`~airmeter.types.CodedError`), ``"cancelled"`` for a cancellation, else the
    exception's type name.

    Positive codes (an HTTP status on ``urllib``'s ``HTTPError``) are not JSON-RPC codes.
    """
    if isinstance(exc, asyncio.CancelledError):
        return CANCELLED_ERROR_TYPE
    if isinstance(exc, CodedError):
        code = exc.code
        if type(code) is int and code < 0:
            return str(code)
    return type(exc).__name__


_CACHE: dict[str, ErrorClass] = {
    TOOL_ERROR: "tool_error",
    INVALID_PARAMS: "refused",
    INTERNAL_ERROR: "exception",
    REQUEST_TIMEOUT: "timeout",
    UPSTREAM_UNAVAILABLE: "exception",
    CANCELLED_ERROR_TYPE: "cancelled",
    BUDGET_ERROR_TYPE: "budget",
}


def error_class_of(error_type: str | None) -> ErrorClass:
    """The class of an ``error_type`` (a record's, or a rollup's key): a pure function, so
    rollups written before classes existed are classified the same way.

    ``None`` (an error without a type) counts as an exception.
    """
    if error_type is None:
        return "exception"
    found = _CACHE.get(error_type)
    if found is not None:
        return found
    if error_type in _TIMEOUT_TYPES:
        cls: ErrorClass = "timeout"
    elif error_type.isascii() and error_type.lstrip("-").isdigit():
        cls = "protocol"
    else:
        cls = "exception"
    if len(_CACHE) < 4096:
        _CACHE[error_type] = cls
    return cls


def classes_of(errors_by_type: Mapping[str, int]) -> dict[str, int]:
    """Failed calls by error class (see :mod:`airmeter.outcome`), busiest class first."""
    out: dict[str, int] = {}
    for etype, n in errors_by_type.items():
        cls = error_class_of(etype)
        out[cls] = out.get(cls, 0) + n
    return dict(sorted(out.items(), key=lambda kv: (-kv[1], kv[0])))


def rate_errors(errors_by_class: Mapping[str, int]) -> int:
    """The failures a tool's error rate counts (``tool_error``, ``exception``, ``timeout``)."""
    return sum(n for cls, n in errors_by_class.items() if cls in RATE_CLASSES)
