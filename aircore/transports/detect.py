"""Transport auto-detection, as in the seed."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["TRANSPORT_ENV", "detect_transport"]

TRANSPORT_ENV = "MCP_TRANSPORT"
"""Environment variable that forces the transport by name (``stdio``, ``http``…)."""


def detect_transport(environ: Mapping[str, str], stdin: Any) -> str:
    """``MCP_TRANSPORT`` if set (its name as given, lower-case: an unknown one is the
    caller's error to report); else ``"stdio"`` when stdin is a pipe, ``"http"`` for a TTY."""
    forced = environ.get(TRANSPORT_ENV, "").strip().lower()
    if forced:
        return forced
    try:
        tty = bool(stdin.isatty())
    except (AttributeError, ValueError):
        tty = False
    return "http" if tty else "stdio"
