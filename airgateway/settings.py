"""The environment variables airgateway reads (all of them; listed in docs/settings.md)."""

from __future__ import annotations

import os
from collections.abc import Mapping

__all__ = ["GATEWAY_TOKEN_ENV", "WATCH_CONFIG_ENV", "gateway_token", "watch_config"]

GATEWAY_TOKEN_ENV = "AIR_GATEWAY_TOKEN"
"""The gateway's bearer token: the default of ``air gateway --token`` and ``air status --token``."""
WATCH_CONFIG_ENV = "AIR_GATEWAY_WATCH_CONFIG"
"""Reload ``air gateway --config`` when the file changes: ``auto`` (the default: where there is
no SIGHUP, i.e. Windows), ``on`` (beside SIGHUP too) or ``off``."""
_WATCH = {"": "auto", "auto": "auto", "on": "on", "1": "on", "true": "on", "yes": "on",
          "off": "off", "0": "off", "false": "off", "no": "off"}  # fmt: skip


def gateway_token(environ: Mapping[str, str] | None = None) -> str | None:
    """``$AIR_GATEWAY_TOKEN``, or ``None`` when unset or empty."""
    value = (os.environ if environ is None else environ).get(GATEWAY_TOKEN_ENV, "").strip()
    return value or None


def watch_config(environ: Mapping[str, str] | None = None) -> str:
    """``$AIR_GATEWAY_WATCH_CONFIG`` as ``auto``, ``on`` or ``off`` (an unknown value: ``auto``,
    logged)."""
    raw = (os.environ if environ is None else environ).get(WATCH_CONFIG_ENV, "")
    value = _WATCH.get(raw.strip().lower())
    if value is None:
        import logging

        logging.getLogger(__name__).warning(
            "%s=%r is not auto, on or off: auto is used", WATCH_CONFIG_ENV, raw[:40]
        )
        return "auto"
    return value
