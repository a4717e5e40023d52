"""Counters and log retention of :class:`airstore.SqliteStore` (mixed into it).

``incr`` is one ``UPSERT … RETURNING`` inside the batch's write transaction, so it is atomic
across every process sharing the file; log caps are ``DELETE``s inside a write transaction.
"""

from __future__ import annotations

from typing import Any

import aiosqlite

from airstore._retention import Retention
from airstore._sqlite_sql import COUNTER, INCR, TRIM_AGE, TRIM_BYTES, decode_json
from airstore._validate import (
    MAX_COUNTER,
    check_by,
    check_counter,
    check_key,
    check_namespace,
    check_ttl,
)
from airstore.errors import AirstoreError, ReadOnlyStoreError, StorageIOError
from airstore.types import Clock

__all__ = ["RETENTION_INTERVAL", "SqliteOps"]

RETENTION_INTERVAL = 10.0
"""Store-clock seconds between two applications of the log caps (inside a write batch)."""

_Op = tuple[Any, ...]


class SqliteOps:
    """Relies on the attributes SqliteStore sets."""

    path: str
    _read_only: bool
    _default_ttl: float | None
    _clock: Clock
    _retention: dict[str, Retention]
    _last_retention: float

    def _submit(self, op: _Op) -> Any:
        raise NotImplementedError

    async def _trim(self, db: aiosqlite.Connection, now: float) -> None:
        for ns, caps in list(self._retention.items()):
            if caps.max_age is not None:
                await db.execute(TRIM_AGE, (ns, int((now - caps.max_age) * 1000)))
            if caps.max_bytes is not None:
                await db.execute(TRIM_BYTES, (ns, caps.max_bytes))

    async def set_log_retention(
        self, ns: str, *, max_age: float | None = None, max_bytes: int | None = None
    ) -> None:
        """Cap the log of ``ns`` by entry age (``_ts``) and by the bytes of the stored entries
        (see :meth:`airstore.Store.set_log_retention`): rows beyond the caps are deleted
        inside a write transaction, at once and then every :data:`RETENTION_INTERVAL`. The
        caps live in this store object: every process writing the file should set them.

        Raises:
            InvalidArgumentError: a cap that is not positive and finite.
            ReadOnlyStoreError: the store is read-only.
        """
        caps = Retention.checked(max_age, max_bytes)
        check_namespace(ns)
        if self._read_only:
            raise ReadOnlyStoreError(f"SqliteStore {self.path!r} is read-only", path=self.path)
        if caps.max_age is None and caps.max_bytes is None:
            self._retention.pop(ns, None)
            return
        self._retention[ns] = caps
        self._last_retention = float("-inf")
        await self._submit(("app", []))  # a write batch applies the caps now

    async def _incr(self, db: aiosqlite.Connection, op: _Op) -> Any:
        """One counter step inside the batch's transaction; the error instance when refused."""
        _, ns, key, by, expires_at = op
        now = self._clock()
        rows = list(await db.execute_fetchall(INCR, (ns, key, by, expires_at, MAX_COUNTER, now)))
        if rows:
            return int(rows[0][0])
        held = list(await db.execute_fetchall(COUNTER, (ns, key)))
        try:  # explain the refusal exactly as every backend does
            check_counter(ns, key, decode_json(held[0][0], self.path, ns) if held else 0, by)
        except AirstoreError as exc:
            return exc
        return StorageIOError(f"incr of {ns!r}/{key!r} in {self.path!r} changed nothing")

    async def incr(self, ns: str, key: str, by: int = 1, ttl: float | None = None) -> int:
        """Add ``by`` to the counter at ``key`` in one SQL statement (an UPSERT … RETURNING
        inside the batch's write transaction), atomic across processes sharing the file.
        See :meth:`airstore.Store.incr`.

        Raises:
            InvalidValueError: the key holds something other than an integer counter.
            InvalidArgumentError: a bad ``by`` or ``ttl``, or the result would overflow.
        """
        check_key(check_namespace(ns), key)
        by = check_by(ns, key, by)
        ttl = self._default_ttl if ttl is None else check_ttl(ttl)
        expires_at = None if ttl is None else self._clock() + ttl
        return int(await self._submit(("incr", ns, key, by, expires_at)))
