"""SQL text and helpers of :class:`airstore.sqlite.SqliteStore`: schema, filters, error mapping."""

from __future__ import annotations

import re
import sqlite3
from typing import Any

import orjson

from airstore.errors import AirstoreError, CorruptDataError, ReadOnlyStoreError, StorageIOError

__all__ = [
    "SCHEMA",
    "SCHEMA_VERSION",
    "decode_json",
    "filter_sql",
    "no_schema",
    "prefix_bounds",
    "translate",
]

SCHEMA_VERSION = 1

SCHEMA = """
CREATE TABLE IF NOT EXISTS kv (
    ns TEXT NOT NULL,
    key TEXT NOT NULL,
    value TEXT NOT NULL,          -- JSON text
    expires_at REAL,              -- store-clock seconds since the epoch; NULL: never
    PRIMARY KEY (ns, key)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS kv_expires ON kv (expires_at) WHERE expires_at IS NOT NULL;
CREATE TABLE IF NOT EXISTS log (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    ns TEXT NOT NULL,
    ts INTEGER NOT NULL,          -- the entry's _ts, epoch milliseconds
    body TEXT NOT NULL            -- the entry as JSON text
);
CREATE INDEX IF NOT EXISTS log_ns_ts ON log (ns, ts);
"""

_FIELD_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def filter_sql(flt: dict[str, Any] | None) -> tuple[list[str], list[Any], bool]:
    """Translate a field-equality filter into SQL conditions on ``log.body``.

    The conditions reproduce Python's ``==`` (``1 == 1.0 == True``) for scalars: numbers and
    bools compare numerically (``json_extract`` maps ``true`` to 1), strings also check the JSON
    type, ``None`` checks for a JSON ``null``. Lists, dicts and odd field names stay in Python.

    Returns:
        ``(conditions, parameters, exact)``; ``exact`` is False when some pairs were not pushed
        down and the caller must check every row with :func:`airstore._validate.matches`.
    """
    conds: list[str] = []
    params: list[Any] = []
    exact = True
    for field, value in (flt or {}).items():
        if not isinstance(field, str) or _FIELD_RE.fullmatch(field) is None:
            exact = False
            continue
        path = f"$.{field}"
        if value is None:
            conds.append("json_type(body, ?) = 'null'")
            params.append(path)
        elif isinstance(value, str):
            conds.append("json_type(body, ?) = 'text' AND json_extract(body, ?) = ?")
            params.extend((path, path, value))
        elif isinstance(value, bool | int | float):
            conds.append("json_extract(body, ?) = ?")
            params.extend((path, int(value) if isinstance(value, bool) else value))
        else:
            exact = False
    return conds, params, exact


def prefix_bounds(prefix: str) -> tuple[str, str | None]:
    """Return ``(lo, hi)`` so that ``lo <= key < hi`` selects exactly the keys with ``prefix``."""
    stripped = prefix.rstrip("\U0010ffff")
    if not stripped:
        return prefix, None
    return prefix, stripped[:-1] + chr(ord(stripped[-1]) + 1)


def translate(exc: sqlite3.Error, path: str, action: str) -> AirstoreError:
    """Map a ``sqlite3`` error to the matching :class:`AirstoreError` (chain it with ``from``)."""
    text = str(exc)
    lowered = text.lower()
    message = f"sqlite {action} failed on {path!r}: {text}"
    if "not a database" in lowered or "malformed" in lowered:
        return CorruptDataError(message, path=path)
    if "readonly" in lowered or "read-only" in lowered:
        return ReadOnlyStoreError(message, path=path)
    return StorageIOError(message, path=path)


def no_schema(exc: sqlite3.Error) -> bool:
    """True when a read found no tables yet (a reader opened before any writer created them)."""
    return isinstance(exc, sqlite3.OperationalError) and str(exc).startswith("no such table")


def decode_json(text: str, path: str, ns: str) -> Any:
    """Parse stored JSON text, raising :class:`CorruptDataError` naming the file and namespace."""
    try:
        return orjson.loads(text)
    except orjson.JSONDecodeError as exc:
        raise CorruptDataError(
            f"stored JSON in {path!r} namespace {ns!r} cannot be parsed: {exc}",
            path=path,
            namespace=ns,
        ) from exc
