"""Errors raised by airgateway.

Every error the gateway raises is a :class:`GatewayError`; those a client can see carry the
JSON-RPC ``code`` it gets.

    GatewayError                 code: the JSON-RPC code a client sees (-32603 by default)
    ├── ConfigError              a bad configuration file: ``path``, ``line``, ``key``
    ├── UpstreamError            an upstream answered with a JSON-RPC error (passed through)
    ├── UpstreamUnavailableError      no answer: the replica is down, died or refused (``replica``)
    │   └── UpstreamTimeoutError      no answer within the call's ``timeout_s``
    ├── AccessDeniedError             the client's token does not allow this tool
    └── RateLimitedError              a per-client or per-tool rate limit is exceeded
"""

from __future__ import annotations

from typing import Any

__all__ = [
    "ACCESS_DENIED",
    "RATE_LIMITED",
    "UPSTREAM_TIMEOUT",
    "UPSTREAM_UNAVAILABLE",
    "AccessDeniedError",
    "ConfigError",
    "GatewayError",
    "RateLimitedError",
    "UpstreamError",
    "UpstreamTimeoutError",
    "UpstreamUnavailableError",
]

INTERNAL_ERROR = -32603
UPSTREAM_UNAVAILABLE = -32003
"""No replica of the upstream could answer (down, died mid-call, refused the connection)."""
UPSTREAM_TIMEOUT = -32001
"""The upstream did not answer within the call's ``timeout_s`` (the MCP request-timeout code)."""
ACCESS_DENIED = -32004
"""The client's token does not allow this tool."""
RATE_LIMITED = -32005
"""A per-client or per-tool rate limit is exceeded; retry later."""


class GatewayError(Exception):
    """Base of every airgateway error.

    Args:
        message: a readable one-line description.
        code: the JSON-RPC code a client sees.
        data: optional JSON ``error.data``.
    """

    def __init__(self, message: str, *, code: int = INTERNAL_ERROR, data: Any = None) -> None:
        super().__init__(message)
        self.message = message
        self.code = code
        self.data = data

    def to_error(self) -> dict[str, Any]:
        """The JSON-RPC ``error`` object."""
        err: dict[str, Any] = {"code": self.code, "message": self.message}
        if self.data is not None:
            err["data"] = self.data
        return err


class ConfigError(GatewayError):
    """A configuration file that cannot be used: unreadable, not YAML, unknown key, bad value.

    Attributes:
        path: the file.
        line: the 1-based line of the offending key or value (``None`` if unknown).
        key: the dotted key path (``servers[2].timeout_s``), or ``None``.
    """

    def __init__(self, message: str, *, path: str, line: int | None, key: str | None) -> None:
        where = path if line is None else f"{path}:{line}"
        text = f"{where}: {key}: {message}" if key else f"{where}: {message}"
        super().__init__(text)
        self.path = path
        self.line = line
        self.key = key
        self.reason = message


class UpstreamError(GatewayError):
    """An upstream answered with a JSON-RPC error; the client gets it unchanged."""

    def __init__(self, error: dict[str, Any]) -> None:
        code = error.get("code")
        super().__init__(
            str(error.get("message", "upstream error")),
            code=code if isinstance(code, int) and not isinstance(code, bool) else INTERNAL_ERROR,
            data=error.get("data"),
        )


class UpstreamUnavailableError(GatewayError):
    """A replica could not answer: refused, closed the connection, or its process died.

    Attributes:
        replica: the replica's label (``name#index``).
        sent: whether the request may have reached the replica (``False``: the connection was
            refused, so another replica may take the call whatever the tool does).
    """

    def __init__(
        self, message: str, *, replica: str, code: int = UPSTREAM_UNAVAILABLE, sent: bool = True
    ) -> None:
        super().__init__(message, code=code, data={"replica": replica})
        self.replica = replica
        self.sent = sent


class UpstreamTimeoutError(UpstreamUnavailableError):
    """A replica did not answer within the call's timeout."""

    def __init__(self, message: str, *, replica: str) -> None:
        super().__init__(message, replica=replica, code=UPSTREAM_TIMEOUT)


class AccessDeniedError(GatewayError):
    """The client may not call this (its token's allow list does not match)."""

    def __init__(self, message: str, *, client: str | None, name: str) -> None:
        super().__init__(message, code=ACCESS_DENIED, data={"client": client, "name": name})
        self.client = client
        self.name = name


class RateLimitedError(GatewayError):
    """A rate limit is exceeded (``scope`` is ``client:<name>`` or ``tool:<glob>``)."""

    def __init__(self, message: str, *, scope: str, limit: float) -> None:
        super().__init__(message, code=RATE_LIMITED, data={"scope": scope, "limit": limit})
        self.scope = scope
        self.limit = limit
