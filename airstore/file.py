"""FileStore: JSON snapshots + JSONL logs in a data directory, with a journal and recovery.

See ``docs/storage.md`` for the layout, each durability mode's loss window and recovery. The
parts: ``_kvspace`` (keys), ``_logfile``/``_logread`` (log), ``_persist`` (writes), ``_lock``,
``_recovery``, ``_exit``.
"""

from __future__ import annotations

import asyncio
import builtins
import logging
import os
import time
from collections.abc import Iterable
from typing import Any, Literal

import orjson

from airstore import _exit
from airstore._entry import stamp
from airstore._filenames import log_path
from airstore._inspect import Inspection
from airstore._kvspace import MISSING, KVSpace, remove_stale_temp_files
from airstore._lifecycle import StoreBase
from airstore._lock import DirLock
from airstore._logfile import LogFile, LogOptions, query_log
from airstore._logread import Collector
from airstore._persist import Persister
from airstore._recovery import CorruptLineLog, Finding
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
    to_epoch_ms,
)
from airstore.errors import (
    AirstoreError,
    InvalidArgumentError,
    ReadOnlyStoreError,
    StorageIOError,
    StoreClosedError,
)
from airstore.types import Clock, Entry, JSONValue, TimeBound

__all__ = ["DEFAULT_FLUSH_INTERVAL", "DEFAULT_MAX_LOG_BYTES", "Durability", "FileStore"]

logger = logging.getLogger(__name__)

Durability = Literal["journal", "snapshot", "sync"]
DEFAULT_FLUSH_INTERVAL = 5.0
DEFAULT_MAX_LOG_BYTES = 64 * 1024 * 1024

_dumps = orjson.dumps


class FileStore(Inspection, StoreBase):
    """A store kept in a directory of JSON and JSONL files.

    Args:
        path: the data directory (created for a writer).
        default_ttl: TTL in seconds applied when ``set`` gets ``ttl=None``.
        durability: ``"journal"`` (default), ``"snapshot"`` or ``"sync"``; see docs/storage.md.
        flush_interval: seconds between snapshots of namespaces whose keys changed.
        read_only: open beside a writer without the lock; every call re-reads changed files.
        max_log_bytes: rotate a namespace's log into a segment past this size.
        max_log_segments: keep at most this many rotated segments per namespace.
        max_log_age: delete rotated segments older than this many seconds.
        clock: seconds since the epoch (TTL and ``_ts``); injectable for tests.
        handle_sigterm: flush on SIGTERM when no other SIGTERM handler is installed.

    Raises:
        InvalidArgumentError: an option is out of range.
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        default_ttl: float | None = None,
        durability: Durability = "journal",
        flush_interval: float = DEFAULT_FLUSH_INTERVAL,
        read_only: bool = False,
        max_log_bytes: int = DEFAULT_MAX_LOG_BYTES,
        max_log_segments: int | None = None,
        max_log_age: float | None = None,
        clock: Clock = time.time,
        handle_sigterm: bool = True,
    ) -> None:
        if durability not in ("journal", "snapshot", "sync"):
            raise InvalidArgumentError(
                f"durability must be 'journal', 'snapshot' or 'sync', got {durability!r}"
            )
        if not flush_interval > 0:
            raise InvalidArgumentError("flush_interval must be a positive number of seconds")
        self.path = os.fspath(path)
        self.durability: Durability = durability
        self.read_only = read_only
        self._default_ttl = check_ttl(default_ttl)
        self._flush_interval = float(flush_interval)
        self._log_options = LogOptions(
            max_bytes=max_log_bytes, max_segments=max_log_segments, max_age=max_log_age
        )
        self._clock = clock
        self._handle_sigterm = handle_sigterm
        self._journaled = durability != "snapshot"
        self._sync = durability == "sync"
        self._spaces: dict[str, KVSpace] = {}
        self._logs: dict[str, LogFile] = {}
        self._findings: builtins.list[Finding] = []
        self._corrupt_lines = CorruptLineLog(self._findings)
        self._lock = DirLock(self.path)
        self._persist: Persister | None = None  # created by init() on the running loop
        self._loading: dict[str, asyncio.Future[KVSpace]] = {}
        self._counted = False
        self._opened = False
        self._closed = False

    # -- lifecycle ---------------------------------------------------------------------------
    async def init(self) -> None:
        """Create the directory and take the writer lock (writer) or just look (reader).

        Raises:
            StoreLockedError: another process holds the writer lock.
            StorageIOError: the directory cannot be created or locked.
        """
        self._ensure_open()
        if self._opened:
            return
        if not self.read_only:
            try:
                os.makedirs(self.path, exist_ok=True)
            except OSError as exc:
                raise StorageIOError(f"cannot create {self.path}: {exc}", path=self.path) from exc
            self._lock.acquire()
            remove_stale_temp_files(self.path)
            self._persist = Persister(
                self.path,
                self._spaces,
                self._logs,
                sync=self._sync,
                flush_interval=self._flush_interval,
                clock=self._clock,
            )
            self._persist.start()
            self._counted = _exit.register(self, handle_sigterm=self._handle_sigterm)
        self._opened = True

    async def close(self) -> None:
        """Flush everything and release files and the lock. Idempotent.

        Raises:
            StorageIOError: the final flush failed; the store stays open and keeps the data
                (background flushing continues), so ``close()`` can be retried once the disk
                is fixed.
            InvalidValueError: a stored value was mutated (through ``get``) into something
                that is not JSON; the store stays open the same way.
        """
        if self._closed:
            return
        persist = self._persist
        if persist is not None:
            await persist.stop()
            try:
                await persist.flush()
            except AirstoreError:  # a disk error, or a value mutated into non-JSON
                persist.start()  # keep retrying in the background; close() may be retried
                raise
            persist.closed = True
            await persist.stop()
            for f in persist.files():
                f.close()
        self._closed = True
        self._lock.release()
        _exit.unregister(self, counted=self._counted)

    async def flush(self) -> None:
        """Write pending lines, snapshot dirty namespaces, and fdatasync.

        Raises:
            StorageIOError: the disk failed; the data stays in memory, marked dirty.
        """
        self._ensure_open()
        if self._persist is not None:
            await self._persist.flush()

    def flush_now(self) -> None:
        """Synchronous final flush for interpreter exit and SIGTERM (no event loop needed)."""
        if not self._closed and self._persist is not None:
            self._persist.flush_now()

    def _ensure_open(self) -> None:
        if self._closed:
            raise StoreClosedError(f"FileStore {self.path!r} is closed", path=self.path)

    def _writer(self) -> Persister:
        """The persister, or the reason this store cannot be written to."""
        persist = self._persist
        if persist is not None and not self._closed:
            return persist
        self._ensure_open()
        if self.read_only:
            raise ReadOnlyStoreError(f"FileStore {self.path!r} is read-only", path=self.path)
        raise StoreClosedError(f"FileStore {self.path!r} is not open; await init()")

    # -- namespaces --------------------------------------------------------------------------
    async def _space(self, ns: str) -> KVSpace:
        """The namespace's keys: loaded on first use with the files read off the loop; a
        reader re-reads what changed since its last look."""
        space = self._spaces.get(ns)
        if space is not None:
            if self.read_only:
                self._io(space.refresh, ns)
            return space
        check_namespace(ns)
        loading = self._loading.get(ns)
        if loading is not None:  # another caller is loading it: share that load
            return await asyncio.shield(loading)
        fut: asyncio.Future[KVSpace] = asyncio.get_running_loop().create_future()
        self._loading[ns] = fut
        try:
            space = KVSpace(
                self.path,
                ns,
                journaled=self._journaled,
                read_only=self.read_only,
                clock=self._clock,
                findings=self._findings,
            )
            try:
                await space.load_async()
            except OSError as exc:
                raise StorageIOError(
                    f"I/O error in namespace {ns!r}: {exc}", namespace=ns, path=self.path
                ) from exc
            self._ensure_open()
            self._spaces[ns] = space
            fut.set_result(space)
            return space
        except BaseException as exc:
            fut.set_exception(exc)
            fut.exception()  # retrieved: the waiters re-raise it
            raise
        finally:
            del self._loading[ns]

    def _log(self, ns: str) -> LogFile:
        log = LogFile(self.path, check_namespace(ns), self._log_options)
        self._io(lambda: log.open_reporting(self._findings), ns)
        self._logs[ns] = log
        return log

    def _io(self, fn: Any, ns: str) -> Any:
        try:
            return fn()
        except OSError as exc:
            raise StorageIOError(f"I/O error in namespace {ns!r}: {exc}", namespace=ns) from exc

    # -- key-value ---------------------------------------------------------------------------
    async def set(self, ns: str, key: str, value: JSONValue, ttl: float | None = None) -> None:
        """Store ``value``; see :meth:`airstore.Store.set`.

        Raises:
            InvalidNamespaceError, InvalidKeyError, InvalidValueError, InvalidArgumentError:
                bad input; nothing is changed.
            ReadOnlyStoreError: the store is read-only.
        """
        persist = self._persist
        if persist is None or self._closed:
            persist = self._writer()
        space = self._spaces.get(ns) or await self._space(ns)
        if type(key) is not str or not key.isascii() or not 0 < len(key) <= MAX_KEY_LENGTH:
            check_key(ns, key)  # the slow path: raises, or accepts a non-ASCII key
        try:
            encoded = _dumps(value, None, JSON_OPTS)
        except TypeError:
            encoded = encode_value(ns, key, value)  # raises the typed error
        if encoded.find(b"null") >= 0:  # (bytes.find: `in` costs twice as much here)
            encode_value(ns, key, value)  # NaN/Infinity hide behind null: check properly
        if ttl is None and self._default_ttl is None:
            space.set_plain(key, value, encoded)
        else:
            seconds = self._default_ttl if ttl is None else check_ttl(ttl)
            now = self._clock()
            space.put(key, value, encoded, None if seconds is None else now + seconds, now)
        journal = space.journal
        if journal is not None:
            persist.schedule(journal)
            if self._sync:
                await persist.written(journal)

    async def incr(self, ns: str, key: str, by: int = 1, ttl: float | None = None) -> int:
        """Add ``by`` to the counter at ``key``; see :meth:`airstore.Store.incr`.

        Raises:
            InvalidValueError: the key holds something other than an integer counter.
            InvalidArgumentError: a bad ``by`` or ``ttl``, or the result would overflow.
            ReadOnlyStoreError: the store is read-only.
        """
        persist = self._writer()
        space = await self._space(ns)
        check_key(ns, key)
        by = check_by(ns, key, by)
        ttl = self._default_ttl if ttl is None else check_ttl(ttl)
        now = self._clock()
        current = space.live(key, now)
        if current is MISSING:
            value, exp = check_counter(ns, key, 0, by), None if ttl is None else now + ttl
        else:
            value, exp = check_counter(ns, key, current, by), space.expires.get(key)
        space.put(key, value, b"%d" % value, exp, now)
        if space.journal is not None:
            await persist.written(space.journal)
        return value

    async def get(self, ns: str, key: str) -> JSONValue:
        """Return the value, or ``None`` when missing or expired."""
        if self._closed:
            self._ensure_open()
        space = self._spaces.get(ns)
        if space is None or self.read_only:
            space = await self._space(ns)
        try:
            value = space.items.get(key, MISSING)
        except TypeError:  # unhashable key
            value = MISSING
        if value is MISSING:
            check_key(ns, key)
            return None
        if space.expires:
            exp = space.expires.get(key)
            if exp is not None and exp <= self._clock():
                return None  # the writer's sweep removes it (readers never change anything)
        return value

    async def delete(self, ns: str, key: str) -> bool:
        """Remove ``key``; True if it existed and had not expired."""
        persist = self._writer()
        space = await self._space(ns)
        check_key(ns, key)
        live = space.delete(key, self._clock())
        if live is None:
            return False
        if space.journal is not None:
            await persist.written(space.journal)
        return live

    async def list(self, ns: str, prefix: str = "") -> builtins.list[str]:
        """Live keys starting with ``prefix``, sorted."""
        return [k for k, _ in await self._live(ns, prefix)]

    async def entries(self, ns: str, prefix: str = "") -> builtins.list[tuple[str, JSONValue]]:
        """Live ``(key, value)`` pairs starting with ``prefix``, sorted by key."""
        return await self._live(ns, prefix)

    async def _live(self, ns: str, prefix: str) -> builtins.list[tuple[str, JSONValue]]:
        self._ensure_open()
        space = await self._space(ns)
        check_prefix(prefix)
        now = self._clock()
        if not self.read_only:
            space.sweep(now)
        expires = space.expires
        return sorted(
            (k, v)
            for k, v in space.items.items()
            if k.startswith(prefix) and ((exp := expires.get(k)) is None or exp > now)
        )

    # -- append log --------------------------------------------------------------------------
    async def append(self, ns: str, entry: Entry) -> Entry:
        """Append ``entry`` to the namespace's log; returns the stored dict with ``_ts``.

        The line reaches the file at the end of the current event-loop turn together with
        every other line of that turn (one ``write``); queries see it at once.
        """
        persist = self._persist
        if persist is None or self._closed:
            persist = self._writer()
        log = self._logs.get(ns) or self._log(ns)
        stored, _, line = stamp(ns, entry, self._clock)
        buf = log.pending
        buf += line
        buf += b"\n"
        persist.schedule(log)
        if self._sync:
            await persist.written(log)
        return stored

    async def append_many(self, ns: str, entries: Iterable[Entry]) -> builtins.list[Entry]:
        """Append every entry, all validated and encoded first (a bad one appends nothing)."""
        persist = self._writer()
        log = self._logs.get(ns) or self._log(ns)
        clock = self._clock
        stamped = [stamp(ns, entry, clock) for entry in entries]
        buf = log.pending
        for _, _, line in stamped:
            buf += line
            buf += b"\n"
        persist.schedule(log)
        if self._sync:
            await persist.written(log)
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
        """Entries newest first within ``[since, until)`` matching ``filter``.

        Reads the log backwards in blocks and stops as soon as it has ``limit`` entries (or
        reaches entries older than ``since``). Corrupt lines are skipped and reported.
        """
        self._ensure_open()
        limit, offset = check_limits(limit, offset)
        collector = Collector(
            limit=limit,
            offset=offset,
            lo=to_epoch_ms(since),
            hi=to_epoch_ms(until),
            flt=check_filter(filter),
        )
        writer = None if self.read_only else self._logs.get(check_namespace(ns))
        if writer is None and not self.read_only and self._has_log(ns):
            writer = self._log(ns)  # opening it repairs a torn tail first
        self._io(
            lambda: query_log(self.path, ns, collector, writer, self._corrupt_lines.report), ns
        )
        return collector.out

    def _has_log(self, ns: str) -> bool:
        return os.path.exists(log_path(self.path, check_namespace(ns)))
