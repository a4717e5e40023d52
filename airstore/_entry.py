"""Stamp a log entry with ``_ts`` and encode it once (shared by every backend's ``append``)."""

from __future__ import annotations

from typing import Any

import orjson

from airstore._validate import JSON_OPTS, MAX_TS, MIN_TS, check_finite, encode_entry
from airstore.errors import InvalidValueError
from airstore.types import Clock, Entry

__all__ = ["stamp"]


def stamp(ns: str, entry: Any, clock: Clock) -> tuple[Entry, int, bytes]:
    """Validate ``entry`` and return ``(stored copy, _ts, JSON bytes of the copy)``.

    ``_ts`` (epoch ms from ``clock``) is added unless the entry carries an int one (which must
    fit in 64 bits, :data:`~airstore._validate.MAX_TS`, as on every backend). The copy is
    encoded by one ``orjson.dumps`` (this is every append's hot path); only when that fails is
    the entry encoded again, to raise the typed error.

    Raises:
        InvalidValueError: ``entry`` is not a dict or not JSON-serializable, or its ``_ts``
            is an int beyond ±2**63.
    """
    if type(entry) is not dict:
        encode_entry(ns, entry)  # raises for what is not a dict
    stored = dict(entry)
    ts = stored.get("_ts")
    if type(ts) is not int:
        ts = stored["_ts"] = int(clock() * 1000)
    elif not MIN_TS <= ts <= MAX_TS:
        raise InvalidValueError(
            f"log entry for namespace {ns!r} has _ts {ts}, beyond a signed 64-bit integer",
            namespace=ns,
        )
    try:
        body = orjson.dumps(stored, option=JSON_OPTS)
    except TypeError:
        encode_entry(ns, stored)  # raises the typed error naming the namespace
        raise
    check_finite(ns, None, stored, body)
    return stored, ts, body
