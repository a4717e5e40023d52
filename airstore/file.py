"""FileStore: JSON snapshots, a shared KV journal and per-writer JSONL logs in a data directory.

Any number of writer processes share one directory (see ``docs/storage.md``: who writes what,
what a reader sees and when, each durability mode's loss window, recovery). The parts:
``_kvspace``/``_journal`` (keys), ``_logfile``/``_logread`` (logs), ``_persist`` (writes),
``_lock`` (writer slots), ``_format`` (version markers), ``_recovery``, ``_exit``.
"""

from __future__ import annotations

import asyncio
import builtins
import logging
import os
import time
from typing import Any, Literal

import orjson

from airstore import _exit
from airstore._atomic import remove_stale_temp_files
from airstore._filekv import FileKeys
from airstore._filelog import FileLogs
from airstore._filenames import use_legacy_names
from airstore._format import DATADIR_FILE, FORMAT, read_datadir_marker
from airstore._inspect import Inspection
from airstore._kvspace import KVSpace
from airstore._lifecycle import StoreBase
from airstore._lock import DirLock
from airstore._logfile import LogFile, LogOptions
from airstore._migrate import enter_as_writer
from airstore._persist import Persister
from airstore._recovery import CorruptLineLog, Finding, next_line_number
from airstore._validate import (
    check_ttl,
)
from airstore.errors import (
    AirstoreError,
    InvalidArgumentError,
    ReadOnlyStoreError,
    StorageIOError,
    StoreClosedError,
)
from airstore.location import default_data_dir
from airstore.types import Clock

__all__ = ["DEFAULT_FLUSH_INTERVAL", "DEFAULT_MAX_LOG_BYTES", "Durability", "FileStore"]

logger = logging.getLogger(__name__)

Durability = Literal["journal", "snapshot", "sync"]
DEFAULT_FLUSH_INTERVAL = 5.0
DEFAULT_MAX_LOG_BYTES = 64 * 1024 * 1024

_dumps = orjson.dumps


class FileStore(FileKeys, FileLogs, Inspection, StoreBase):
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
        if durability not in ("journal", "snapshot", "sync"):
            raise InvalidArgumentError(
                f"durability must be 'journal', 'snapshot' or 'sync', got {durability!r}"
            )
        if not flush_interval > 0:
            raise InvalidArgumentError("flush_interval must be a positive number of seconds")
        self.path = os.fspath(path) if path is not None else default_data_dir()
        if "\0" in self.path:
            raise InvalidArgumentError(f"a FileStore path cannot hold a NUL byte: {self.path!r}")
        self.durability: Durability = durability
        self.read_only = read_only
        self._default_ttl = check_ttl(default_ttl)
        self._flush_interval = float(flush_interval)
        self._log_options = LogOptions(
            max_bytes=max_log_bytes,
            max_segments=max_log_segments,
            max_age=max_log_age,
            compress=compress_segments,
        )
        self._clock = clock
        self._handle_sigterm = handle_sigterm
        self._sync = durability == "sync"
        self._spaces: dict[str, KVSpace] = {}
        self._logs: dict[str, LogFile] = {}
        self._findings: builtins.list[Finding] = []
        self._corrupt_lines = CorruptLineLog(self._findings)
        self._lock = DirLock(self.path)
        self._persist: Persister | None = None  # created by init() on the running loop
        self._write_ok: Persister | None = None  # the persister while writes are accepted
        self._loading: dict[str, asyncio.Future[KVSpace]] = {}
        self._counted = False
        self._opened = False
        self._closed = False

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
        self._ensure_open()
        if self._opened:
            return
        marker = os.path.join(self.path, DATADIR_FILE)
        try:
            found, moving = read_datadir_marker(marker)
            if self.read_only:  # an earlier directory is read as it is (a writer moves it)
                use_legacy_names(self.path, found is None or found < FORMAT or moving)
            else:
                self._open_writer()
        except OSError as exc:
            self._lock.release()
            raise StorageIOError(f"cannot open {self.path}: {exc}", path=self.path) from exc
        if not self.read_only:
            self._persist = Persister(
                self.path,
                self._spaces,
                self._logs,
                sync=self._sync,
                commit_each_turn=self.durability != "snapshot",
                flush_interval=self._flush_interval,
                clock=self._clock,
                on_writable=self._writable,
            )
            self._write_ok = self._persist
            self._persist.start()
            self._counted = _exit.register(self, handle_sigterm=self._handle_sigterm)
        self._opened = True

    def _open_writer(self) -> None:
        os.makedirs(self.path, exist_ok=True)
        entered = enter_as_writer(self.path)  # moves an earlier directory to this format
        try:
            self._lock.acquire()
        finally:
            os.close(entered)
        use_legacy_names(self.path, False)
        for ns, path, cut in self._lock.repair_dead_slots():  # a killed writer's last line
            detail = f"cut {cut} bytes of an unfinished line (a writer that died mid-write)"
            at = next_line_number(path)
            self._findings.append(
                Finding(kind="torn_tail", namespace=ns, path=path, line=at, detail=detail)
            )
        remove_stale_temp_files(self.path)

    def _writable(self, ok: bool) -> None:
        closing = self._persist is None or self._persist.closed
        self._write_ok = self._persist if ok and not self._closed and not closing else None

    @property
    def lost_writes(self) -> int:
        """Acknowledged writes dropped because the disk refused them (``journal`` and
        ``snapshot`` modes; see docs/storage.md, "Disk full")."""
        return self._persist.lost_writes if self._persist is not None else 0

    async def close(self) -> None:
        """Flush everything and release files and the writer slot. Idempotent.

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
            self._write_ok = None  # from here on a write is refused: "the store is closing"
            await persist.stop()
            try:  # what was acknowledged while the awaits above ran must land too
                persist.flush_now()
            except AirstoreError:
                persist.closed = False
                self._writable(persist.refusing is None)  # a refusing disk stays refused
                persist.start()
                raise
            try:
                persist.record_loss()
            except OSError as exc:
                logger.error("airstore: could not record lost writes in %s: %s", self.path, exc)
        self._write_ok = None
        for log in self._logs.values():
            log.close()
        for space in self._spaces.values():
            space.close()
        self._closed = True
        self._lock.release()
        _exit.unregister(self, counted=self._counted)

    async def flush(self) -> None:
        """Write pending lines, commit pending KV records, compact big journals, fdatasync.

        Raises:
            StorageIOError: the disk failed; the data stays in memory, pending.
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
        persist = self._write_ok
        if persist is not None:
            return persist
        self._ensure_open()
        if self.read_only:
            raise ReadOnlyStoreError(f"FileStore {self.path!r} is read-only", path=self.path)
        if self._persist is not None and self._persist.closed:
            raise StoreClosedError(f"FileStore {self.path!r} is closing", path=self.path)
        if self._persist is not None and self._persist.refusing is not None:
            raise StorageIOError(
                f"FileStore {self.path!r} refuses writes: a write failed "
                f"({self._persist.refusing}) and the disk has not taken one since; writes "
                "resume by themselves once it does",
                path=self.path,
            )
        raise StoreClosedError(f"FileStore {self.path!r} is not open; await init()")

    def _io(self, fn: Any, ns: str) -> Any:
        try:
            return fn()
        except OSError as exc:
            raise StorageIOError(f"I/O error in namespace {ns!r}: {exc}", namespace=ns) from exc
