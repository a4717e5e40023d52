"""Transport auto-detection, as in the seed."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["TRANSPORT_ENV", "detect_transport"]

TRANSPORT_ENV = "MCP_TRANSPORT"
"""Environment variable that forces the transport: ``stdio`` or ``http``."""


def detect_transport(environ: Mapping[str, str], stdin: Any) -> str:
    """``MCP_TRANSPORT`` if set; else ``"stdio"`` when stdin is a pipe, ``"http"`` for a TTY."""
    forced = environ.get(TRANSPORT_ENV, "").strip().lower()
    if forced:
        return "http" if forced in ("http", "streamable-http", "sse") else forced
    try:
        tty = bool(stdin.isatty())
    except (AttributeError, ValueError):
        tty = False
    return "http" if tty else "stdio"
