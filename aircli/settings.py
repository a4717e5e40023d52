"""The environment variables the ``air`` command line reads, in one place (docs/settings.md)."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass

__all__ = [
    "DASHBOARD_TOKEN_ENV",
    "DEMO_LATENCY_ENV",
    "HTTP_TOKEN_ENV",
    "CliSettings",
    "cli_settings",
]

HTTP_TOKEN_ENV = "AIR_HTTP_TOKEN"
"""The bearer token ``air serve`` requires on HTTP when ``--token`` is not given."""

DASHBOARD_TOKEN_ENV = "AIR_DASHBOARD_TOKEN"
"""The token ``air dashboard`` requires when ``--token`` is not given (an environment variable
keeps it out of the process list, where command-line arguments are visible)."""

DEMO_LATENCY_ENV = "AIR_DEMO_LATENCY"
"""Set (to anything but ``0``/empty) by ``air demo``: the demo server sleeps a time typical of
each tool's layer, so the dashboard shows a realistic latency picture."""


@dataclass(frozen=True, slots=True, kw_only=True)
class CliSettings:
    """The command line's view of the environment (empty values count as unset).

    Attributes:
        http_token: ``AIR_HTTP_TOKEN``.
        dashboard_token: ``AIR_DASHBOARD_TOKEN``.
        demo_latency: whether ``AIR_DEMO_LATENCY`` is on.
    """

    http_token: str | None = None
    dashboard_token: str | None = None
    demo_latency: bool = False


def cli_settings(env: Mapping[str, str] | None = None) -> CliSettings:
    """Read the command line's variables.

    Args:
        env: the environment to read; ``os.environ`` by default.

    Returns:
        The settings.
    """
    env = os.environ if env is None else env
    latency = env.get(DEMO_LATENCY_ENV, "").strip().lower() not in ("", "0", "false", "no")
    return CliSettings(
        http_token=env.get(HTTP_TOKEN_ENV, "").strip() or None,
        dashboard_token=env.get(DASHBOARD_TOKEN_ENV, "").strip() or None,
        demo_latency=latency,
    )
