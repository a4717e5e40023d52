"""Stamp a log entry with ``_ts`` and encode it once (shared by the SQL and Redis backends)."""

from __future__ import annotations

from typing import Any

import orjson

from airstore._validate import JSON_OPTS, encode_entry
from airstore.types import Clock, Entry

__all__ = ["stamp"]


def stamp(ns: str, entry: Any, clock: Clock) -> tuple[Entry, int, bytes]:
    """Validate ``entry`` and return ``(stored copy, _ts, JSON bytes of the copy)``.

    ``_ts`` (epoch ms from ``clock``) is added unless the entry carries an int one. The JSON is
    produced by one ``orjson.dumps``; when ``_ts`` is added it is spliced onto the end of the
    bytes instead of encoding the entry a second time.

    Raises:
        InvalidValueError: ``entry`` is not a dict or not JSON-serializable.
    """
    body = encode_entry(ns, entry)
    stored = dict(entry)
    ts = stored.get("_ts")
    if type(ts) is int:
        return stored, ts, body
    ts = stored["_ts"] = int(clock() * 1000)
    if "_ts" in entry:  # a non-int _ts is replaced, so the dict must be encoded again
        return stored, ts, orjson.dumps(stored, option=JSON_OPTS)
    tail = b'"_ts":%d}' % ts
    return stored, ts, (b"{" + tail if body == b"{}" else body[:-1] + b"," + tail)
