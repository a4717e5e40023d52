"""The caller's subject in meter records: a keyed hash, so a record tells one user's calls apart
from another's across calls and processes without holding the user's name.

The key is made once per store and kept in it (namespace :data:`KEYS_NAMESPACE`): every
process metering into the store uses the oldest key written there, so they all give a user the
same pseudonym. Processes starting together on an empty store agree on who makes it through an
atomic ``incr`` (the first to count 1 writes the key; the others wait for it), so they do not
each settle on a key of their own. A meter without a store uses a key of its own process.

Anyone who can read the store can read the key, and so test guessed subjects (e-mail addresses)
against the pseudonyms. ``AIR_METER_SUBJECT_KEY`` (64 hex digits, kept elsewhere: a secret
manager) gives the key instead, and then nothing is written to the store.
``AIR_METER_RAW_SUBJECT=1`` keeps subjects raw. See docs/settings.md.
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import logging
import secrets
import time
from collections.abc import Mapping

from airmeter.settings import subject_key_setting
from airstore.errors import AirstoreError
from airstore.types import Store

__all__ = ["KEYS_NAMESPACE", "PROCESS_KEY", "PSEUDONYM_PREFIX", "pseudonym", "subject_key"]

logger = logging.getLogger(__name__)

KEYS_NAMESPACE = "meter.keys"
"""The store's pseudonymisation keys (an append log; the oldest subject key wins)."""
PROCESS_KEY = secrets.token_bytes(32)
"""The key of a meter without a store (pseudonyms are then stable within this process only)."""
PSEUDONYM_PREFIX = "p:"
"""How every pseudonym starts (a raw subject is kept as given)."""
_PREFIX = PSEUDONYM_PREFIX
_CLAIM = "subject.claim"
"""The counter that elects the process writing the store's first key."""
WAIT_S = 5.0
"""How long a process that lost the election waits for the winner's key to appear."""


def pseudonym(key: bytes, subject: str) -> str:
    """``p:`` and 24 hex digits of HMAC-SHA256(key, subject)."""
    return _PREFIX + hmac.new(key, subject.encode(), hashlib.sha256).hexdigest()[:24]


def _oldest(entries: list[dict[str, object]]) -> bytes | None:
    keys = []
    for entry in entries:
        text, ts = entry.get("key"), entry.get("_ts")
        if entry.get("kind") != "subject" or not isinstance(text, str) or len(text) != 64:
            continue
        try:
            keys.append((ts if isinstance(ts, int) else 0, text, bytes.fromhex(text)))
        except ValueError:
            continue
    return min(keys)[2] if keys else None


async def subject_key(store: Store, env: Mapping[str, str] | None = None) -> bytes:
    """The key of subject pseudonyms: ``AIR_METER_SUBJECT_KEY`` when set, else the store's
    subject key, written there first if it has none.

    A store that cannot be read or written gives this process's key (logged): pseudonyms stay
    pseudonyms, only not comparable across processes.

    Raises:
        MeterConfigError: ``AIR_METER_SUBJECT_KEY`` is set but not 64 hex digits.
    """
    configured = subject_key_setting(env)
    if configured is not None:
        return configured
    try:
        found = _oldest(await store.query(KEYS_NAMESPACE, limit=1000))
        if found is None:
            found = await _elect(store)
    except AirstoreError as exc:
        logger.warning("airmeter: no subject key from the store (%s); using this process's", exc)
        return PROCESS_KEY
    return found


async def _elect(store: Store) -> bytes:
    """The store's first key: made by the process whose ``incr`` counts 1, awaited by the
    others. (Should that process die between the two, the others write theirs after
    :data:`WAIT_S`, and the oldest wins as before.)"""
    if await store.incr(KEYS_NAMESPACE, _CLAIM) != 1:
        deadline = time.monotonic() + WAIT_S
        while time.monotonic() < deadline:
            await asyncio.sleep(0.02)
            found = _oldest(await store.query(KEYS_NAMESPACE, limit=1000))
            if found is not None:
                return found
        logger.warning(
            "airmeter: the process elected to write the store's subject key did not within %.0f s;"
            " writing one here",
            WAIT_S,
        )
    await store.append(KEYS_NAMESPACE, {"kind": "subject", "key": secrets.token_hex(32)})
    await store.flush()
    found = _oldest(await store.query(KEYS_NAMESPACE, limit=1000))
    return PROCESS_KEY if found is None else found
