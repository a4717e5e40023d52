"""The environment variables aircore reads, in one place (listed in docs/settings.md)."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass

__all__ = ["TRANSPORT_ENV", "CoreSettings", "core_settings"]

TRANSPORT_ENV = "MCP_TRANSPORT"
"""Forces the transport of ``server.run()`` / ``air serve`` by name (``stdio``, ``http``…)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class CoreSettings:
    """aircore's view of the environment (empty values count as unset).

    Attributes:
        transport: ``MCP_TRANSPORT``, trimmed and lower-case (an unknown name is reported by
            whoever looks it up).
    """

    transport: str | None = None


def core_settings(env: Mapping[str, str] | None = None) -> CoreSettings:
    """Read aircore's variables.

    Args:
        env: the environment to read; ``os.environ`` by default.

    Returns:
        The settings.
    """
    env = os.environ if env is None else env
    return CoreSettings(transport=env.get(TRANSPORT_ENV, "").strip().lower() or None)
