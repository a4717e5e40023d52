"""The environment variables airmeter reads (OpenTelemetry's ``OTEL_*`` are read in
:mod:`airmeter.otel_settings`); see docs/settings.md."""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Final, Literal

from airmeter.errors import MeterConfigError

__all__ = [
    "INSTANCE_ID_ENV",
    "PROM_TOP_CLIENTS_ENV",
    "RAW_SUBJECT_ENV",
    "SLO_WEBHOOK_ENV",
    "SUBJECT_KEY_ENV",
    "TOKENS_ENV",
    "TokenMode",
    "instance_id_setting",
    "prom_top_clients",
    "raw_subject_setting",
    "slo_webhook_url",
    "subject_key_setting",
    "token_mode",
]

INSTANCE_ID_ENV: Final = "AIR_INSTANCE_ID"
"""Names this server instance (stable across restarts when set)."""
TOKENS_ENV: Final = "AIR_TOKENS"
"""How context tokens are counted: ``exact`` (default), ``estimate`` or ``off``."""
SLO_WEBHOOK_ENV: Final = "AIR_SLO_WEBHOOK_URL"
"""Where SLO alerts are POSTed (JSON), when set."""

SUBJECT_KEY_ENV: Final = "AIR_METER_SUBJECT_KEY"
"""The key of subject pseudonyms (64 hex digits); default: one made once and kept in the store."""
PROM_TOP_CLIENTS_ENV: Final = "AIR_METER_PROM_TOP_CLIENTS"
"""How many clients the Prometheus ``client`` label names (the rest: ``other``); default 10."""
RAW_SUBJECT_ENV: Final = "AIR_METER_RAW_SUBJECT"
"""``1``: meter records keep the caller's token subject raw (default: a keyed pseudonym)."""

TokenMode = Literal["exact", "estimate", "off"]
_MODES: Final[tuple[TokenMode, ...]] = ("exact", "estimate", "off")


def _get(env: Mapping[str, str] | None, name: str) -> str | None:
    value = (os.environ if env is None else env).get(name, "").strip()
    return value or None


def instance_id_setting(env: Mapping[str, str] | None = None) -> str | None:
    """``$AIR_INSTANCE_ID`` when set to a usable id (no ``:``), else ``None``."""
    value = _get(env, INSTANCE_ID_ENV)
    return value if value is not None and ":" not in value else None


def token_mode(env: Mapping[str, str] | None = None) -> TokenMode:
    """``$AIR_TOKENS`` (``exact``: the exact tokenizer when the ``tokens`` extra is installed,
    else the estimate; ``estimate``; ``off``); ``exact`` when unset or not one of these."""
    value = (_get(env, TOKENS_ENV) or "exact").lower()
    for mode in _MODES:
        if value == mode:
            return mode
    return "exact"


def slo_webhook_url(env: Mapping[str, str] | None = None) -> str | None:
    """``$AIR_SLO_WEBHOOK_URL``, or ``None``."""
    return _get(env, SLO_WEBHOOK_ENV)


def raw_subject_setting(env: Mapping[str, str] | None = None) -> bool:
    """``$AIR_METER_RAW_SUBJECT`` is ``1``/``true``/``yes``: keep subjects raw."""
    return (_get(env, RAW_SUBJECT_ENV) or "").lower() in ("1", "true", "yes")


def subject_key_setting(env: Mapping[str, str] | None = None) -> bytes | None:
    """``$AIR_METER_SUBJECT_KEY`` as bytes, or ``None`` when unset.

    Raises:
        MeterConfigError: it is set but not 64 hex digits (32 bytes).
    """
    value = _get(env, SUBJECT_KEY_ENV)
    if value is None:
        return None
    try:
        key = bytes.fromhex(value)
    except ValueError:
        key = b""
    if len(key) != 32:
        raise MeterConfigError(
            f"{SUBJECT_KEY_ENV} must be 64 hex digits (a 32-byte key, e.g. from "
            "`python -c 'import secrets; print(secrets.token_hex(32))'`), got "
            f"{len(value)} characters"
        )
    return key


def prom_top_clients(env: Mapping[str, str] | None = None, *, default: int = 10) -> int:
    """``AIR_METER_PROM_TOP_CLIENTS``: how many clients ``/metrics`` names (0 … 1000).

    Raises:
        MeterConfigError: not a whole number in that range.
    """
    raw = _get(env, PROM_TOP_CLIENTS_ENV)
    if raw is None:
        return default
    try:
        value = int(raw)
    except ValueError:
        value = -1
    if not 0 <= value <= 1000:
        raise MeterConfigError(
            f"{PROM_TOP_CLIENTS_ENV}={raw!r} must be a whole number from 0 to 1000"
        )
    return value
