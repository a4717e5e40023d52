"""Counters and log retention of :class:`airstore.RedisStore` (mixed into it).

``incr`` is one server-side script (atomic for every client of the server; a live counter
keeps its TTL); log caps are Redis's own ``XTRIM``.
"""

from __future__ import annotations

import math
from typing import Any

from redis import exceptions as rex

from airstore._redis_codec import translate
from airstore._retention import Retention
from airstore._validate import MAX_COUNTER, check_by, check_key, check_namespace, check_ttl
from airstore.errors import InvalidArgumentError, InvalidValueError, ReadOnlyStoreError
from airstore.types import Clock

__all__ = ["RETENTION_INTERVAL", "RedisOps"]

RETENTION_INTERVAL = 10.0
"""Store-clock seconds between two trims of a capped stream."""

_Op = tuple[Any, ...]


class RedisOps:
    """Relies on the attributes RedisStore sets."""

    where: str
    _client: Any
    _read_only: bool
    _default_ttl: float | None
    _clock: Clock
    _retention: dict[str, Retention]
    _entry_bytes: dict[str, tuple[int, int]]
    _trimmed: dict[str, float]

    def _submit(self, op: _Op, *, write: bool) -> Any:
        raise NotImplementedError

    def _ensure_open(self) -> None:
        raise NotImplementedError

    def _kv_key(self, ns: str, key: str) -> str:
        raise NotImplementedError

    def _log_key(self, ns: str) -> str:
        raise NotImplementedError

    async def incr(self, ns: str, key: str, by: int = 1, ttl: float | None = None) -> int:
        """Add ``by`` to the counter at ``key`` in one server-side script (atomic across every
        client of the server; a live counter keeps its TTL). See :meth:`airstore.Store.incr`.

        Raises:
            InvalidValueError: the key holds something other than an integer counter.
            InvalidArgumentError: a bad ``by`` or ``ttl``, or the result would overflow.
            StorageIOError: Redis failed.
        """
        check_key(check_namespace(ns), key)
        by = check_by(ns, key, by)
        ttl = self._default_ttl if ttl is None else check_ttl(ttl)
        now = self._clock()
        head = b"" if ttl is None else repr(now + ttl).encode()
        px = b"" if ttl is None else max(1, math.ceil(ttl * 1000))
        op = ("incr", self._kv_key(ns, key), by, now, head, px, MAX_COUNTER)
        try:
            return int(await self._submit(op, write=True))
        except (InvalidValueError, InvalidArgumentError) as exc:
            exc.namespace, exc.key = ns, key
            raise

    async def set_log_retention(
        self, ns: str, *, max_age: float | None = None, max_bytes: int | None = None
    ) -> None:
        """Cap the stream of ``ns`` (see :meth:`airstore.Store.set_log_retention`) with Redis's
        own trimming: ``XTRIM MINID`` for ``max_age``; for ``max_bytes``, ``XTRIM MAXLEN``
        at the entry count that fits, by the average size of the entries this store appended
        (an approximation: Redis trims by count, not bytes). Applied at once and then at most
        every :data:`RETENTION_INTERVAL` by appends. The caps live in this store object.

        Raises:
            InvalidArgumentError: a cap that is not positive and finite.
            ReadOnlyStoreError: the store is read-only.
            StorageIOError: Redis failed.
        """
        caps = Retention.checked(max_age, max_bytes)
        check_namespace(ns)
        self._ensure_open()
        if self._read_only:
            raise ReadOnlyStoreError(f"RedisStore {self.where} is read-only", path=self.where)
        if caps.max_age is None and caps.max_bytes is None:
            self._retention.pop(ns, None)
            return
        self._retention[ns] = caps
        self._trimmed.pop(ns, None)
        await self._retain(ns, 0, 0)

    async def _retain(self, ns: str, entries: int, size: int) -> None:
        caps = self._retention.get(ns)
        if caps is None:
            return
        count, total = self._entry_bytes.get(ns, (0, 0))
        count, total = count + entries, total + size
        self._entry_bytes[ns] = (count, total)
        now = self._clock()
        if now - self._trimmed.get(ns, float("-inf")) < RETENTION_INTERVAL:
            return
        self._trimmed[ns] = now
        key = self._log_key(ns)
        try:
            if caps.max_age is not None:
                floor_ms = max(0, int((now - caps.max_age) * 1000))
                await self._client.xtrim(key, minid=f"{floor_ms}-0", approximate=False)
            if caps.max_bytes is not None:
                average = total / count if count else 256.0
                keep = max(1, int(caps.max_bytes / max(average + 1, 1.0)))
                await self._client.xtrim(key, maxlen=keep, approximate=False)
        except rex.RedisError as exc:
            raise translate(exc, self.where, "XTRIM") from exc
