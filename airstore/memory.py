"""MemoryStore: the in-process backend, also the test double for everything built on a Store."""

from __future__ import annotations

import builtins
import heapq
import time
from collections import deque
from collections.abc import Iterable
from typing import Any

import orjson

from airstore._entry import stamp
from airstore._lifecycle import StoreBase
from airstore._validate import (
    JSON_OPTS,
    check_by,
    check_counter,
    check_filter,
    check_key,
    check_limits,
    check_namespace,
    check_prefix,
    check_ttl,
    encode_value,
    matches,
    to_epoch_ms,
)
from airstore.errors import InvalidArgumentError, StoreClosedError
from airstore.types import Clock, Entry, JSONValue, TimeBound

__all__ = ["MemoryStore"]

_dumps = orjson.dumps

_Item = tuple[Any, float | None]  # (value, expire_at in clock seconds or None)


class MemoryStore(StoreBase):
    """Keeps everything in dicts; nothing survives the process.

    Expired keys vanish lazily when touched and actively: every TTL'd key sits in a heap that
    each write drains, so expired keys never pile up in memory. Values are kept by reference
    (validated as JSON on ``set``); do not mutate a value after storing it.

    Args:
        default_ttl: TTL in seconds applied when ``set`` gets ``ttl=None``.
        max_log_entries: keep at most this many newest log entries per namespace.
        clock: seconds since the epoch; injectable for tests.
    """

    def __init__(
        self,
        *,
        default_ttl: float | None = None,
        max_log_entries: int | None = None,
        clock: Clock = time.time,
    ) -> None:
        if max_log_entries is not None and max_log_entries <= 0:
            raise InvalidArgumentError("max_log_entries must be positive or None")
        self._default_ttl = check_ttl(default_ttl)
        self._max_log = max_log_entries
        self._clock = clock
        self._kv: dict[str, dict[str, _Item]] = {}
        self._logs: dict[str, deque[Entry]] = {}
        self._expiry: list[tuple[float, str, str]] = []
        self._closed = False

    # -- lifecycle ---------------------------------------------------------------------------
    async def init(self) -> None:
        """Nothing to open; present for the protocol."""
        self._ensure_open()

    async def close(self) -> None:
        """Mark the store closed. Idempotent."""
        self._closed = True

    async def flush(self) -> None:
        """Nothing to write."""
        self._ensure_open()

    def _ensure_open(self) -> None:
        if self._closed:
            raise StoreClosedError("MemoryStore is closed")

    # -- key-value ---------------------------------------------------------------------------
    async def set(self, ns: str, key: str, value: JSONValue, ttl: float | None = None) -> None:
        """Store ``value``; see :meth:`airstore.Store.set`."""
        bucket = self._kv.get(ns)
        if bucket is None or self._closed:
            bucket = self._bucket(ns)
        if type(key) is not str or key not in bucket:
            check_key(ns, key)
        try:
            data = _dumps(value, None, JSON_OPTS)
        except TypeError:
            data = encode_value(ns, key, value)  # raises the typed error
        if b"null" in data:
            encode_value(ns, key, value)  # NaN/Infinity hide behind null: check properly
        seconds = self._default_ttl if ttl is None else check_ttl(ttl)
        if seconds is None:
            bucket[key] = (value, None)
            if self._expiry:
                self._sweep(self._clock())
            return
        now = self._clock()
        expire_at = now + seconds
        bucket[key] = (value, expire_at)
        heapq.heappush(self._expiry, (expire_at, ns, key))
        self._sweep(now)

    def _bucket(self, ns: str) -> dict[str, _Item]:
        """The namespace's dict, created on first use (the slow path of every write)."""
        self._ensure_open()
        bucket = self._kv.get(ns)
        if bucket is None:
            bucket = self._kv[check_namespace(ns)] = {}
        return bucket

    async def incr(self, ns: str, key: str, by: int = 1, ttl: float | None = None) -> int:
        """Add ``by`` to the counter at ``key``; see :meth:`airstore.Store.incr`.

        Raises:
            InvalidValueError: the key holds something other than an integer counter.
            InvalidArgumentError: a bad ``by`` or ``ttl``, or the result would overflow.
        """
        bucket = self._bucket(ns)
        check_key(ns, key)
        by = check_by(ns, key, by)
        ttl = self._default_ttl if ttl is None else check_ttl(ttl)
        now = self._clock()
        item = bucket.get(key)
        if item is None or (item[1] is not None and item[1] <= now):
            value = check_counter(ns, key, 0, by)
            expire_at = None if ttl is None else now + ttl
        else:
            value = check_counter(ns, key, item[0], by)
            expire_at = item[1]
        bucket[key] = (value, expire_at)
        if expire_at is not None and (item is None or item[1] != expire_at):
            heapq.heappush(self._expiry, (expire_at, ns, key))
        self._sweep(now)
        return value

    async def get(self, ns: str, key: str) -> JSONValue:
        """Return the value or ``None``."""
        if self._closed:
            self._ensure_open()
        bucket = self._kv.get(ns)
        if bucket is None:
            check_key(check_namespace(ns), key)
            return None
        try:
            item = bucket.get(key)
        except TypeError:  # unhashable key
            item = None
        if item is None:
            check_key(ns, key)
            return None
        expire_at = item[1]
        if expire_at is not None and expire_at <= self._clock():
            del bucket[key]
            return None
        return item[0]

    async def delete(self, ns: str, key: str) -> bool:
        """Remove ``key``; True if it was present and live."""
        self._ensure_open()
        check_key(check_namespace(ns), key)
        bucket = self._kv.get(ns)
        if bucket is None:
            return False
        item = bucket.pop(key, None)
        if item is None:
            return False
        return item[1] is None or item[1] > self._clock()

    async def list(self, ns: str, prefix: str = "") -> builtins.list[str]:
        """Live keys with ``prefix``, sorted."""
        return [k for k, _ in self._live(ns, prefix)]

    async def entries(self, ns: str, prefix: str = "") -> builtins.list[tuple[str, JSONValue]]:
        """Live ``(key, value)`` pairs with ``prefix``, sorted by key."""
        return self._live(ns, prefix)

    def _live(self, ns: str, prefix: str) -> builtins.list[tuple[str, JSONValue]]:
        self._ensure_open()
        check_namespace(ns)
        check_prefix(prefix)
        now = self._clock()
        self._sweep(now)
        bucket = self._kv.get(ns, {})
        return sorted(
            (k, v)
            for k, (v, exp) in bucket.items()
            if k.startswith(prefix) and (exp is None or exp > now)
        )

    def _sweep(self, now: float) -> None:
        heap = self._expiry
        while heap and heap[0][0] <= now:
            expire_at, ns, key = heapq.heappop(heap)
            bucket = self._kv.get(ns)
            if bucket is not None:
                item = bucket.get(key)
                # Only drop it if it was not overwritten with another expiry since.
                if item is not None and item[1] == expire_at:
                    del bucket[key]

    # -- append log --------------------------------------------------------------------------
    async def append(self, ns: str, entry: Entry) -> Entry:
        """Append ``entry``; returns a copy with ``_ts`` (epoch ms) set unless it had an int."""
        if self._closed:
            self._ensure_open()
        log = self._logs.get(ns)
        if log is None:
            log = self._logs[check_namespace(ns)] = deque(maxlen=self._max_log)
        stored = stamp(ns, entry, self._clock)[0]
        log.append(stored)
        return stored

    async def append_many(self, ns: str, entries: Iterable[Entry]) -> builtins.list[Entry]:
        """Append every entry, all validated first (a bad one appends nothing)."""
        self._ensure_open()
        check_namespace(ns)
        clock = self._clock
        stored = [stamp(ns, entry, clock)[0] for entry in entries]
        log = self._logs.get(ns)
        if log is None:
            log = self._logs[ns] = deque(maxlen=self._max_log)
        log.extend(stored)
        return stored

    async def query(
        self,
        ns: str,
        limit: int = 100,
        offset: int = 0,
        since: TimeBound = None,
        until: TimeBound = None,
        filter: dict[str, JSONValue] | None = None,
    ) -> builtins.list[Entry]:
        """Entries newest first within ``[since, until)`` matching ``filter``."""
        self._ensure_open()
        check_namespace(ns)
        limit, offset = check_limits(limit, offset)
        lo, hi = to_epoch_ms(since), to_epoch_ms(until)
        check_filter(filter)
        out: builtins.list[Entry] = []
        if limit == 0:
            return out
        skipped = 0
        for entry in reversed(self._logs.get(ns, ())):
            ts = entry["_ts"]
            if hi is not None and ts >= hi:
                continue
            if lo is not None and ts < lo:
                continue
            if not matches(entry, filter):
                continue
            if skipped < offset:
                skipped += 1
                continue
            out.append(entry)
            if len(out) >= limit:
                break
        return out
