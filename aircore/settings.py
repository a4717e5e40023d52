"""Environment variables aircore reads (all of them, in one place; see ``docs/settings.md``)."""

from __future__ import annotations

import os
from collections.abc import Mapping

__all__ = ["REQUEST_STATE_KEY_ENV", "TRANSPORT_ENV", "forced_transport", "request_state_key"]

REQUEST_STATE_KEY_ENV = "AIR_REQUEST_STATE_KEY"
"""The secret that signs 2026-07-28 ``requestState`` values; give every replica of a server
the same one so any replica can serve the next round. Unset: a random key per process."""

TRANSPORT_ENV = "MCP_TRANSPORT"
"""Forces the transport of ``server.run()`` / ``air serve`` by name (``stdio``, ``http``…)."""


def request_state_key(environ: Mapping[str, str] | None = None) -> bytes | None:
    """The ``requestState`` signing secret from the environment, or ``None`` when unset (or
    only spaces: an empty value counts as unset, as for every variable)."""
    value = (os.environ if environ is None else environ).get(REQUEST_STATE_KEY_ENV, "")
    return value.encode("utf-8") if value.strip() else None


def forced_transport(environ: Mapping[str, str] | None = None) -> str | None:
    """``$MCP_TRANSPORT`` trimmed and lower-case (an unknown name is reported by whoever looks
    it up), or ``None`` when unset or empty."""
    value = (os.environ if environ is None else environ).get(TRANSPORT_ENV, "")
    return value.strip().lower() or None
