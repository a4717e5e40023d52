"""The environment variables airstore reads, in one place (listed in docs/settings.md)."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

__all__ = [
    "DATA_DIR_ENV",
    "HOME_ENV",
    "PLATFORM_ENV",
    "SPEEDUPS_ENV",
    "XDG_DATA_HOME_ENV",
    "PlatformShape",
    "SpeedupsMode",
    "StoreSettings",
    "store_settings",
]

DATA_DIR_ENV = "AIR_DATA_DIR"
"""The data directory every air command and ``define_server(meter=True)`` uses by default."""

XDG_DATA_HOME_ENV = "XDG_DATA_HOME"
"""The per-user data directory of the XDG base-directory spec (``~/.local/share`` when unset)."""

HOME_ENV = "HOME"
"""The user's home directory (for ``~/.local/share`` and ``~`` in paths)."""

SPEEDUPS_ENV = "AIR_SPEEDUPS"
"""The C speedups of the KV set path: ``auto`` (default: used when built), ``off`` (the pure
Python path) or ``require`` (importing airstore fails without them). The build reads the same
variable (``hatch_build.py``): ``off`` builds a pure-Python wheel, ``require`` fails the build
when the extension cannot be compiled."""

SpeedupsMode = Literal["auto", "off", "require"]

PLATFORM_ENV = "AIR_STORE_PLATFORM"
"""Which file-system calls FileStore makes (``airstore/_platform``): ``auto`` (default: by what
the interpreter offers) or ``macos`` (macOS's choices wherever it runs: ``F_FULLFSYNC`` with its
``fsync`` fallback instead of ``fdatasync``; the tests use it to run the macOS shape on Linux)."""

PlatformShape = Literal["auto", "macos"]


@dataclass(frozen=True, slots=True, kw_only=True)
class StoreSettings:
    """airstore's view of the environment (empty values count as unset).

    Attributes:
        data_dir: ``AIR_DATA_DIR``.
        xdg_data_home: ``XDG_DATA_HOME``.
        home: ``HOME``.
        speedups: ``AIR_SPEEDUPS`` (``auto`` when unset or not one of the three).
        speedups_unknown: the value of ``AIR_SPEEDUPS`` when it is not one of the three (it
            then counts as ``auto``; airstore warns).
    """

    data_dir: str | None = None
    xdg_data_home: str | None = None
    home: str | None = None
    speedups: SpeedupsMode = "auto"
    speedups_unknown: str | None = None
    platform: PlatformShape = "auto"


def _value(env: Mapping[str, str], name: str) -> str | None:
    value = env.get(name, "").strip()
    return value or None


def store_settings(env: Mapping[str, str] | None = None) -> StoreSettings:
    """Read airstore's variables.

    Args:
        env: the environment to read; ``os.environ`` by default.

    Returns:
        The settings.
    """
    env = os.environ if env is None else env
    raw = _value(env, SPEEDUPS_ENV)
    mode = _speedups(raw)
    unknown = raw if raw is not None and mode == "auto" and raw.lower() != "auto" else None
    return StoreSettings(
        data_dir=_value(env, DATA_DIR_ENV),
        xdg_data_home=_value(env, XDG_DATA_HOME_ENV),
        home=_value(env, HOME_ENV),
        speedups=mode,
        speedups_unknown=unknown,
        platform="macos" if (_value(env, PLATFORM_ENV) or "").lower() == "macos" else "auto",
    )


def _speedups(value: str | None) -> SpeedupsMode:
    value = (value or "").lower()
    if value == "off":
        return "off"
    if value == "require":
        return "require"
    return "auto"
