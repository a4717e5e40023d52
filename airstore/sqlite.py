"""SqliteStore: one SQLite file (WAL) shared by any number of processes, through aiosqlite."""

from __future__ import annotations

import asyncio
import builtins
import logging
import os
import sqlite3
import time
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any
from urllib.request import pathname2url

import aiosqlite

from airstore import _exit
from airstore._batch import Batcher
from airstore._entry import stamp
from airstore._lifecycle import StoreBase
from airstore._retention import Retention
from airstore._sqlite_ops import RETENTION_INTERVAL, SqliteOps
from airstore._sqlite_sql import (
    DELETE,
    INSERT_LOG,
    LIVE,
    PURGE,
    SCHEMA,
    SCHEMA_VERSION,
    UPSERT,
    connect,
    decode_json,
    filtered_rows,
    log_query,
    no_schema,
    prefix_bounds,
    stop_connection,
    translate,
)
from airstore._validate import (
    MAX_TS,
    check_filter,
    check_key,
    check_limits,
    check_namespace,
    check_prefix,
    check_ttl,
    clamp_window,
    encode_value,
    to_epoch_ms,
)
from airstore.errors import (
    CorruptDataError,
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
EXIT_JOIN_TIMEOUT = 2.0
"""Seconds interpreter exit waits for a forgotten store's connection threads to finish."""
PURGE_INTERVAL = 1.0
"""Store-clock seconds between two deletions of expired keys (done inside a write batch)."""
_IN_CHUNK = 900  # bound parameters per SELECT … IN (…), under SQLite's old 999 limit

# One queued write: ("set", [(ns, key, json, expires_at), …]) | ("del", ns, key)
#                 | ("incr", ns, key, by, expires_at) | ("app", [(ns, ts, json), …]);
# set_many/append_many queue many rows at once
_Op = tuple[Any, ...]


class SqliteStore(SqliteOps, StoreBase):
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
        self._max_batch = max_batch
        self._batcher: Batcher[_Op] = Batcher(self._run_batch, max_batch=max_batch)
        self._gets: Batcher[tuple[str, str]] = Batcher(self._run_gets, max_batch=max_batch)
        self._last_purge = float("-inf")
        self._retention: dict[str, Retention] = {}
        self._last_retention = float("-inf")
        self._opened = False
        self._closed = False
        self._closing = False  # close() is draining: new operations are refused

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
                await self._prepare(self._writer)
                self._reader = await self._connect(read_only=False)
        except sqlite3.Error as exc:
            await self._disconnect()
            raise translate(exc, self.path, "open") from exc
        except OSError as exc:
            await self._disconnect()
            raise StorageIOError(f"cannot open {self.path!r}: {exc}", path=self.path) from exc
        self._opened = True
        _exit.track(self)

    def __repr__(self) -> str:
        return f"SqliteStore({self.path!r}{', read-only' if self._read_only else ''})"

    def close_at_exit(self) -> None:
        """Interpreter exit, the store never closed: stop both connections' worker threads
        (each closes its connection after the work already queued). Every acknowledged write
        is already committed; nothing waits longer than :data:`EXIT_JOIN_TIMEOUT`."""
        self._closed = True
        for db in (self._writer, self._reader):
            if db is not None:
                stop_connection(db, EXIT_JOIN_TIMEOUT)

    async def _prepare(self, db: aiosqlite.Connection) -> None:
        """WAL mode and the schema. Processes opening a new database at once can get "database
        is locked" here without SQLite waiting for ``busy_timeout`` (switching to WAL, or a
        schema write racing another's): retried until ``busy_timeout`` has passed."""
        deadline = time.monotonic() + self._busy_timeout
        delay = 0.01
        while True:
            try:
                await db.execute("PRAGMA journal_mode=WAL")
                await db.execute("PRAGMA synchronous=NORMAL")
                await db.executescript(SCHEMA)
                await db.execute(f"PRAGMA user_version={SCHEMA_VERSION}")
                return
            except sqlite3.OperationalError as exc:
                locked = "locked" in str(exc) or "busy" in str(exc)
                if not locked or time.monotonic() + delay > deadline:
                    raise
                if db.in_transaction:
                    await db.execute("ROLLBACK")
            await asyncio.sleep(delay)
            delay = min(delay * 2, 0.2)

    async def _connect(self, *, read_only: bool) -> aiosqlite.Connection:
        target = self._ro_uri if read_only else self.path
        return await connect(target, uri=read_only, busy_timeout=self._busy_timeout)

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
        self._closing = True  # writers that keep submitting would keep the drain going forever
        try:
            await self._batcher.drain()
            await self._gets.drain()
        finally:
            self._closed = True
            _exit.untrack(self)
            await self._disconnect()

    async def flush(self) -> None:
        """Wait until every write submitted so far is committed (and the log caps applied)."""
        self._ensure_open()
        if self._retention and not self._read_only:
            self._last_retention = float("-inf")
            await self._submit(("app", []))
        await self._batcher.drain()

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

    def _refuse_if_closing(self) -> None:
        if self._closing:
            raise StoreClosedError(f"SqliteStore {self.path!r} is closing", path=self.path)

    def _submit(self, op: _Op) -> Any:
        self._refuse_if_closing()
        self._ensure_open()
        if self._read_only:
            raise ReadOnlyStoreError(f"SqliteStore {self.path!r} is read-only", path=self.path)
        if self._writer is None:
            self._read_db()  # raises the "not open" error
        return self._batcher.submit(op)

    async def _submit_rows(self, kind: str, rows: builtins.list[_Op]) -> None:
        self._ensure_open()
        step = self._max_batch
        chunks = [self._submit((kind, rows[i : i + step])) for i in range(0, len(rows), step)]
        await asyncio.gather(*chunks)

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
                    while j < len(ops) and ops[j][0] == kind and kind in ("set", "app"):
                        j += 1
                    if kind in ("set", "app"):
                        rows = [row for op in ops[i:j] for row in op[1]]
                        await db.executemany(UPSERT if kind == "set" else INSERT_LOG, rows)
                        results.extend([None] * (j - i))
                    elif kind == "del":
                        j = i + 1
                        results.append(await self._delete(db, ops[i]))
                    else:
                        j = i + 1
                        results.append(await self._incr(db, ops[i]))
                    i = j
                now = self._clock()
                if now - self._last_purge >= PURGE_INTERVAL:
                    await db.execute(PURGE, (now,))
                    self._last_purge = now
                if self._retention and now - self._last_retention >= RETENTION_INTERVAL:
                    await self._trim(db, now)
                    self._last_retention = now
                await db.commit()
            except BaseException:
                await db.rollback()
                raise
        except sqlite3.Error as exc:
            raise translate(exc, self.path, "write") from exc
        return results

    async def _delete(self, db: aiosqlite.Connection, op: _Op) -> bool:
        rows = list(await db.execute_fetchall(DELETE, op[1:3]))
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
        await self._submit(("set", [self._set_row(ns, key, value, ttl)]))

    async def set_many(
        self, ns: str, items: Iterable[tuple[str, JSONValue]], ttl: float | None = None
    ) -> None:
        """Store many ``(key, value)`` pairs, committed in as few transactions as ``max_batch``
        allows. Every pair is validated before anything is queued.

        Raises:
            InvalidKeyError, InvalidValueError: a bad pair (nothing written).
            StorageIOError: a transaction failed (earlier ones may have committed).
        """
        await self._submit_rows("set", [self._set_row(ns, k, v, ttl) for k, v in items])

    def _set_row(self, ns: str, key: str, value: JSONValue, ttl: float | None) -> _Op:
        check_key(check_namespace(ns), key)
        text = encode_value(ns, key, value).decode()
        ttl = self._default_ttl if ttl is None else check_ttl(ttl)
        return (ns, key, text, None if ttl is None else self._clock() + ttl)

    async def get(self, ns: str, key: str) -> JSONValue:
        """Return the live value or ``None``; concurrent gets share one ``SELECT``."""
        check_key(check_namespace(ns), key)
        self._refuse_if_closing()
        self._read_db()
        return await self._gets.submit((ns, key))

    async def _run_gets(self, ops: Sequence[tuple[str, str]]) -> builtins.list[Any]:
        now = self._clock()
        found: dict[tuple[str, str], str] = {}
        by_ns: dict[str, dict[str, None]] = {}
        for ns, key in ops:
            by_ns.setdefault(ns, {})[key] = None
        for ns, keys in by_ns.items():
            unique = builtins.list(keys)
            for start in range(0, len(unique), _IN_CHUNK):
                chunk = unique[start : start + _IN_CHUNK]
                marks = ",".join("?" * len(chunk))
                sql = f"SELECT key, value FROM kv WHERE ns = ? AND key IN ({marks}) AND {LIVE}"
                for key, text in await self._read(sql, (ns, *chunk, now)):
                    found[ns, key] = text
        out: builtins.list[Any] = []
        for op in ops:
            text = found.get(op)
            try:
                out.append(None if text is None else self._decode(text, op[0]))
            except CorruptDataError as exc:
                out.append(exc)
        return out

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
        lo, hi = prefix_bounds(check_prefix(prefix))
        sql = f"SELECT {columns} FROM kv WHERE ns = ? AND key >= ? AND {LIVE}"
        params: tuple[Any, ...] = (ns, lo, self._clock())
        if hi is not None:
            sql += " AND key < ?"
            params += (hi,)
        return await self._read(sql + " ORDER BY key", params)

    # -- append log --------------------------------------------------------------------------
    async def append(self, ns: str, entry: Entry) -> Entry:
        """Append ``entry``; returns the stored copy with ``_ts`` once committed."""
        stored, ts, body = stamp(check_namespace(ns), entry, self._clock)
        await self._submit(("app", [(ns, ts, body.decode())]))
        return stored

    async def append_many(self, ns: str, entries: Iterable[Entry]) -> builtins.list[Entry]:
        """Append many entries (validated first) in as few transactions as possible."""
        check_namespace(ns)
        stamped = [stamp(ns, entry, self._clock) for entry in entries]
        await self._submit_rows("app", [(ns, ts, body.decode()) for _, ts, body in stamped])
        return [stored for stored, _, _ in stamped]

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
        window = clamp_window(to_epoch_ms(since), to_epoch_ms(until))
        filter = check_filter(filter)
        if limit == 0 or window is None or offset > MAX_TS:
            return []
        sql, args, exact = log_query(ns, *window, filter)
        if exact:
            page = (*args, min(limit, MAX_TS), offset)  # SQLite binds 64-bit integers only
            rows = await self._read(sql + " LIMIT ? OFFSET ?", page)
            return [self._decode(row[0], ns) for row in rows]
        try:
            return await filtered_rows(
                self._read_db(), sql, args, self.path, ns, limit, offset, filter
            )
        except sqlite3.Error as exc:
            if no_schema(exc):
                return []
            raise translate(exc, self.path, "read") from exc

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
