"""Adapters that meter servers people already run: the official SDK's ``MCPServer`` and
FastMCP. Each needs its framework installed; importing this package alone imports neither."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from airmeter.integrations.fastmcp_middleware import FastMCPMeterMiddleware
    from airmeter.integrations.mcp_sdk import SdkMeterMiddleware, instrument_mcp_server

__all__ = ["FastMCPMeterMiddleware", "SdkMeterMiddleware", "instrument_mcp_server"]

_HOMES = {
    "FastMCPMeterMiddleware": "airmeter.integrations.fastmcp_middleware",
    "SdkMeterMiddleware": "airmeter.integrations.mcp_sdk",
    "instrument_mcp_server": "airmeter.integrations.mcp_sdk",
}


def __getattr__(name: str) -> Any:
    # Lazy, so that `mcp` and `fastmcp` stay optional for everyone who needs only one.
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(home), name)
