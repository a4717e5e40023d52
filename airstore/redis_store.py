"""RedisStore: the shared backend for many server instances, on redis.asyncio."""

from __future__ import annotations

import asyncio
import builtins
import logging
import math
import time
from collections.abc import Iterable, Sequence
from typing import Any

import orjson
import redis.asyncio as aioredis
from redis import exceptions as rex
from redis.asyncio.retry import Retry
from redis.backoff import ExponentialBackoff

from airstore import _exit
from airstore._batch import Batcher
from airstore._entry import stamp
from airstore._lifecycle import StoreBase
from airstore._redis_batch import command, outcomes, plan
from airstore._redis_codec import (
    check_db_path,
    decode_value,
    encode_value_payload,
    escape_glob,
    split_prefix,
    translate,
)
from airstore._redis_filter import scan_filtered
from airstore._redis_ops import RedisOps
from airstore._retention import Retention
from airstore._validate import (
    check_filter,
    check_key,
    check_limits,
    check_namespace,
    check_prefix,
    check_ttl,
    clamp_window,
    encode_value,
    matches,
    needle,
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

__all__ = ["RedisStore"]

logger = logging.getLogger(__name__)

DEFAULT_URL = "redis://127.0.0.1:6379/0"
DEFAULT_PREFIX = "air:"
DEFAULT_MAX_LOG_ENTRIES = 1_000_000
"""Approximate per-namespace stream length kept (``XADD … MAXLEN ~``); ``None`` keeps all."""
DEFAULT_SOCKET_TIMEOUT = 5.0
DEFAULT_CONNECT_TIMEOUT = 2.0
DEFAULT_MAX_CONNECTIONS = 32
DEFAULT_MAX_BATCH = 10_000
MIN_REDIS_MAJOR = 7

_SCAN_COUNT = 1000
_PAGE = 1000
_BODY = b"d"

# One queued command: ("get", key) | ("set", [(key, payload, px), …]) | ("del", key)
#                   | ("incr", key, by, now, head, px, limit) | ("app", stream, [(ts, body), …]);
# the *_many calls queue many rows at once
_Op = tuple[Any, ...]


class RedisStore(RedisOps, StoreBase):
    """Key-value with TTL plus a log per namespace (a Redis Stream), shared by many processes.

    Commands issued during one event-loop turn go to Redis in one pipeline, folded into a few
    commands (``MGET``, one Lua ``EVAL`` for the sets, one per stream for the appends), so
    concurrent callers share round trips; every awaited call returns after Redis answered it. TTL is
    decided by the store's ``clock`` (the expiry travels with the value) and also bounded in
    real time by Redis (``SET … PX``), so expired keys both read as missing and get reaped.
    Log entries get stream ids ``<_ts>-<seq>``; ``since``/``until`` map onto those ids. An entry
    whose ``_ts`` is older than the newest id in its stream is stored with the next free id, so
    it is ordered and time-windowed by when it arrived (its ``_ts`` is kept unchanged).

    Args:
        url: ``redis://[user:password@]host:port/db`` (also ``rediss://``, ``unix://``); a
            ``?prefix=app:`` query parameter sets ``prefix`` (handy with ``create_storage``).
        prefix: prepended to every Redis key; separates applications sharing one database.
        default_ttl: TTL in seconds applied when ``set`` gets ``ttl=None``.
        clock: seconds since the epoch; injectable for tests.
        max_log_entries: approximate entries kept per namespace stream; ``None`` keeps all.
        read_only: refuse writes with :class:`ReadOnlyStoreError`.
        socket_timeout: seconds before a command without an answer fails.
        connect_timeout: seconds before an unreachable server fails a command.
        max_connections: connection pool size.
        max_batch: the most commands per pipeline.
    """

    def __init__(
        self,
        url: str = DEFAULT_URL,
        *,
        prefix: str = DEFAULT_PREFIX,
        default_ttl: float | None = None,
        clock: Clock = time.time,
        max_log_entries: int | None = DEFAULT_MAX_LOG_ENTRIES,
        read_only: bool = False,
        socket_timeout: float = DEFAULT_SOCKET_TIMEOUT,
        connect_timeout: float = DEFAULT_CONNECT_TIMEOUT,
        max_connections: int = DEFAULT_MAX_CONNECTIONS,
        max_batch: int = DEFAULT_MAX_BATCH,
    ) -> None:
        if not isinstance(url, str) or "://" not in url:
            raise InvalidArgumentError(f"RedisStore needs a redis:// URL, got {url!r}")
        if not isinstance(prefix, str):
            raise InvalidArgumentError(f"prefix must be a str, got {prefix!r}")
        if max_log_entries is not None and max_log_entries <= 0:
            raise InvalidArgumentError("max_log_entries must be positive or None")
        url, url_prefix = split_prefix(url)
        check_db_path(url)
        self._default_ttl = check_ttl(default_ttl)
        self._clock = clock
        self._prefix = url_prefix if url_prefix is not None and prefix == DEFAULT_PREFIX else prefix
        self._max_log = max_log_entries
        self._read_only = read_only
        try:
            # A blocking pool makes callers beyond max_connections wait for a free
            # connection (up to socket_timeout) instead of failing at once.
            pool = aioredis.BlockingConnectionPool.from_url(
                url,
                socket_timeout=socket_timeout,
                socket_connect_timeout=connect_timeout,
                max_connections=max_connections,
                timeout=socket_timeout,
                retry=Retry(ExponentialBackoff(cap=0.2, base=0.02), retries=2),
            )
            self._client: Any = aioredis.Redis.from_pool(pool)
        except ValueError as exc:
            raise InvalidArgumentError(f"bad redis URL {url!r}: {exc}") from exc
        kwargs = self._client.connection_pool.connection_kwargs
        self.where = (
            f"{kwargs.get('host', kwargs.get('path', '?'))}:{kwargs.get('port', '')}"
            f"/{kwargs.get('db', 0)}"
        )
        self._max_batch = max_batch
        self._batcher: Batcher[_Op] = Batcher(self._run_batch, max_batch=max_batch)
        self._retention: dict[str, Retention] = {}
        self._entry_bytes: dict[str, tuple[int, int]] = {}  # ns -> (entries, bytes) appended
        self._trimmed: dict[str, float] = {}  # ns -> store-clock time of the last trim
        self._opened = False
        self._closed = False
        self._closing = False  # close() is draining: new commands are refused

    # -- lifecycle ---------------------------------------------------------------------------
    async def init(self) -> None:
        """Connect and check the server. Idempotent.

        Raises:
            StorageIOError: the server is unreachable or refuses commands.
        """
        self._ensure_open()
        if self._opened:
            return
        try:
            info = await self._client.info("server")
        except rex.RedisError as exc:
            raise translate(exc, self.where, "connect") from exc
        version = str(info.get("redis_version", "0"))
        major = version.split(".", 1)[0]
        if not major.isdigit() or int(major) < MIN_REDIS_MAJOR:
            raise StorageIOError(
                f"redis at {self.where} is version {version}; RedisStore needs Redis "
                f">= {MIN_REDIS_MAJOR} (stream ids '<ms>-*', '#!lua' scripts)",
                path=self.where,
            )
        self._opened = True
        _exit.track(self)

    def __repr__(self) -> str:
        return f"RedisStore({self.where!r}, prefix={self._prefix!r})"

    def close_at_exit(self) -> None:
        """Interpreter exit, the store never closed: every awaited write was answered by the
        server already; the sockets close with the process."""
        self._closed = True

    async def close(self) -> None:
        """Finish pending commands and close the connection pool. Idempotent."""
        if self._closed:
            return
        self._closing = True  # callers that keep submitting would keep the drain going forever
        try:
            await self._batcher.drain()
        finally:
            self._closed = True
            _exit.untrack(self)
            await self._client.aclose()

    async def flush(self) -> None:
        """Wait until every command submitted so far has been answered (and the log caps
        applied)."""
        self._ensure_open()
        await self._batcher.drain()
        for ns in list(self._retention):
            self._trimmed.pop(ns, None)
            await self._retain(ns, 0, 0)

    def _ensure_open(self) -> None:
        if self._closed:
            raise StoreClosedError(f"RedisStore {self.where} is closed", path=self.where)

    def _submit(self, op: _Op, *, write: bool) -> Any:
        if self._closing:
            raise StoreClosedError(f"RedisStore {self.where} is closing", path=self.where)
        self._ensure_open()
        if write and self._read_only:
            raise ReadOnlyStoreError(f"RedisStore {self.where} is read-only", path=self.where)
        return self._batcher.submit(op)

    def _kv_key(self, ns: str, key: str) -> str:
        return f"{self._prefix}kv:{ns}:{key}"

    def _log_key(self, ns: str) -> str:
        return f"{self._prefix}log:{ns}"

    # -- the pipeline ------------------------------------------------------------------------
    async def _run_batch(self, ops: Sequence[_Op]) -> list[Any]:
        groups = plan(ops)
        commands = [
            command(kind, [ops[i] for i in members], self._max_log) for kind, members in groups
        ]
        replies: list[Any]
        try:
            if len(commands) == 1:  # a lone command needs no pipeline
                try:
                    replies = [await self._client.execute_command(*commands[0])]
                except rex.ResponseError as exc:
                    replies = [exc]
            else:
                async with self._client.pipeline(transaction=False) as pipe:
                    for cmd in commands:
                        pipe.execute_command(*cmd)
                    replies = await pipe.execute(raise_on_error=False)
        except rex.RedisError as exc:
            raise translate(exc, self.where, "pipeline") from exc
        return outcomes(ops, groups, replies, self._clock(), self.where)

    # -- key-value ---------------------------------------------------------------------------
    async def set(self, ns: str, key: str, value: JSONValue, ttl: float | None = None) -> None:
        """Store ``value`` (``SET``, with ``PX`` when it has a TTL). See :meth:`Store.set`.

        Raises:
            InvalidValueError: not JSON. StorageIOError: unreachable, read-only replica, OOM.
        """
        await self._submit(("set", [self._set_row(ns, key, value, ttl)]), write=True)

    async def set_many(
        self, ns: str, items: Iterable[tuple[str, JSONValue]], ttl: float | None = None
    ) -> None:
        """Store many ``(key, value)`` pairs in as few round trips as ``max_batch`` allows.
        Every pair is validated before anything is sent.

        Raises:
            InvalidKeyError, InvalidValueError: a bad pair (nothing written).
            StorageIOError: Redis failed (earlier batches may have been written).
        """
        await self._submit_rows([self._set_row(ns, k, v, ttl) for k, v in items], "set")

    def _set_row(self, ns: str, key: str, value: JSONValue, ttl: float | None) -> _Op:
        check_key(check_namespace(ns), key)
        json = encode_value(ns, key, value)
        ttl = self._default_ttl if ttl is None else check_ttl(ttl)
        if ttl is None:
            return (self._kv_key(ns, key), encode_value_payload(json, None), None)
        payload = encode_value_payload(json, self._clock() + ttl)
        return (self._kv_key(ns, key), payload, max(1, math.ceil(ttl * 1000)))

    async def _submit_rows(self, rows: builtins.list[_Op], kind: str, *head: Any) -> None:
        self._ensure_open()
        step = self._max_batch
        await asyncio.gather(
            *(
                self._submit((kind, *head, rows[i : i + step]), write=True)
                for i in range(0, len(rows), step)
            )
        )

    async def get(self, ns: str, key: str) -> JSONValue:
        """Return the live value or ``None``."""
        check_key(check_namespace(ns), key)
        return await self._submit(("get", self._kv_key(ns, key)), write=False)

    async def delete(self, ns: str, key: str) -> bool:
        """Remove ``key`` (``GETDEL``); True if it was present and live."""
        check_key(check_namespace(ns), key)
        return bool(await self._submit(("del", self._kv_key(ns, key)), write=True))

    async def list(self, ns: str, prefix: str = "") -> builtins.list[str]:
        """Live keys starting with ``prefix``, sorted (``SCAN … MATCH``, never ``KEYS``)."""
        return [k for k, _ in await self._live(ns, prefix)]

    async def entries(self, ns: str, prefix: str = "") -> builtins.list[tuple[str, JSONValue]]:
        """Live ``(key, value)`` pairs starting with ``prefix``, sorted by key."""
        return await self._live(ns, prefix)

    async def _live(self, ns: str, prefix: str) -> builtins.list[tuple[str, JSONValue]]:
        self._ensure_open()
        check_namespace(ns)
        check_prefix(prefix)
        base = self._kv_key(ns, "")
        pattern = escape_glob(base + prefix) + "*"
        out: builtins.list[tuple[str, JSONValue]] = []
        try:
            names: builtins.list[bytes] = [
                name async for name in self._client.scan_iter(match=pattern, count=_SCAN_COUNT)
            ]
            now = self._clock()
            for start in range(0, len(names), _PAGE):
                chunk = names[start : start + _PAGE]
                for name, payload in zip(chunk, await self._client.mget(chunk), strict=True):
                    if payload is None:  # deleted or reaped between SCAN and MGET
                        continue
                    live, value = decode_value(payload, now, f"{self.where} {name!r}")
                    if live:
                        out.append((name.decode()[len(base) :], value))
        except rex.RedisError as exc:
            raise translate(exc, self.where, "SCAN") from exc
        out.sort(key=lambda kv: kv[0])
        return out

    # -- append log --------------------------------------------------------------------------
    async def append(self, ns: str, entry: Entry) -> Entry:
        """Append ``entry`` to the namespace stream (``XADD``); returns it with ``_ts``."""
        stored, ts, body = stamp(check_namespace(ns), entry, self._clock)
        await self._submit(("app", self._log_key(ns), [(ts, body)]), write=True)
        if self._retention:
            await self._retain(ns, 1, len(body))
        return stored

    async def append_many(self, ns: str, entries: Iterable[Entry]) -> builtins.list[Entry]:
        """Append many entries (validated first) in as few round trips as possible."""
        check_namespace(ns)
        stamped = [stamp(ns, entry, self._clock) for entry in entries]
        rows = [(ts, body) for _, ts, body in stamped]
        await self._submit_rows(rows, "app", self._log_key(ns))
        if self._retention:
            await self._retain(ns, len(rows), sum(len(body) for _, body in rows))
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
        """Entries newest first (``XREVRANGE``), ``since`` ≤ id time < ``until``.

        ``filter`` (field equality): with a string or null value Redis scans the stream and
        sends only entries holding its bytes; otherwise pages are checked here.
        """
        self._ensure_open()
        check_namespace(ns)
        limit, offset = check_limits(limit, offset)
        window = clamp_window(to_epoch_ms(since), to_epoch_ms(until))
        filter = check_filter(filter)
        if limit == 0 or window is None:
            return []
        lo, hi = window  # stream ids take no number beyond 64 bits
        if hi is not None and (hi <= 0 or (lo is not None and lo >= hi)):
            return []
        upper = "+" if hi is None else f"({hi}-0"
        lower = "-" if lo is None or lo <= 0 else f"{lo}-0"
        needles = [n for f, v in (filter or {}).items() if (n := needle(f, v)) is not None]
        key = self._log_key(ns)
        if filter and needles:  # matching entries are found server-side
            bounds, window = (upper, lower), (limit, offset)
            where = self.where
            return await scan_filtered(
                self._client, key, bounds, window, filter, needles, where, ns
            )
        out: builtins.list[Entry] = []
        skipped = 0
        page = min(_PAGE, offset + limit) if not filter else _PAGE
        try:
            while len(out) < limit:
                rows = await self._client.xrevrange(key, max=upper, min=lower, count=page)
                for _id, fields in rows:
                    entry = orjson.loads(fields[_BODY])
                    if filter and not matches(entry, filter):
                        continue
                    if skipped < offset:
                        skipped += 1
                        continue
                    out.append(entry)
                    if len(out) >= limit:
                        break
                if len(rows) < page:
                    break
                upper = "(" + rows[-1][0].decode()
                page = _PAGE
        except rex.RedisError as exc:
            raise translate(exc, self.where, "XREVRANGE") from exc
        except (orjson.JSONDecodeError, KeyError) as exc:
            raise CorruptDataError(
                f"stream {key!r} at {self.where} holds an entry RedisStore did not write: {exc!r}",
                path=self.where,
                namespace=ns,
            ) from exc
        return out
