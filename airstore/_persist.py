"""Getting a FileStore's bytes to disk: per-turn writes, group commit, snapshots, fdatasync.

All ``os.write`` calls happen on the event loop (one per file per loop turn, or inline once a
buffer passes 1 MB so a loop that never yields still writes); ``fdatasync`` and snapshot files
go to worker threads. A failed write keeps its bytes pending and is retried; a failed snapshot
keeps its namespace dirty.
"""

from __future__ import annotations

import asyncio
import builtins
import contextlib
import logging
import time

from airstore._appendfile import AppendFile
from airstore._kvspace import KVSpace, write_atomic
from airstore._logfile import LogFile
from airstore.errors import AirstoreError, StorageIOError
from airstore.types import Clock

__all__ = ["Persister"]

logger = logging.getLogger(__name__)

SYNC_INTERVAL = 1.0  # fdatasync cadence for journal and log files
RETRY_DELAY = 0.5  # after a failed write
INLINE_WRITE_BYTES = 1 << 20  # a loop that never yields still writes every ~1 MB


def _sync_all(files: builtins.list[AppendFile]) -> None:
    for f in files:
        f.sync()


class Persister:
    """Writes, syncs and snapshots the files of one FileStore.

    Args:
        path: the data directory (for messages).
        spaces: the store's KV namespaces (shared, not copied).
        logs: the store's open logs (shared, not copied).
        sync: ``durability="sync"``: writers wait for fdatasync.
        flush_interval: seconds between snapshots of dirty namespaces.
        clock: seconds since the epoch (TTL sweeps).
    """

    def __init__(
        self,
        path: str,
        spaces: dict[str, KVSpace],
        logs: dict[str, LogFile],
        *,
        sync: bool,
        flush_interval: float,
        clock: Clock,
    ) -> None:
        self.path = path
        self.spaces = spaces
        self.logs = logs
        self._sync = sync
        self._flush_interval = flush_interval
        self._clock = clock
        self._loop = asyncio.get_running_loop()
        self._drain_handle: asyncio.Handle | None = None
        self._commit_fut: asyncio.Future[None] | None = None
        self._tasks: set[asyncio.Task[None]] = set()
        self._flush_lock = asyncio.Lock()
        self._last_error: str | None = None
        self._maintainer: asyncio.Task[None] | None = None
        self.closed = False

    def start(self) -> None:
        """Start the background task (fdatasync, periodic snapshots, retention, TTL sweep)."""
        if self._maintainer is None:
            self._maintainer = asyncio.create_task(self.maintain())

    def files(self) -> builtins.list[AppendFile]:
        """Every open append file: logs and journals."""
        files: builtins.list[AppendFile] = list(self.logs.values())
        files += [s.journal for s in self.spaces.values() if s.journal is not None]
        return files

    def schedule(self, f: AppendFile) -> None:
        """Have ``f``'s pending bytes written at the end of this loop turn (or now, past 1 MB).

        Synchronous: an acknowledged write in ``journal`` mode costs no await that suspends.
        """
        if self._drain_handle is None:
            self._drain_handle = self._loop.call_soon(self.drain)
        if len(f.pending) >= INLINE_WRITE_BYTES:
            self.drain()

    async def written(self, f: AppendFile | None) -> None:
        """Schedule the write of ``f``'s pending bytes; in sync mode wait until durable."""
        if f is None:
            return
        self.schedule(f)
        if self._sync:
            await self._commit()

    def drain(self) -> OSError | None:
        """Write every pending buffer (one ``write`` each); keep what fails and retry later."""
        if self._drain_handle is not None:
            self._drain_handle.cancel()
            self._drain_handle = None
        for f in self.files():
            try:
                f.write_pending()
                if isinstance(f, LogFile):
                    f.rotate_if_needed()
            except OSError as exc:
                self._report_io_error("write", f.path, exc)
                if not self.closed and not self._loop.is_closed():
                    self._drain_handle = self._loop.call_later(RETRY_DELAY, self.drain)
                return exc
        if self._last_error is not None:
            logger.warning("airstore: writes to %s succeed again", self.path)
            self._last_error = None
        return None

    def _report_io_error(self, what: str, path: str, exc: OSError) -> None:
        text = f"{what} {path}: {exc}"
        if text != self._last_error:  # log each distinct failure once, not every retry
            logger.error("airstore: %s failed (data kept in memory, will retry): %s", what, text)
            self._last_error = text

    async def _commit(self) -> None:
        """Group commit for ``durability="sync"``: one fdatasync covers every waiting write."""
        fut = self._commit_fut
        if fut is None:
            fut = self._commit_fut = self._loop.create_future()
            self._loop.call_soon(self._start_commit)
        await asyncio.shield(fut)

    def _start_commit(self) -> None:
        fut, self._commit_fut = self._commit_fut, None
        if fut is None:
            return
        exc = self.drain()
        if exc is not None:
            fut.set_exception(StorageIOError(f"write failed: {exc}", path=self.path))
            fut.exception()  # mark retrieved: every waiter re-raises it through shield
            return
        task = asyncio.create_task(self._sync_then_resolve(fut, self.files()))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _sync_then_resolve(
        self, fut: asyncio.Future[None], files: builtins.list[AppendFile]
    ) -> None:
        try:
            await asyncio.to_thread(_sync_all, files)
        except OSError as exc:
            fut.set_exception(StorageIOError(f"fdatasync failed: {exc}", path=self.path))
            fut.exception()
        else:
            fut.set_result(None)

    async def flush(self) -> None:
        """Write pending lines, snapshot dirty namespaces, and fdatasync.

        Raises:
            StorageIOError: the disk failed; the data stays in memory, marked dirty.
        """
        async with self._flush_lock:
            exc = self.drain()
            if exc is not None:
                raise StorageIOError(f"cannot write to {self.path}: {exc}", path=self.path) from exc
            await self._snapshot_dirty()
            try:
                await asyncio.to_thread(_sync_all, self.files())
            except OSError as exc:
                raise StorageIOError(f"fdatasync failed in {self.path}: {exc}") from exc

    async def _snapshot_dirty(self) -> None:
        for space in [s for s in self.spaces.values() if s.dirty]:
            data, journal_end = space.encode_snapshot()
            try:
                await asyncio.to_thread(write_atomic, space.snapshot_path, data)
            except OSError as exc:
                space.dirty = True
                self._report_io_error("snapshot", space.snapshot_path, exc)
                raise StorageIOError(
                    f"cannot write snapshot {space.snapshot_path}: {exc}",
                    namespace=space.ns,
                    path=space.snapshot_path,
                ) from exc
            try:
                space.compact_journal(journal_end)
            except OSError as exc:  # the snapshot is durable; the journal stays correct
                self._report_io_error("journal compaction", space.snapshot_path, exc)

    def flush_now(self) -> None:
        """Synchronous final flush for interpreter exit and SIGTERM (no event loop needed)."""
        exc = self.drain()
        if exc is not None:
            raise StorageIOError(f"cannot write to {self.path}: {exc}", path=self.path) from exc
        try:
            for space in [s for s in self.spaces.values() if s.dirty]:
                data, journal_end = space.encode_snapshot()
                try:
                    write_atomic(space.snapshot_path, data)
                except OSError:
                    space.dirty = True
                    raise
                space.compact_journal(journal_end)
            _sync_all(self.files())
        except OSError as exc:
            raise StorageIOError(
                f"final flush of {self.path} failed: {exc}", path=self.path
            ) from exc

    async def maintain(self) -> None:
        """Background: fdatasync about once a second, snapshot dirty namespaces periodically."""
        next_snapshot = time.monotonic() + self._flush_interval
        while True:
            await asyncio.sleep(min(SYNC_INTERVAL, self._flush_interval))
            now = self._clock()
            for space in self.spaces.values():
                space.sweep(now)
            try:
                if self.drain() is None:
                    await asyncio.to_thread(_sync_all, self.files())
                if time.monotonic() >= next_snapshot:
                    async with self._flush_lock:
                        await self._snapshot_dirty()
                    next_snapshot = time.monotonic() + self._flush_interval
                for log in list(self.logs.values()):
                    log.apply_retention()
            except (OSError, AirstoreError) as exc:
                logger.error(
                    "airstore: background flush of %s failed, will retry: %s", self.path, exc
                )
            except Exception:  # a bug must not silently end background flushing
                logger.exception("airstore: unexpected error in the background flush")

    async def stop(self) -> None:
        """Stop the background task, wait for in-flight group commits, cancel a retry."""
        task, self._maintainer = self._maintainer, None
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
        if self._drain_handle is not None:
            self._drain_handle.cancel()
            self._drain_handle = None
        for t in list(self._tasks):
            with contextlib.suppress(asyncio.CancelledError, AirstoreError):
                await t

    # -- inspection --------------------------------------------------------------------------
