"""Transport auto-detection, as in the seed."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from aircore.settings import TRANSPORT_ENV, forced_transport

__all__ = ["TRANSPORT_ENV", "detect_transport"]


def detect_transport(environ: Mapping[str, str], stdin: Any) -> str:
    """``MCP_TRANSPORT`` if set (its name as given, lower-case: an unknown one is the
    caller's error to report); else ``"stdio"`` when stdin is a pipe, ``"http"`` for a TTY."""
    forced = forced_transport(environ)
    if forced:
        return forced
    try:
        tty = bool(stdin.isatty())
    except (AttributeError, ValueError):
        tty = False
    return "http" if tty else "stdio"
