"""Adapters that meter servers people already run: the official SDK's ``MCPServer`` and
FastMCP. Each needs its framework installed; importing this package alone imports neither."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from airmeter.integrations.fastmcp_middleware import FastMCPMeterMiddleware
    from airmeter.integrations.mcp_sdk import SdkMeterMiddleware, instrument_mcp_server

__all__ = ["FastMCPMeterMiddleware", "SdkMeterMiddleware", "instrument_mcp_server"]


def __getattr__(name: str) -> Any:
    # Lazy, so that `mcp` and `fastmcp` stay optional for everyone who needs only one.
    if name == "FastMCPMeterMiddleware":
        from airmeter.integrations import fastmcp_middleware

        return fastmcp_middleware.FastMCPMeterMiddleware
    if name in ("SdkMeterMiddleware", "instrument_mcp_server"):
        from airmeter.integrations import mcp_sdk

        return getattr(mcp_sdk, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
