"""SQL text and helpers of :class:`airstore.sqlite.SqliteStore`: schema, filters, error mapping."""

from __future__ import annotations

import asyncio
import contextlib
import re
import sqlite3
from typing import Any

import aiosqlite
import orjson

from airstore._validate import MAX_TS, MIN_TS, matches
from airstore.errors import AirstoreError, CorruptDataError, ReadOnlyStoreError, StorageIOError

__all__ = [
    "COUNTER",
    "DELETE",
    "INCR",
    "INSERT_LOG",
    "LIVE",
    "PURGE",
    "SCHEMA",
    "SCHEMA_VERSION",
    "TRIM_AGE",
    "TRIM_BYTES",
    "UPSERT",
    "connect",
    "decode_json",
    "filter_sql",
    "filtered_rows",
    "log_query",
    "no_schema",
    "prefix_bounds",
    "stop_connection",
    "translate",
]

SCHEMA_VERSION = 1

UPSERT = "INSERT OR REPLACE INTO kv (ns, key, value, expires_at) VALUES (?, ?, ?, ?)"
INSERT_LOG = "INSERT INTO log (ns, ts, body) VALUES (?, ?, ?)"
DELETE = "DELETE FROM kv WHERE ns = ? AND key = ? RETURNING expires_at"
PURGE = "DELETE FROM kv WHERE expires_at IS NOT NULL AND expires_at <= ?"
# One statement: a missing or expired counter starts from ?3 (= the step) with expiry ?4; a live
# integer counter gets ?3 added and keeps its expiry. Anything else (not an integer, or a
# result beyond ±?5) leaves the row untouched and returns no row.
INCR = """
INSERT INTO kv (ns, key, value, expires_at) VALUES (?1, ?2, ?3, ?4)
ON CONFLICT (ns, key) DO UPDATE SET
    value = CASE WHEN kv.expires_at IS NOT NULL AND kv.expires_at <= ?6 THEN excluded.value
                 ELSE CAST(kv.value AS INTEGER) + ?3 END,
    expires_at = CASE WHEN kv.expires_at IS NOT NULL AND kv.expires_at <= ?6 THEN ?4
                      ELSE kv.expires_at END
WHERE (kv.expires_at IS NOT NULL AND kv.expires_at <= ?6)
   OR (json_type(kv.value) = 'integer' AND abs(CAST(kv.value AS INTEGER)) <= ?5
       AND abs(CAST(kv.value AS INTEGER) + ?3) <= ?5)
RETURNING CAST(value AS INTEGER)
"""
COUNTER = "SELECT value FROM kv WHERE ns = ? AND key = ?"
TRIM_AGE = "DELETE FROM log WHERE ns = ? AND ts < ?"
# The oldest rows of a namespace beyond a byte budget (of entry JSON), newest kept.
TRIM_BYTES = """
DELETE FROM log WHERE ns = ?1 AND id <= (
    SELECT id FROM (
        SELECT id, SUM(length(body)) OVER (ORDER BY id DESC) AS total FROM log WHERE ns = ?1
    ) WHERE total > ?2 ORDER BY id DESC LIMIT 1
)
"""
LIVE = "(expires_at IS NULL OR expires_at > ?)"

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
        elif isinstance(value, bool | float) or (
            isinstance(value, int) and MIN_TS <= value <= MAX_TS  # SQLite binds 64 bits only
        ):
            conds.append("json_extract(body, ?) = ?")
            params.extend((path, int(value) if isinstance(value, bool) else value))
        else:
            exact = False
    return conds, params, exact


def log_query(
    ns: str, lo: int | None, hi: int | None, flt: dict[str, Any] | None
) -> tuple[str, list[Any], bool]:
    """The newest-first ``SELECT body`` of a log query, without LIMIT/OFFSET.

    Returns:
        ``(sql, parameters, exact)``; see :func:`filter_sql` for ``exact``.
    """
    conds, params, exact = filter_sql(flt)
    where = ["ns = ?"]
    args: list[Any] = [ns]
    if lo is not None:
        where.append("ts >= ?")
        args.append(lo)
    if hi is not None:
        where.append("ts < ?")
        args.append(hi)
    sql = f"SELECT body FROM log WHERE {' AND '.join(where + conds)} ORDER BY ts DESC, id DESC"
    return sql, args + params, exact


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


async def connect(target: str, *, uri: bool, busy_timeout: float) -> aiosqlite.Connection:
    """Open an autocommit aiosqlite connection and read the header (so a file that is not a
    database fails here, not at the first query).

    Raises:
        sqlite3.Error: the caller translates it with :func:`translate`.
    """
    pending = aiosqlite.connect(target, uri=uri, isolation_level=None, timeout=busy_timeout)
    # A daemon thread: a store its owner never closed must not keep the interpreter alive
    # (exit joins every other thread first); interpreter exit stops it (stop_connection).
    pending._thread.daemon = True
    try:
        db = await pending
    except BaseException:
        # A failed connect stops aiosqlite's worker thread without waiting for it; wait here,
        # or the thread may call back into an event loop that has closed since.
        await asyncio.to_thread(pending._thread.join, 10)
        raise
    try:
        await db.execute(f"PRAGMA busy_timeout={int(busy_timeout * 1000)}")
        await db.execute_fetchall("PRAGMA schema_version")
    except BaseException:
        await db.close()
        raise
    return db


_PAGE = 1000


async def filtered_rows(
    db: aiosqlite.Connection,
    sql: str,
    args: list[Any],
    path: str,
    ns: str,
    limit: int,
    offset: int,
    flt: dict[str, Any] | None,
) -> list[dict[str, Any]]:
    """Stream ``sql``'s rows in pages, keeping entries that ``matches(flt)``, after ``offset``,
    up to ``limit`` (for filters SQL could not take entirely).

    Raises:
        sqlite3.Error: the caller translates it.
    """
    out: list[dict[str, Any]] = []
    skipped = 0
    async with db.execute(sql, args) as cursor:
        while len(out) < limit:
            rows = await cursor.fetchmany(_PAGE)
            if not rows:
                break
            for row in rows:
                entry = decode_json(row[0], path, ns)
                if not matches(entry, flt):
                    continue
                if skipped < offset:
                    skipped += 1
                    continue
                out.append(entry)
                if len(out) >= limit:
                    break
    return out


def stop_connection(db: aiosqlite.Connection, timeout: float) -> None:
    """Without an event loop (interpreter exit): have the worker thread close the connection
    after the work already queued, and wait up to ``timeout`` seconds for it."""
    with contextlib.suppress(Exception):
        db.stop()
    db._thread.join(timeout)
