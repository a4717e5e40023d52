"""The state a FileStore's parts share: one data directory as one FileStore opened it.

:class:`airstore.FileStore` is composed of a key-value part (``_filekv.FileKeys``), a log part
(``_filelog.FileLogs``) and an inspection part (``_inspect.Inspection``); each holds a
:class:`DirState` and nothing of the others. Here are the directory, the options, the writer
slot (``lock``), the persister and the write gate, what recovery found, and whether the store is
closed; the KV namespaces and the open logs belong to their parts.
"""

from __future__ import annotations

import builtins
import os
import time
from collections.abc import Callable
from typing import Literal, TypeVar

from airstore._atomic import remove_stale_temp_files
from airstore._filenames import use_legacy_names
from airstore._format import DATADIR_FILE, FORMAT, read_datadir_marker
from airstore._lock import DirLock
from airstore._logfile import LogOptions
from airstore._migrate import enter_as_writer
from airstore._persist import Persister
from airstore._recovery import CorruptLineLog, next_line_number
from airstore._reports import Finding
from airstore._validate import check_ttl
from airstore.errors import (
    InvalidArgumentError,
    ReadOnlyStoreError,
    StorageIOError,
    StoreClosedError,
)
from airstore.location import default_data_dir
from airstore.types import Clock

__all__ = ["DirState", "Durability"]

Durability = Literal["journal", "snapshot", "sync"]

T = TypeVar("T")


class DirState:
    """One FileStore's data directory, options and writer state, shared by its parts.

    Args:
        path: the data directory; ``None``: the default one.
        default_ttl: TTL in seconds applied when ``set`` gets ``ttl=None``.
        durability: ``"journal"``, ``"snapshot"`` or ``"sync"``.
        flush_interval: seconds between periodic flushes.
        read_only: take no lock and change no file.
        log_options: rotation and retention of this writer's logs.
        clock: seconds since the epoch.

    Raises:
        InvalidArgumentError: an option is out of range.
    """

    __slots__ = (
        "clock",
        "closed",
        "corrupt_lines",
        "default_ttl",
        "durability",
        "findings",
        "flush_interval",
        "lock",
        "log_options",
        "path",
        "persist",
        "read_only",
        "sync",
        "write_ok",
    )

    def __init__(
        self,
        path: str | os.PathLike[str] | None,
        *,
        default_ttl: float | None,
        durability: Durability,
        flush_interval: float,
        read_only: bool,
        log_options: LogOptions,
        clock: Clock = time.time,
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
        self.sync = durability == "sync"
        self.read_only = read_only
        self.default_ttl = check_ttl(default_ttl)
        self.flush_interval = float(flush_interval)
        self.log_options = log_options
        self.clock = clock
        self.findings: builtins.list[Finding] = []
        self.corrupt_lines = CorruptLineLog(self.findings)
        self.lock = DirLock(self.path)
        self.persist: Persister | None = None  # created by FileStore.init() on the running loop
        self.write_ok: Persister | None = None  # the persister while writes are accepted
        self.closed = False

    # -- opening -----------------------------------------------------------------------------
    def open(self) -> None:
        """A writer: create the directory, move an earlier format to this one, take a writer
        slot and repair what dead writers left. A reader: only see which names to read.

        Raises:
            StoreLockedError: a writer of an older air release holds the directory.
            UnsupportedFormatError: the directory was written by a newer air release.
            StorageIOError: the directory cannot be created or locked.
        """
        try:
            found, moving = read_datadir_marker(os.path.join(self.path, DATADIR_FILE))
            if self.read_only:  # an earlier directory is read as it is (a writer moves it)
                use_legacy_names(self.path, found is None or found < FORMAT or moving)
            else:
                self._open_writer()
        except OSError as exc:
            self.lock.release()
            raise StorageIOError(f"cannot open {self.path}: {exc}", path=self.path) from exc

    def _open_writer(self) -> None:
        os.makedirs(self.path, exist_ok=True)
        entered = enter_as_writer(self.path)  # moves an earlier directory to this format
        try:
            self.lock.acquire()
        finally:
            os.close(entered)
        use_legacy_names(self.path, False)
        for ns, path, cut in self.lock.repair_dead_slots():  # a killed writer's last line
            detail = f"cut {cut} bytes of an unfinished line (a writer that died mid-write)"
            at = next_line_number(path)
            self.findings.append(
                Finding(kind="torn_tail", namespace=ns, path=path, line=at, detail=detail)
            )
        remove_stale_temp_files(self.path)

    # -- the write gate ----------------------------------------------------------------------
    def writable(self, ok: bool) -> None:
        """The persister's word on the disk: writes are accepted again (``ok``) or refused."""
        closing = self.persist is None or self.persist.closed
        self.write_ok = self.persist if ok and not self.closed and not closing else None

    def writer(self) -> Persister:
        """The persister, or the reason this store cannot be written to.

        Raises:
            StoreClosedError, ReadOnlyStoreError, StorageIOError: the reason.
        """
        persist = self.write_ok
        if persist is not None:
            return persist
        self.ensure_open()
        if self.read_only:
            raise ReadOnlyStoreError(f"FileStore {self.path!r} is read-only", path=self.path)
        if self.persist is not None and self.persist.closed:
            raise StoreClosedError(f"FileStore {self.path!r} is closing", path=self.path)
        if self.persist is not None and self.persist.disk.refusing is not None:
            raise StorageIOError(
                f"FileStore {self.path!r} refuses writes: a write failed "
                f"({self.persist.disk.refusing}) and the disk has not taken one since; writes "
                "resume by themselves once it does",
                path=self.path,
            )
        raise StoreClosedError(f"FileStore {self.path!r} is not open; await init()")

    def ensure_open(self) -> None:
        """Raises:
        StoreClosedError: the store is closed."""
        if self.closed:
            raise StoreClosedError(f"FileStore {self.path!r} is closed", path=self.path)

    async def flush(self) -> None:
        """Write pending lines, commit pending KV records, compact big journals, fdatasync.

        Raises:
            StoreClosedError: the store is closed.
            StorageIOError: the disk failed; the data stays in memory, pending.
        """
        self.ensure_open()
        if self.persist is not None:
            await self.persist.flush()

    def io(self, fn: Callable[[], T], ns: str) -> T:
        """``fn()`` with an ``OSError`` translated.

        Raises:
            StorageIOError: ``fn`` raised an ``OSError``.
        """
        try:
            return fn()
        except OSError as exc:
            raise StorageIOError(f"I/O error in namespace {ns!r}: {exc}", namespace=ns) from exc
