"""A minimal call context with the attributes aircore's ToolContext exposes to the meter."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any


class FakeContext:
    def __init__(self, tool_name: str, arguments: dict[str, Any] | None = None, **kw: Any) -> None:
        self.tool_name = tool_name
        self.arguments = arguments or {}
        self.request_id: str | None = kw.get("request_id", "1")
        self.call_id: str | None = kw.get("call_id")
        self.session_id: str | None = kw.get("session_id")
        self.protocol_version: str | None = kw.get("protocol_version", "2025-11-25")
        self.transport: str = kw.get("transport", "inproc")
        self.client_name: str | None = kw.get("client_name", "test-client")
        self.server_name: str = kw.get("server_name", "demo")
        self.layer: int | None = kw.get("layer")
        self.annotations: dict[str, Any] | None = kw.get("annotations")
        self.tool_meta: dict[str, Any] | None = kw.get("tool_meta")
        self.input_schema: dict[str, Any] | None = kw.get("input_schema")
        self.meta: dict[str, Any] = {}
        self.usage: dict[str, Any] = {}
        self.traceparent: str | None = kw.get("traceparent")
        self.tracestate: str | None = kw.get("tracestate")


def handler_returning(value: Any) -> Callable[[Any], Awaitable[Any]]:
    async def call_next(ctx: Any) -> Any:
        return value

    return call_next
