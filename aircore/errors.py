"""Errors raised by aircore.

Every error aircore raises is an :class:`AirError`; it carries a JSON-RPC ``code`` so the error
boundary can answer with it.

    AirError                    code: any JSON-RPC / MCP error code (-32603 by default)
    ├── DefinitionError         a bad tool/resource/prompt/plugin/server definition (at definition)
    ├── InvalidParamsError      -32602: bad arguments, unknown tool/prompt/resource, bad cursor
    ├── MethodNotFoundError     -32601: unknown JSON-RPC method
    ├── InvalidRequestError     -32600: not a valid JSON-RPC request
    ├── ToolTimeoutError        -32001: a call ran past ``timeout_plugin``'s limit
    ├── ResultError             -32603: a tool returned a value that is not JSON
    └── ElicitationError        elicitation is not available or failed
"""

from __future__ import annotations

from typing import Any

__all__ = [
    "INTERNAL_ERROR",
    "INVALID_PARAMS",
    "INVALID_REQUEST",
    "METHOD_NOT_FOUND",
    "PARSE_ERROR",
    "AirError",
    "DefinitionError",
    "ElicitationError",
    "InvalidParamsError",
    "InvalidRequestError",
    "MethodNotFoundError",
    "ResultError",
    "ToolTimeoutError",
    "error_object",
]

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603
REQUEST_TIMEOUT = -32001
REQUEST_CANCELLED = -32800
"""A 2025-era request ended by the client's ``notifications/cancelled`` whose HTTP POST is still
open: the wire ends a request only with a response (the official SDK's server answers so)."""
HEADER_MISMATCH = -32020
MISSING_REQUIRED_CLIENT_CAPABILITY = -32021
UNSUPPORTED_PROTOCOL_VERSION = -32022


def error_object(code: int, message: str, data: Any = None) -> dict[str, Any]:
    """The JSON-RPC ``error`` object (``data`` only when given)."""
    err: dict[str, Any] = {"code": code, "message": message}
    if data is not None:
        err["data"] = data
    return err


class AirError(Exception):
    """An error with a JSON-RPC code, raised by handlers, middleware or aircore itself.

    Args:
        code: the JSON-RPC / MCP error code the client sees.
        message: a readable one-line description.
        data: optional JSON ``error.data``.
    """

    def __init__(self, code: int, message: str, *, data: Any = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.data = data

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.code}, {self.message!r})"

    def to_error(self) -> dict[str, Any]:
        """The JSON-RPC ``error`` object."""
        return error_object(self.code, self.message, self.data)


class DefinitionError(AirError, ValueError):
    """A tool, resource, prompt, plugin or server definition is invalid."""

    def __init__(self, message: str) -> None:
        super().__init__(INTERNAL_ERROR, message)


class InvalidParamsError(AirError):
    """-32602: the request's params are invalid (also: unknown tool, prompt or resource)."""

    def __init__(self, message: str, *, data: Any = None) -> None:
        super().__init__(INVALID_PARAMS, message, data=data)


class MethodNotFoundError(AirError):
    """-32601: the method does not exist."""

    def __init__(self, message: str, *, data: Any = None) -> None:
        super().__init__(METHOD_NOT_FOUND, message, data=data)


class InvalidRequestError(AirError):
    """-32600: the message is not a valid JSON-RPC request."""

    def __init__(self, message: str, *, data: Any = None) -> None:
        super().__init__(INVALID_REQUEST, message, data=data)


class ToolTimeoutError(AirError):
    """-32001: a tool call exceeded its time limit."""

    def __init__(self, message: str, *, data: Any = None) -> None:
        super().__init__(REQUEST_TIMEOUT, message, data=data)


class ResultError(AirError):
    """-32603: a tool returned a value that cannot become MCP content (it is not JSON).

    Attributes:
        type_name: the offending value's type.
        path: where it sits in the result (``result['when']``).
    """

    def __init__(self, message: str, *, type_name: str, path: str) -> None:
        super().__init__(INTERNAL_ERROR, message, data={"type": type_name, "path": path})
        self.type_name = type_name
        self.path = path


class ElicitationError(AirError):
    """Elicitation is not possible (client lacks the capability) or failed."""
