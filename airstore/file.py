"""FileStore: JSON snapshots, a shared KV journal and per-writer JSONL logs in a data directory.

Any number of writer processes share one directory (see ``docs/storage.md``: who writes what,
what a reader sees and when, each durability mode's loss window, recovery). A FileStore is
composed of parts over one directory state (``_dirstate.DirState``: the directory, options,
writer slot, persister, findings): the key-value part (``_filekv``, namespaces in ``_kvspace``
and ``_journal``), the log part (``_filelog``, files in ``_logfile``/``_logread``) and the
inspection part (``_inspect``). Also: ``_persist`` (writes), ``_lock`` (writer slots),
``_format`` (version markers), ``_recovery``, ``_exit``.
"""

from __future__ import annotations

import builtins
import logging
import os
import time
from collections.abc import Coroutine, Iterable
from typing import Any

from airstore import _exit
from airstore._dirstate import DirState, Durability
from airstore._filekv import FileKeys
from airstore._filelog import FileLogs
from airstore._inspect import Inspection
from airstore._kvspace import KVSpace
from airstore._lifecycle import StoreBase
from airstore._logfile import LogOptions
from airstore._persist import Persister
from airstore._reports import CheckReport, Finding, NamespaceStats
from airstore.errors import AirstoreError
from airstore.types import Clock, Entry, JSONValue, TimeBound

__all__ = ["DEFAULT_FLUSH_INTERVAL", "DEFAULT_MAX_LOG_BYTES", "Durability", "FileStore"]

logger = logging.getLogger(__name__)

DEFAULT_FLUSH_INTERVAL = 5.0
DEFAULT_MAX_LOG_BYTES = 64 * 1024 * 1024


class FileStore(StoreBase):
    """A store kept in a directory of JSON and JSONL files, shared by any number of processes.

    Args:
        path: the data directory (created for a writer); by default the one every command
            uses (:func:`~airstore.resolve_store_location`: ``AIR_DATA_DIR``, else
            ``.air/data`` under a usable working directory, else the per-user one).
        default_ttl: TTL in seconds applied when ``set`` gets ``ttl=None``.
        durability: ``"journal"`` (default), ``"snapshot"`` or ``"sync"``; see docs/storage.md.
        flush_interval: seconds between periodic flushes (and, in ``snapshot`` mode, KV commits).
        read_only: open beside the writers, taking no lock and changing no file.
        max_log_bytes: rotate this writer's log of a namespace into a segment past this size.
        max_log_segments: keep at most this many rotated segments per namespace and writer.
        max_log_age: delete rotated segments older than this many seconds.
        compress_segments: gzip rotated log segments (they stay queryable, newest first).
        clock: seconds since the epoch (TTL and ``_ts``); injectable for tests.
        handle_sigterm: flush on SIGTERM when no other SIGTERM handler is installed.

    Raises:
        InvalidArgumentError: an option is out of range.
    """

    def __init__(
        self,
        path: str | os.PathLike[str] | None = None,
        *,
        default_ttl: float | None = None,
        durability: Durability = "journal",
        flush_interval: float = DEFAULT_FLUSH_INTERVAL,
        read_only: bool = False,
        max_log_bytes: int = DEFAULT_MAX_LOG_BYTES,
        max_log_segments: int | None = None,
        max_log_age: float | None = None,
        compress_segments: bool = True,
        clock: Clock = time.time,
        handle_sigterm: bool = True,
    ) -> None:
        log_options = LogOptions(
            max_bytes=max_log_bytes,
            max_segments=max_log_segments,
            max_age=max_log_age,
            compress=compress_segments,
        )
        # One directory state, and the parts over it: they share it and nothing else.
        self._dir = DirState(
            path,
            default_ttl=default_ttl,
            durability=durability,
            flush_interval=flush_interval,
            read_only=read_only,
            log_options=log_options,
            clock=clock,
        )
        self._kv = FileKeys(self._dir)
        self._log = FileLogs(self._dir)
        self._inspection = Inspection(self._dir, self._kv)
        self._handle_sigterm = handle_sigterm
        self._counted = False
        self._opened = False
        # The hot operations are their parts' own bound methods on the instance, so a call
        # costs no frame of FileStore's (~30 ns of a ~1.1 us set); the methods of the class
        # below are the same operations for help(), the Store protocol and the type checker.
        # Only where the class's method is FileStore's own: a subclass's override (or a method
        # patched on the class before the store was made) is what runs.
        cls = type(self)
        if cls.set is FileStore.set:
            self.set = self._kv.set  # type: ignore[method-assign]  # the same signature
        if cls.get is FileStore.get:
            self.get = self._kv.get  # type: ignore[method-assign]  # the same signature
        if cls.append is FileStore.append:
            self.append = self._log.append  # type: ignore[method-assign]  # the same signature

    @property
    def path(self) -> str:
        """The data directory."""
        return self._dir.path

    @property
    def durability(self) -> Durability:
        """``"journal"``, ``"snapshot"`` or ``"sync"``; see docs/storage.md."""
        return self._dir.durability

    @property
    def read_only(self) -> bool:
        """Whether this store only reads (no lock taken, no file changed)."""
        return self._dir.read_only

    @property
    def _spaces(self) -> dict[str, KVSpace]:
        """The KV namespaces loaded (the key-value part's; tests look at a namespace's files)."""
        return self._kv.spaces

    def __repr__(self) -> str:
        mode = "read-only" if self.read_only else self.durability
        return f"FileStore({self.path!r}, {mode})"

    # -- lifecycle ---------------------------------------------------------------------------
    async def init(self) -> None:
        """Create the directory and take a writer slot (writer) or just look (reader).

        Raises:
            StoreLockedError: a writer of an older air release holds the directory.
            UnsupportedFormatError: the directory was written by a newer air release.
            StorageIOError: the directory cannot be created or locked.
        """
        state = self._dir
        state.ensure_open()
        if self._opened:
            return
        state.open()
        if not state.read_only:
            persist = Persister(
                state.path,
                self._kv.spaces,
                self._log.logs,
                sync=state.sync,
                commit_each_turn=state.durability != "snapshot",
                flush_interval=state.flush_interval,
                clock=state.clock,
                on_writable=state.writable,
            )
            state.persist = state.write_ok = persist
            persist.start()
            self._counted = _exit.register(self, handle_sigterm=self._handle_sigterm)
        self._opened = True

    @property
    def lost_writes(self) -> int:
        """Acknowledged writes dropped because the disk refused them (``journal`` and
        ``snapshot`` modes; see docs/storage.md, "Disk full")."""
        persist = self._dir.persist
        return persist.disk.lost_writes if persist is not None else 0

    async def close(self) -> None:
        """Flush everything and release files and the writer slot. Idempotent.

        Raises:
            StorageIOError: the final flush failed; the store stays open and keeps the data
                (background flushing continues), so ``close()`` can be retried once the disk
                is fixed.
            InvalidValueError: a stored value was mutated (through ``get``) into something
                that is not JSON; the store stays open the same way.
        """
        state = self._dir
        if state.closed:
            return
        persist = state.persist
        if persist is not None:
            await persist.stop()
            try:
                await persist.flush()
            except AirstoreError:  # a disk error, or a value mutated into non-JSON
                persist.start()  # keep retrying in the background; close() may be retried
                raise
            persist.closed = True
            state.write_ok = None  # from here on a write is refused: "the store is closing"
            await persist.stop()
            try:  # what was acknowledged while the awaits above ran must land too
                persist.flush_now()
            except AirstoreError:
                persist.closed = False
                state.writable(persist.disk.refusing is None)  # a refusing disk stays refused
                persist.start()
                raise
            try:
                persist.disk.record_loss()
            except OSError as exc:
                logger.error("airstore: could not record lost writes in %s: %s", self.path, exc)
        state.write_ok = None
        self._log.close()
        self._kv.close()
        state.closed = True
        state.lock.release()
        _exit.unregister(self, counted=self._counted)

    async def flush(self) -> None:
        """Write pending lines, commit pending KV records, compact big journals, fdatasync.

        Raises:
            StorageIOError: the disk failed; the data stays in memory, pending.
        """
        await self._dir.flush()

    def flush_now(self) -> None:
        """Synchronous final flush for interpreter exit and SIGTERM (no event loop needed)."""
        persist = self._dir.persist
        if not self._dir.closed and persist is not None:
            persist.flush_now()

    # -- the parts' operations -----------------------------------------------------------------
    # Each returns its part's coroutine as it is (``set``, ``get`` and ``append`` are even
    # bound to the parts' methods in ``__init__``); the parts document their errors.
    def set(
        self, ns: str, key: str, value: JSONValue, ttl: float | None = None
    ) -> Coroutine[Any, Any, None]:
        """Store ``value`` (see :meth:`airstore.Store.set` and ``FileKeys.set``)."""
        return self._kv.set(ns, key, value, ttl)

    def get(self, ns: str, key: str) -> Coroutine[Any, Any, JSONValue]:
        """The value, or ``None`` when missing or expired."""
        return self._kv.get(ns, key)

    def incr(
        self, ns: str, key: str, by: int = 1, ttl: float | None = None
    ) -> Coroutine[Any, Any, int]:
        """Add ``by`` to the counter at ``key`` (see ``FileKeys.incr``)."""
        return self._kv.incr(ns, key, by, ttl)

    def delete(self, ns: str, key: str) -> Coroutine[Any, Any, bool]:
        """Remove ``key``; True if it existed and had not expired."""
        return self._kv.delete(ns, key)

    def list(self, ns: str, prefix: str = "") -> Coroutine[Any, Any, builtins.list[str]]:
        """Live keys starting with ``prefix``, sorted."""
        return self._kv.list(ns, prefix)

    def entries(
        self, ns: str, prefix: str = ""
    ) -> Coroutine[Any, Any, builtins.list[tuple[str, JSONValue]]]:
        """Live ``(key, value)`` pairs starting with ``prefix``, sorted by key."""
        return self._kv.entries(ns, prefix)

    def append(self, ns: str, entry: Entry) -> Coroutine[Any, Any, Entry]:
        """Append ``entry`` to this writer's log of the namespace; returns it with ``_ts``
        (see ``FileLogs.append``)."""
        return self._log.append(ns, entry)

    def append_many(
        self, ns: str, entries: Iterable[Entry]
    ) -> Coroutine[Any, Any, builtins.list[Entry]]:
        """Append every entry, all validated and encoded first (a bad one appends nothing)."""
        return self._log.append_many(ns, entries)

    def query(
        self,
        ns: str,
        limit: int = 100,
        offset: int = 0,
        since: TimeBound = None,
        until: TimeBound = None,
        filter: dict[str, JSONValue] | None = None,
    ) -> Coroutine[Any, Any, builtins.list[Entry]]:
        """Entries newest first within ``[since, until)`` matching ``filter``, from every
        writer's files (see ``FileLogs.query``)."""
        return self._log.query(ns, limit, offset, since, until, filter)

    def set_log_retention(
        self, ns: str, *, max_age: float | None = None, max_bytes: int | None = None
    ) -> Coroutine[Any, Any, None]:
        """Cap the append log of ``ns`` (see ``FileLogs.set_log_retention``)."""
        return self._log.set_log_retention(ns, max_age=max_age, max_bytes=max_bytes)

    @property
    def recovery(self) -> builtins.list[Finding]:
        """What recovery found and repaired in the namespaces this store has opened."""
        return self._inspection.recovery

    def check(self) -> Coroutine[Any, Any, CheckReport]:
        """Read every file of the data directory (changing nothing) and report problems
        (see ``Inspection.check``)."""
        return self._inspection.check()

    def stats(self) -> Coroutine[Any, Any, builtins.list[NamespaceStats]]:
        """Per namespace: live keys, log entries, files and bytes on disk."""
        return self._inspection.stats()
