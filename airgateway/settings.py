"""The environment variables airgateway reads (all of them; listed in docs/settings.md)."""

from __future__ import annotations

import os
from collections.abc import Mapping

__all__ = ["GATEWAY_TOKEN_ENV", "gateway_token"]

GATEWAY_TOKEN_ENV = "AIR_GATEWAY_TOKEN"
"""The gateway's bearer token: the default of ``air gateway --token`` and ``air status --token``."""


def gateway_token(environ: Mapping[str, str] | None = None) -> str | None:
    """``$AIR_GATEWAY_TOKEN``, or ``None`` when unset or empty."""
    value = (os.environ if environ is None else environ).get(GATEWAY_TOKEN_ENV, "").strip()
    return value or None
