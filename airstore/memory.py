"""MemoryStore: the in-process backend, also the test double for everything built on a Store."""

from __future__ import annotations

import builtins
import heapq
import time
from collections import deque
from collections.abc import Iterable
from typing import Any

import orjson

from airstore import _accel, _exit
from airstore._entry import stamp
from airstore._lifecycle import StoreBase
from airstore._retention import Retention
from airstore._validate import (
    JSON_OPTS,
    MAX_KEY_LENGTH,
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

_MISSING: Any = object()
_MIN_COMPACT = 1024  # heap entries never compacted below
_N = ord("n")  # every ``null`` holds this byte
_DASH = ord("-")  # every uuid.UUID's text holds four
# One namespace: (values by key, expiry in clock seconds by key for the keys that have one).
# Values sit in the dict directly, not in a (value, expiry) tuple: a long-lived tuple per key
# is one more object for the garbage collector to track and scan, which halved set throughput.
_Space = tuple[dict[str, Any], dict[str, float]]


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
        self._kv: dict[str, _Space] = {}
        # The namespaces whose sets may take the fast path (validate, store, done): filled while
        # the store is open, has no default TTL and no key has an expiry (the heap is empty).
        self._plain: dict[str, dict[str, Any]] = {}
        self._logs: dict[str, deque[Entry]] = {}
        self._retention: dict[str, Retention] = {}
        self._sizes: dict[str, deque[int]] = {}  # encoded bytes per entry, for byte caps
        self._expiry: list[tuple[float, str, str]] = []
        self._compact_at = _MIN_COMPACT  # heap size that triggers _compact_expiry
        self._closed = False
        _exit.track(self)

    def __repr__(self) -> str:
        return f"MemoryStore({sum(len(s[0]) for s in self._kv.values())} keys)"

    # -- lifecycle ---------------------------------------------------------------------------
    async def init(self) -> None:
        """Nothing to open; present for the protocol."""
        self._ensure_open()

    async def close(self) -> None:
        """Mark the store closed. Idempotent."""
        self._closed = True
        self._plain.clear()
        _exit.untrack(self)

    def close_at_exit(self) -> None:
        """Interpreter exit: mark the store closed (it holds nothing to flush)."""
        self._closed = True
        self._plain.clear()

    async def flush(self) -> None:
        """Nothing to write."""
        self._ensure_open()

    def _ensure_open(self) -> None:
        if self._closed:
            raise StoreClosedError("MemoryStore is closed")

    # -- key-value ---------------------------------------------------------------------------
    async def set(self, ns: str, key: str, value: JSONValue, ttl: float | None = None) -> None:
        """Store ``value``; see :meth:`airstore.Store.set`."""
        try:
            items = self._plain[ns]
        except (KeyError, TypeError):  # not in the fast-path table, or unhashable
            self._set(ns, key, value, ttl)  # new namespace, TTLs, closed store
            return
        fast = _accel.mem_put
        if fast is not None and ttl is None and fast(key, value, items, MAX_KEY_LENGTH):
            return  # the C speedups checked and stored it (False: nothing changed)
        if (
            ttl is not None
            or type(key) is not str
            or not key.isascii()
            or not key
            or len(key) > MAX_KEY_LENGTH
        ):
            self._set(ns, key, value, ttl)  # TTLs, odd keys
            return
        try:
            data = _dumps(value, None, JSON_OPTS)
        except TypeError:
            data = encode_value(ns, key, value)  # raises the typed error
        # NaN/Infinity hide behind null, a uuid.UUID behind a string with four "-": check
        # properly. An "n" byte (one memchr) must be there first; ``bytes.find`` alone costs
        # four times as much.
        if (_N in data and data.find(b"null") >= 0) or (_DASH in data and data.count(_DASH) > 3):
            encode_value(ns, key, value)
        items[key] = value

    def _set(self, ns: str, key: str, value: JSONValue, ttl: float | None) -> None:
        """:meth:`set` for every case the fast path leaves out (validates everything)."""
        space = self._space(ns)
        items = space[0]
        check_key(ns, key)
        encode_value(ns, key, value)
        seconds = self._default_ttl if ttl is None else check_ttl(ttl)
        if seconds is None:
            items[key] = value
            if space[1]:
                space[1].pop(key, None)
            if self._expiry:
                self._sweep(self._clock())
            if not self._expiry and self._default_ttl is None:
                self._plain[ns] = items  # no expiry anywhere: later sets take the fast path
            return
        now = self._clock()
        expire_at = now + seconds
        items[key] = value
        space[1][key] = expire_at
        self._push_expiry(expire_at, ns, key)
        self._sweep(now)

    def _push_expiry(self, expire_at: float, ns: str, key: str) -> None:
        """Queue a TTL'd key for the sweep; while one is queued every set takes the slow path
        (which sweeps and clears other expiries)."""
        heapq.heappush(self._expiry, (expire_at, ns, key))
        self._plain.clear()
        if len(self._expiry) > self._compact_at:
            self._compact_expiry()

    def _compact_expiry(self) -> None:
        """Rebuild the heap from the live expiries: a key set again with a TTL (or deleted)
        leaves its old entry behind until that time comes, so one session key refreshed on
        every call would otherwise grow the heap by an entry per call for as long as its TTL.
        Rebuilt when it doubles, so each push costs O(1) amortized."""
        heap = [(at, ns, key) for ns, (_, exp) in self._kv.items() for key, at in exp.items()]
        heapq.heapify(heap)
        self._expiry = heap
        self._compact_at = max(_MIN_COMPACT, 2 * len(heap))

    def _space(self, ns: str) -> _Space:
        """The namespace's dicts, created on first use (the slow path of every write)."""
        self._ensure_open()
        try:
            space = self._kv.get(ns)
        except TypeError:  # an unhashable namespace: check_namespace names it
            space = None
        if space is None:
            space = self._kv[check_namespace(ns)] = ({}, {})
        return space

    async def incr(self, ns: str, key: str, by: int = 1, ttl: float | None = None) -> int:
        """Add ``by`` to the counter at ``key``; see :meth:`airstore.Store.incr`.

        Raises:
            InvalidValueError: the key holds something other than an integer counter.
            InvalidArgumentError: a bad ``by`` or ``ttl``, or the result would overflow.
        """
        items, expires = self._space(ns)
        check_key(ns, key)
        by = check_by(ns, key, by)
        seconds = self._default_ttl if ttl is None else check_ttl(ttl)
        now = self._clock()
        current = items.get(key, _MISSING)
        expire_at = expires.get(key)
        if current is _MISSING or (expire_at is not None and expire_at <= now):
            value = check_counter(ns, key, 0, by)
            expire_at = None if seconds is None else now + seconds
            expires.pop(key, None)
            if expire_at is not None:
                expires[key] = expire_at
                self._push_expiry(expire_at, ns, key)
        else:
            value = check_counter(ns, key, current, by)
        items[key] = value
        self._sweep(now)
        return value

    async def get(self, ns: str, key: str) -> JSONValue:
        """Return the value or ``None``."""
        if self._closed:
            self._ensure_open()
        try:
            space = self._kv.get(ns)
        except TypeError:  # an unhashable namespace
            space = None
        if space is None:
            check_key(check_namespace(ns), key)
            return None
        try:
            value = space[0].get(key, _MISSING)
        except TypeError:  # unhashable key
            value = _MISSING
        if value is _MISSING:
            check_key(ns, key)
            return None
        expires = space[1]
        if expires:
            expire_at = expires.get(key)
            if expire_at is not None and expire_at <= self._clock():
                del space[0][key], expires[key]
                return None
        return value

    async def delete(self, ns: str, key: str) -> bool:
        """Remove ``key``; True if it was present and live."""
        self._ensure_open()
        check_key(check_namespace(ns), key)
        space = self._kv.get(ns)
        if space is None or space[0].pop(key, _MISSING) is _MISSING:
            return False
        expire_at = space[1].pop(key, None)
        return expire_at is None or expire_at > self._clock()

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
        space = self._kv.get(ns)
        if space is None:
            return []
        items, expires = space
        return sorted(
            (k, v)
            for k, v in items.items()
            if k.startswith(prefix) and ((exp := expires.get(k)) is None or exp > now)
        )

    def _sweep(self, now: float) -> None:
        heap = self._expiry
        while heap and heap[0][0] <= now:
            expire_at, ns, key = heapq.heappop(heap)
            space = self._kv.get(ns)
            # Only drop it if it was not overwritten with another expiry since.
            if space is not None and space[1].get(key) == expire_at:
                del space[0][key], space[1][key]

    # -- append log --------------------------------------------------------------------------
    async def append(self, ns: str, entry: Entry) -> Entry:
        """Append ``entry``; returns a copy with ``_ts`` (epoch ms) set unless it had an int."""
        if self._closed:
            self._ensure_open()
        try:
            log = self._logs.get(ns)
        except TypeError:  # an unhashable namespace: check_namespace names it
            log = None
        if log is None:
            log = self._logs[check_namespace(ns)] = deque(maxlen=self._max_log)
        stored, _, body = stamp(ns, entry, self._clock)
        log.append(stored)
        if self._retention:
            self._retain(ns, [len(body) + 1])
        return stored

    async def set_log_retention(
        self, ns: str, *, max_age: float | None = None, max_bytes: int | None = None
    ) -> None:
        """Cap the log of ``ns`` by entry age and by encoded size (see
        :meth:`airstore.Store.set_log_retention`); applied at once and at every append."""
        self._ensure_open()
        caps = Retention.checked(max_age, max_bytes)
        check_namespace(ns)
        if caps.max_age is None and caps.max_bytes is None:
            self._retention.pop(ns, None)
            self._sizes.pop(ns, None)
            return
        self._retention[ns] = caps
        log = self._logs.get(ns, ())
        sizes = [len(_dumps(e, None, JSON_OPTS)) + 1 for e in log]
        self._sizes[ns] = deque(maxlen=self._max_log)
        self._retain(ns, sizes)

    def _retain(self, ns: str, added: builtins.list[int]) -> None:
        caps = self._retention.get(ns)
        log = self._logs.get(ns)
        if caps is None or log is None:
            return
        sizes = self._sizes.setdefault(ns, deque(maxlen=self._max_log))
        sizes.extend(added)
        if caps.max_age is not None:
            cutoff = int((self._clock() - caps.max_age) * 1000)
            while log and log[0]["_ts"] < cutoff:
                log.popleft()
                sizes.popleft()
        if caps.max_bytes is not None:
            total = sum(sizes)
            while log and total > caps.max_bytes:
                log.popleft()
                total -= sizes.popleft()

    async def append_many(self, ns: str, entries: Iterable[Entry]) -> builtins.list[Entry]:
        """Append every entry, all validated first (a bad one appends nothing)."""
        self._ensure_open()
        check_namespace(ns)
        clock = self._clock
        stamped = [stamp(ns, entry, clock) for entry in entries]
        log = self._logs.get(ns)
        if log is None:
            log = self._logs[ns] = deque(maxlen=self._max_log)
        stored = [s for s, _, _ in stamped]
        log.extend(stored)
        if self._retention:
            self._retain(ns, [len(body) + 1 for _, _, body in stamped])
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
