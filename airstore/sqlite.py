"""SqliteStore: one SQLite file (WAL) shared by any number of processes, through aiosqlite."""

from __future__ import annotations

import asyncio
import builtins
import logging
import os
import sqlite3
import time
from collections.abc import Sequence
from pathlib import Path
from types import TracebackType
from typing import Any, Self
from urllib.request import pathname2url

import aiosqlite

from airstore._batch import Batcher
from airstore._entry import stamp
from airstore._sqlite_sql import (
    SCHEMA,
    SCHEMA_VERSION,
    decode_json,
    filter_sql,
    no_schema,
    prefix_bounds,
    translate,
)
from airstore._validate import (
    check_key,
    check_limits,
    check_namespace,
    check_ttl,
    encode_value,
    matches,
    to_epoch_ms,
)
from airstore.errors import (
    InvalidArgumentError,
    ReadOnlyStoreError,
    StorageIOError,
    StoreClosedError,
)
from airstore.types import Clock, Entry, JSONValue, TimeBound

__all__ = ["SqliteStore"]

logger = logging.getLogger(__name__)

DEFAULT_BUSY_TIMEOUT = 5.0
"""Seconds a statement waits for another process's write lock before failing."""

DEFAULT_MAX_BATCH = 10_000
"""The most writes committed in one transaction."""

PURGE_INTERVAL = 1.0
"""Store-clock seconds between two deletions of expired keys (done inside a write batch)."""

_PAGE = 1000

# One queued write: ("set", ns, key, json, expires_at) | ("del", ns, key)
#                 | ("app", ns, ts, json, entry)
_Op = tuple[Any, ...]

_UPSERT = "INSERT OR REPLACE INTO kv (ns, key, value, expires_at) VALUES (?, ?, ?, ?)"
_INSERT_LOG = "INSERT INTO log (ns, ts, body) VALUES (?, ?, ?)"
_DELETE = "DELETE FROM kv WHERE ns = ? AND key = ? RETURNING expires_at"
_PURGE = "DELETE FROM kv WHERE expires_at IS NOT NULL AND expires_at <= ?"
_LIVE = "(expires_at IS NULL OR expires_at > ?)"


class SqliteStore:
    """Key-value with TTL plus an append log per namespace, in one SQLite database file.

    Writes (``set``, ``delete``, ``append``) made during one event-loop turn are committed in one
    transaction (``executemany``); each awaited write returns once its transaction committed.
    Reads use a second connection, so they never wait behind a write batch. Several processes
    may open the same file for reading and writing (WAL mode, ``busy_timeout``). Expiry uses the
    store's ``clock``; expired keys are never returned and are deleted by later write batches.

    Args:
        path: the database file; its directory is created if missing.
        default_ttl: TTL in seconds applied when ``set`` gets ``ttl=None``.
        clock: seconds since the epoch; injectable for tests. Every process sharing a file
            should use the same kind of clock.
        read_only: open without write access; writes raise :class:`ReadOnlyStoreError`.
        busy_timeout: seconds to wait for another process's lock.
        max_batch: the most writes per transaction.
    """

    def __init__(
        self,
        path: str | Path,
        *,
        default_ttl: float | None = None,
        clock: Clock = time.time,
        read_only: bool = False,
        busy_timeout: float = DEFAULT_BUSY_TIMEOUT,
        max_batch: int = DEFAULT_MAX_BATCH,
    ) -> None:
        if not isinstance(path, str | Path) or not str(path):
            raise InvalidArgumentError(f"SqliteStore needs a file path, got {path!r}")
        if busy_timeout < 0 or max_batch <= 0:
            raise InvalidArgumentError("busy_timeout must be >= 0 and max_batch > 0")
        self.path = str(path)
        self._ro_uri = f"file:{pathname2url(os.path.abspath(self.path))}?mode=ro"
        self._default_ttl = check_ttl(default_ttl)
        self._clock = clock
        self._read_only = read_only
        self._busy_timeout = busy_timeout
        self._writer: aiosqlite.Connection | None = None
        self._reader: aiosqlite.Connection | None = None
        self._batcher: Batcher[_Op] = Batcher(self._run_batch, max_batch=max_batch)
        self._last_purge = float("-inf")
        self._opened = False
        self._closed = False

    # -- lifecycle ---------------------------------------------------------------------------
    async def init(self) -> None:
        """Open (and create) the database. Idempotent.

        Raises:
            CorruptDataError: the file is not a SQLite database.
            StorageIOError: the file cannot be opened or created.
        """
        self._ensure_open()
        if self._opened:
            return
        try:
            if self._read_only:
                self._reader = await self._connect(read_only=True)
            else:
                Path(self.path).parent.mkdir(parents=True, exist_ok=True)
                self._writer = await self._connect(read_only=False)
                await self._writer.execute("PRAGMA journal_mode=WAL")
                await self._writer.execute("PRAGMA synchronous=NORMAL")
                await self._writer.executescript(SCHEMA)
                await self._writer.execute(f"PRAGMA user_version={SCHEMA_VERSION}")
                self._reader = await self._connect(read_only=False)
        except sqlite3.Error as exc:
            await self._disconnect()
            raise translate(exc, self.path, "open") from exc
        except OSError as exc:
            await self._disconnect()
            raise StorageIOError(f"cannot open {self.path!r}: {exc}", path=self.path) from exc
        self._opened = True

    async def _connect(self, *, read_only: bool) -> aiosqlite.Connection:
        target = self._ro_uri if read_only else self.path
        pending = aiosqlite.connect(
            target, uri=read_only, isolation_level=None, timeout=self._busy_timeout
        )
        try:
            db = await pending
        except BaseException:
            # A failed connect stops aiosqlite's worker thread without waiting for it; wait
            # here, or the thread may call back into an event loop that has closed since.
            await asyncio.to_thread(pending._thread.join, 10)
            raise
        try:
            await db.execute(f"PRAGMA busy_timeout={int(self._busy_timeout * 1000)}")
            # Reading the header here turns "not a database" into an error at open time.
            await db.execute_fetchall("PRAGMA schema_version")
        except BaseException:
            await db.close()
            raise
        return db

    async def _disconnect(self) -> None:
        for db in (self._writer, self._reader):
            if db is not None:
                try:
                    await db.close()
                except sqlite3.Error as exc:  # closing must not hide the first error
                    logger.warning("closing %s failed: %s", self.path, exc)
        self._writer = self._reader = None

    async def close(self) -> None:
        """Commit pending writes and close the database. Idempotent."""
        if self._closed:
            return
        try:
            await self._batcher.drain()
        finally:
            self._closed = True
            await self._disconnect()

    async def flush(self) -> None:
        """Wait until every write submitted so far is committed."""
        self._ensure_open()
        await self._batcher.drain()

    async def __aenter__(self) -> Self:
        await self.init()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.close()

    def _ensure_open(self) -> None:
        if self._closed:
            raise StoreClosedError(f"SqliteStore {self.path!r} is closed", path=self.path)

    def _read_db(self) -> aiosqlite.Connection:
        self._ensure_open()
        if self._reader is None:
            raise StoreClosedError(
                f"SqliteStore {self.path!r} is not open; call init() or use async with",
                path=self.path,
            )
        return self._reader

    def _submit(self, op: _Op) -> Any:
        self._ensure_open()
        if self._read_only:
            raise ReadOnlyStoreError(f"SqliteStore {self.path!r} is read-only", path=self.path)
        if self._writer is None:
            self._read_db()  # raises the "not open" error
        return self._batcher.submit(op)

    # -- the write batch ---------------------------------------------------------------------
    async def _run_batch(self, ops: Sequence[_Op]) -> list[Any]:
        db = self._writer
        if db is None:
            raise StoreClosedError(f"SqliteStore {self.path!r} is closed", path=self.path)
        results: list[Any] = []
        try:
            await db.execute("BEGIN IMMEDIATE")
            try:
                i = 0
                while i < len(ops):
                    kind = ops[i][0]
                    j = i
                    while j < len(ops) and ops[j][0] == kind and kind != "del":
                        j += 1
                    if kind == "set":
                        await db.executemany(_UPSERT, [op[1:] for op in ops[i:j]])
                        results.extend([None] * (j - i))
                    elif kind == "app":
                        await db.executemany(_INSERT_LOG, [op[1:4] for op in ops[i:j]])
                        results.extend(op[4] for op in ops[i:j])
                    else:
                        j = i + 1
                        results.append(await self._delete(db, ops[i]))
                    i = j
                now = self._clock()
                if now - self._last_purge >= PURGE_INTERVAL:
                    await db.execute(_PURGE, (now,))
                    self._last_purge = now
                await db.commit()
            except BaseException:
                await db.rollback()
                raise
        except sqlite3.Error as exc:
            raise translate(exc, self.path, "write") from exc
        return results

    async def _delete(self, db: aiosqlite.Connection, op: _Op) -> bool:
        rows = list(await db.execute_fetchall(_DELETE, op[1:3]))
        if not rows:
            return False
        expires_at = rows[0][0]
        return expires_at is None or expires_at > self._clock()

    # -- key-value ---------------------------------------------------------------------------
    async def set(self, ns: str, key: str, value: JSONValue, ttl: float | None = None) -> None:
        """Store ``value``; returns once committed. See :meth:`airstore.Store.set`.

        Raises:
            InvalidValueError: ``value`` is not JSON. StorageIOError: the write failed.
        """
        check_key(check_namespace(ns), key)
        text = encode_value(ns, key, value).decode()
        ttl = self._default_ttl if ttl is None else check_ttl(ttl)
        expires_at = None if ttl is None else self._clock() + ttl
        await self._submit(("set", ns, key, text, expires_at))

    async def get(self, ns: str, key: str) -> JSONValue:
        """Return the live value or ``None``."""
        check_key(check_namespace(ns), key)
        rows = await self._read(
            f"SELECT value FROM kv WHERE ns = ? AND key = ? AND {_LIVE}", (ns, key, self._clock())
        )
        return self._decode(rows[0][0], ns) if rows else None

    async def delete(self, ns: str, key: str) -> bool:
        """Remove ``key``; True if it was present and live."""
        check_key(check_namespace(ns), key)
        return bool(await self._submit(("del", ns, key)))

    async def list(self, ns: str, prefix: str = "") -> builtins.list[str]:
        """Live keys starting with ``prefix``, sorted."""
        return [row[0] for row in await self._scan("key", ns, prefix)]

    async def entries(self, ns: str, prefix: str = "") -> builtins.list[tuple[str, JSONValue]]:
        """Live ``(key, value)`` pairs starting with ``prefix``, sorted by key."""
        return [(k, self._decode(v, ns)) for k, v in await self._scan("key, value", ns, prefix)]

    async def _scan(self, columns: str, ns: str, prefix: str) -> builtins.list[Any]:
        check_namespace(ns)
        if not isinstance(prefix, str):
            raise InvalidArgumentError(f"prefix must be a str, got {prefix!r}")
        lo, hi = prefix_bounds(prefix)
        sql = f"SELECT {columns} FROM kv WHERE ns = ? AND key >= ? AND {_LIVE}"
        params: tuple[Any, ...] = (ns, lo, self._clock())
        if hi is not None:
            sql += " AND key < ?"
            params += (hi,)
        return await self._read(sql + " ORDER BY key", params)

    # -- append log --------------------------------------------------------------------------
    async def append(self, ns: str, entry: Entry) -> Entry:
        """Append ``entry``; returns the stored copy with ``_ts`` once committed."""
        check_namespace(ns)
        stored, ts, body = stamp(ns, entry, self._clock)
        result: Entry = await self._submit(("app", ns, ts, body.decode(), stored))
        return result

    async def query(
        self,
        ns: str,
        limit: int = 100,
        offset: int = 0,
        since: TimeBound = None,
        until: TimeBound = None,
        filter: dict[str, JSONValue] | None = None,
    ) -> builtins.list[Entry]:
        """Entries newest first (by ``_ts``, ties in append order) in ``[since, until)``.

        ``filter`` is field equality, evaluated by SQLite (``json_extract``) for scalar values.
        """
        check_namespace(ns)
        limit, offset = check_limits(limit, offset)
        lo, hi = to_epoch_ms(since), to_epoch_ms(until)
        if filter is not None and not isinstance(filter, dict):
            raise InvalidArgumentError(f"filter must be a dict or None, got {filter!r}")
        if limit == 0:
            return []
        conds, params, exact = filter_sql(filter)
        where = ["ns = ?"]
        args: list[Any] = [ns]
        if lo is not None:
            where.append("ts >= ?")
            args.append(lo)
        if hi is not None:
            where.append("ts < ?")
            args.append(hi)
        where += conds
        args += params
        sql = f"SELECT body FROM log WHERE {' AND '.join(where)} ORDER BY ts DESC, id DESC"
        if exact:
            rows = await self._read(sql + " LIMIT ? OFFSET ?", (*args, limit, offset))
            return [self._decode(row[0], ns) for row in rows]
        return await self._query_in_python(sql, args, ns, limit, offset, filter)

    async def _query_in_python(
        self,
        sql: str,
        args: builtins.list[Any],
        ns: str,
        limit: int,
        offset: int,
        flt: dict[str, Any] | None,
    ) -> builtins.list[Entry]:
        out: builtins.list[Entry] = []
        skipped = 0
        db = self._read_db()
        try:
            async with db.execute(sql, args) as cursor:
                while len(out) < limit:
                    rows = await cursor.fetchmany(_PAGE)
                    if not rows:
                        break
                    for row in rows:
                        entry = self._decode(row[0], ns)
                        if not matches(entry, flt):
                            continue
                        if skipped < offset:
                            skipped += 1
                            continue
                        out.append(entry)
                        if len(out) >= limit:
                            break
        except sqlite3.Error as exc:
            if no_schema(exc):
                return []
            raise translate(exc, self.path, "read") from exc
        return out

    # -- reading -----------------------------------------------------------------------------
    async def _read(self, sql: str, params: Sequence[Any]) -> builtins.list[Any]:
        db = self._read_db()
        try:
            return builtins.list(await db.execute_fetchall(sql, params))
        except sqlite3.Error as exc:
            if no_schema(exc):  # a read-only reader opened before any writer created it
                return []
            raise translate(exc, self.path, "read") from exc

    def _decode(self, text: str, ns: str) -> Any:
        return decode_json(text, self.path, ns)
