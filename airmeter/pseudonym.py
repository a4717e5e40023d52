"""The caller's subject in meter records: a keyed hash, so a record tells one user's calls apart
from another's across calls and processes without holding the user's name.

The key is made once per store and kept in it (namespace :data:`KEYS_NAMESPACE`): every
process metering into the store uses the oldest key written there, so they all give a user the
same pseudonym. A meter without a store uses a key of its own process. ``AIR_METER_RAW_SUBJECT=1``
keeps subjects raw (see docs/settings.md).
"""

from __future__ import annotations

import hashlib
import hmac
import logging
import secrets

from airstore.errors import AirstoreError
from airstore.types import Store

__all__ = ["KEYS_NAMESPACE", "PROCESS_KEY", "pseudonym", "subject_key"]

logger = logging.getLogger(__name__)

KEYS_NAMESPACE = "meter.keys"
"""The store's pseudonymisation keys (an append log; the oldest subject key wins)."""
PROCESS_KEY = secrets.token_bytes(32)
"""The key of a meter without a store (pseudonyms are then stable within this process only)."""
_PREFIX = "p:"


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


async def subject_key(store: Store) -> bytes:
    """The store's subject key, written there first if it has none.

    A store that cannot be read or written gives this process's key (logged): pseudonyms stay
    pseudonyms, only not comparable across processes.
    """
    try:
        found = _oldest(await store.query(KEYS_NAMESPACE, limit=1000))
        if found is not None:
            return found
        await store.append(KEYS_NAMESPACE, {"kind": "subject", "key": secrets.token_hex(32)})
        await store.flush()
        found = _oldest(await store.query(KEYS_NAMESPACE, limit=1000))
    except AirstoreError as exc:
        logger.warning("airmeter: no subject key from the store (%s); using this process's", exc)
        return PROCESS_KEY
    return PROCESS_KEY if found is None else found
