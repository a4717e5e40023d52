"""Getting a FileStore's bytes to disk: per-turn commits, group commit, compaction, fdatasync.

All ``os.write`` calls happen on the event loop: at the end of each loop turn every log with
pending lines gets one ``write`` and every namespace with pending KV records one commit (one
``write`` under the journal's lock); a buffer past 1 MB is written at once, so a loop that never
yields still writes. In ``snapshot`` durability KV records are committed only by a flush;
in ``sync`` durability only by the group commit every writer waits for. ``fdatasync`` and
snapshot files go to worker threads.

A write the disk refuses (ENOSPC, EIO) is handled by ``_diskfull``: refused in ``sync`` mode,
counted as lost otherwise, and then every write is refused until the disk takes one again.
"""

from __future__ import annotations

import asyncio
import builtins
import contextlib
import logging
import os
import time
from collections.abc import Callable
from typing import Protocol

from airstore._diskfull import DiskFull
from airstore._filenames import retention_namespace
from airstore._gzseg import compress_segment
from airstore._kvspace import KVSpace
from airstore._logfile import LogFile
from airstore._retention import apply_retention, read_retention
from airstore.errors import AirstoreError, StorageIOError
from airstore.types import Clock

__all__ = ["INLINE_WRITE_BYTES", "Persister"]

logger = logging.getLogger(__name__)

SYNC_INTERVAL = 1.0  # fdatasync cadence for journal and log files
RETENTION_INTERVAL = 10.0  # seconds between two passes of per-namespace log retention
INLINE_WRITE_BYTES = 1 << 20  # a loop that never yields still writes every ~1 MB


class _Syncable(Protocol):
    def sync(self) -> None: ...


def _sync_all(files: builtins.list[_Syncable]) -> None:
    for f in files:
        f.sync()


class Persister:
    """Writes, syncs and compacts the files of one FileStore.

    Args:
        path: the data directory (for messages).
        spaces: the store's KV namespaces (shared, not copied).
        logs: the store's open logs (shared, not copied).
        sync: ``durability="sync"``: writers wait for fdatasync.
        commit_each_turn: commit KV records at the end of every loop turn (``journal`` and
            ``sync``); otherwise only when flushing (``snapshot``).
        flush_interval: seconds between periodic flushes.
        clock: seconds since the epoch (TTL sweeps).
        on_writable: told ``False`` when writes start being refused, ``True`` when they resume.
    """

    def __init__(
        self,
        path: str,
        spaces: dict[str, KVSpace],
        logs: dict[str, LogFile],
        *,
        sync: bool,
        commit_each_turn: bool,
        flush_interval: float,
        clock: Clock,
        on_writable: Callable[[bool], None],
    ) -> None:
        self.path = path
        self.spaces = spaces
        self.logs = logs
        self._sync = sync
        self._each_turn = commit_each_turn
        self._flush_interval = flush_interval
        self._clock = clock
        self._loop = asyncio.get_running_loop()
        # the end-of-turn drain, once scheduled (writers skip schedule() while it is)
        self.drain_handle: asyncio.Handle | None = None
        self._commit_fut: asyncio.Future[None] | None = None
        self._tasks: set[asyncio.Task[None]] = set()
        self._flush_lock = asyncio.Lock()
        self._last_error: str | None = None
        self._maintainer: asyncio.Task[None] | None = None
        self._compressing: set[str] = set()
        self._compressions: set[asyncio.Task[None]] = set()
        # what a refused write does (dropped, counted, refused until a probe succeeds)
        self.disk = DiskFull(
            path, spaces, logs, sync=sync, loop=self._loop, on_writable=on_writable
        )

    @property
    def closed(self) -> bool:
        """The store is closing: writes are refused, no probe is scheduled."""
        return self.disk.closed

    @closed.setter
    def closed(self, value: bool) -> None:
        self.disk.closed = value

    def write_failed(self, exc: OSError) -> None:
        """A write was refused by the disk: drop what is pending, count or refuse it, and
        refuse writes until the disk takes one again (:meth:`DiskFull.write_failed`)."""
        self.disk.write_failed(exc)

    def start(self) -> None:
        """Start the background task (fdatasync, periodic flush, compaction, TTL sweep)."""
        if self._maintainer is None:
            self._maintainer = asyncio.create_task(self.maintain())
        if self.disk.refusing is not None:
            self.disk.schedule_probe()

    def files(self) -> builtins.list[_Syncable]:
        """Every open file to fdatasync: logs and journals."""
        files: builtins.list[_Syncable] = list(self.logs.values())
        files += [s.journal for s in self.spaces.values()]
        return files

    def schedule(self, pending: bytearray) -> None:
        """Have pending bytes written at the end of this loop turn (or now, past 1 MB).

        Synchronous: an acknowledged write in ``journal`` mode costs no await that suspends.
        """
        if self._sync:
            return  # the group commit every writer awaits writes it
        if self.drain_handle is None:
            self.drain_handle = self._loop.call_soon(self.drain)
        if len(pending) >= INLINE_WRITE_BYTES:
            self.drain()

    async def written(self, pending: bytearray) -> None:
        """Schedule the write; in sync mode wait until it is durable."""
        self.schedule(pending)
        if self._sync:
            await self._commit()

    def drain(self, *, kv: bool | None = None) -> OSError | None:
        """Write every pending log buffer and (each turn, or when ``kv``) commit every
        namespace's pending records; on a refused write, drop this turn's records (see the
        module docstring) and return the error."""
        if self.drain_handle is not None:
            self.drain_handle.cancel()
            self.drain_handle = None
        try:
            for log in self.logs.values():
                if log.pending:
                    log.write_pending()
                segment = log.rotate_if_needed()
                if segment is not None:
                    self._background(compress_segment, segment)
            if self._each_turn if kv is None else kv:
                for space in self.spaces.values():
                    if space.journal.pending:
                        space.commit()
        except OSError as exc:
            self.write_failed(exc)
            return exc
        return None

    def _background(self, fn: Callable[[str], object], path: str) -> None:
        """Compress a segment in a worker thread; flushes and ``stop()`` wait for it."""
        if self._loop.is_closed() or path in self._compressing:
            return  # at exit: the next writer of this slot finishes it
        self._compressing.add(path)

        async def run() -> None:
            try:
                await asyncio.to_thread(fn, path)
            except OSError as exc:  # the plain segment stays: queries read it as it is
                logger.warning("airstore: could not compress %s: %s", path, exc)
            finally:
                self._compressing.discard(path)

        task = self._loop.create_task(run())
        self._tasks.add(task)
        self._compressions.add(task)
        task.add_done_callback(self._tasks.discard)
        task.add_done_callback(self._compressions.discard)

    async def retention_pass(self) -> None:
        """Apply every namespace's stored caps (set by any process) after compressing the
        segments of our slots still plain (a compression cut short by an exit or a crash)."""
        for path in await asyncio.to_thread(self._leftovers):
            self._background(compress_segment, path)
        if self._compressions:
            await asyncio.gather(*self._compressions)
        names = await asyncio.to_thread(os.listdir, self.path)
        for name in names:
            if (ns := retention_namespace(self.path, name)) is not None:
                caps = read_retention(self.path, ns)
                if caps is not None:
                    await asyncio.to_thread(apply_retention, self.path, ns, caps, self._clock())
                    if ns in self.logs:
                        self.logs[ns].retention = caps

    def _leftovers(self) -> builtins.list[str]:
        busy = set(self._compressing)
        return [
            p
            for log in list(self.logs.values())
            for p in log.uncompressed_segments()
            if p not in busy
        ]

    def _report_io_error(self, what: str, path: str, exc: OSError) -> None:
        text = f"{what} {path}: {exc}"
        if text != self._last_error:  # log each distinct failure once, not every retry
            logger.error("airstore: %s failed (nothing lost: the journal holds it): %s", what, text)
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
        self, fut: asyncio.Future[None], files: builtins.list[_Syncable]
    ) -> None:
        try:
            await asyncio.to_thread(_sync_all, files)
        except OSError as exc:
            fut.set_exception(StorageIOError(f"fdatasync failed: {exc}", path=self.path))
            fut.exception()
        else:
            fut.set_result(None)

    async def flush(self) -> None:
        """Write and commit everything pending, compact journals that are due, fdatasync.

        Raises:
            StorageIOError: the disk failed; the data stays in memory, pending.
        """
        async with self._flush_lock:
            exc = self.drain(kv=True)
            if exc is not None:
                raise StorageIOError(
                    f"cannot write to {self.path}: {exc}; this turn's writes were dropped",
                    path=self.path,
                ) from exc
            await self._compact_due()
            await self.retention_pass()
            try:
                await asyncio.to_thread(_sync_all, self.files())
            except OSError as exc:
                raise StorageIOError(f"fdatasync failed in {self.path}: {exc}") from exc

    async def _compact_due(self) -> None:
        """Snapshot the namespaces this process changed (or whose journal grew big).

        Raises:
            StorageIOError: a snapshot could not be written; the journal still holds every
                record, so nothing is lost, and the next flush tries again.
        """
        failed: OSError | None = None
        for space in [s for s in self.spaces.values() if s.compaction_due()]:
            try:
                await space.compact()
            except OSError as exc:
                self._report_io_error("snapshot", space.snapshot_path, exc)
                failed = exc
        if failed is not None:
            raise StorageIOError(f"cannot write a snapshot in {self.path}: {failed}") from failed

    def flush_now(self) -> None:
        """Synchronous final flush for interpreter exit and SIGTERM (no event loop needed)."""
        exc = self.drain(kv=True)
        if exc is None:
            try:
                _sync_all(self.files())
            except OSError as err:
                exc = err
        if exc is not None:
            raise StorageIOError(f"final flush of {self.path} failed: {exc}", path=self.path)

    async def maintain(self) -> None:
        """Background: fdatasync about once a second, flush and compact periodically."""
        next_flush = time.monotonic() + self._flush_interval
        next_retention = time.monotonic()
        while True:
            await asyncio.sleep(min(SYNC_INTERVAL, self._flush_interval))
            now = self._clock()
            for space in self.spaces.values():
                space.sweep(now)
            try:
                if time.monotonic() >= next_flush:
                    await self.flush()
                    next_flush = time.monotonic() + self._flush_interval
                elif self.drain() is None:
                    await asyncio.to_thread(_sync_all, self.files())
                for log in list(self.logs.values()):
                    log.apply_retention()
                if time.monotonic() >= next_retention:
                    next_retention = time.monotonic() + RETENTION_INTERVAL
                    await self.retention_pass()
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
        if self.drain_handle is not None:
            self.drain_handle.cancel()
            self.drain_handle = None
        self.disk.cancel_probe()
        for t in list(self._tasks):
            with contextlib.suppress(asyncio.CancelledError, AirstoreError):
                await t
