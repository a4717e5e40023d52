"""What a FileStore does when the disk refuses a write (ENOSPC, EIO …).

The refused write leaves no partial record behind (the file was cut back) and its turn's
records are dropped, memory rolled back to what the files hold. In ``sync`` mode every writer
waiting on that commit gets :class:`~airstore.StorageIOError`: refused, never acknowledged.
Otherwise those writes were acknowledged already: they are counted as lost (``lost_writes``, an
error log line, an event in ``.events.jsonl`` for ``air store check``) and the store refuses
every write with ``StorageIOError`` until a probe write succeeds, then resumes by itself — like
Redis refusing writes (MISCONF) while it cannot persist.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
import os
import time
from collections.abc import Callable

from airstore._events import append_event
from airstore._kvspace import KVSpace
from airstore._logfile import LogFile

__all__ = ["LOG_EVERY", "RETRY_DELAY", "DiskFull"]

logger = logging.getLogger(__name__)

RETRY_DELAY = 0.5  # between probes of a disk that refused a write
LOG_EVERY = 10.0  # seconds between two log lines of sync-mode refusals


class DiskFull:
    """The refused writes of one FileStore: what is dropped, counted, refused and probed.

    The ``Persister`` holds one over the same namespaces and logs it writes.

    Args:
        path: the data directory (messages, the event log).
        spaces: the store's KV namespaces (shared, not copied).
        logs: the store's open logs (shared, not copied).
        sync: ``durability="sync"``: a refused write is refused to its writers, not lost.
        loop: the event loop the probes run on.
        on_writable: told ``False`` when writes start being refused, ``True`` when they resume.
    """

    def __init__(
        self,
        path: str,
        spaces: dict[str, KVSpace],
        logs: dict[str, LogFile],
        *,
        sync: bool,
        loop: asyncio.AbstractEventLoop,
        on_writable: Callable[[bool], None],
    ) -> None:
        self.path = path
        self.spaces = spaces
        self.logs = logs
        self._sync = sync
        self._loop = loop
        self._on_writable = on_writable
        self.refusing: str | None = None  # why writes are refused, while they are
        self.lost_writes = 0  # acknowledged writes dropped because the disk refused them
        self.refused_writes = 0  # sync-mode writes refused (never acknowledged)
        self.closed = False  # the store is closing: no more probes
        self._lost_now = 0  # lost and not yet in the event log
        self._probe_handle: asyncio.TimerHandle | None = None
        self._refusal_logged_at = -math.inf

    def write_failed(self, exc: OSError) -> None:
        """A write was refused by the disk: drop the pending records (see the module
        docstring)."""
        dropped = self._drop_pending()
        if self._sync:
            self.refused_writes += dropped
            # A full disk refuses every write a busy caller retries: one line per
            # LOG_EVERY seconds, not one per write (the count is in ``refused_writes``).
            now = time.monotonic()
            if now - self._refusal_logged_at >= LOG_EVERY:
                self._refusal_logged_at = now
                logger.error(
                    "airstore: a write to %s failed (%s): the %d writes waiting on it are "
                    "refused (%d refused in all)",
                    self.path,
                    exc,
                    dropped,
                    self.refused_writes,
                )
            return
        self.lost_writes += dropped
        self._lost_now += dropped
        logger.error(
            "airstore: a write to %s failed (%s): %d acknowledged writes of this loop turn are "
            "lost; writes are refused until the disk takes them again",
            self.path,
            exc,
            dropped,
        )
        if self.refusing is None:
            self.refusing = str(exc)
            self._on_writable(False)
            self.schedule_probe()

    def _drop_pending(self) -> int:
        """Forget every pending record and line; memory goes back to what the files hold."""
        dropped = 0
        for log in self.logs.values():
            buf = log.pending
            dropped += buf.count(b"\n")
            buf.clear()
        for space in self.spaces.values():
            buf = space.journal.pending
            if buf:
                dropped += buf.count(b"\n")
                buf.clear()
                with contextlib.suppress(OSError):
                    space.load()
        return dropped

    def schedule_probe(self) -> None:
        """While refusing: try the disk again in :data:`RETRY_DELAY` seconds."""
        if not self.closed and not self._loop.is_closed() and self._probe_handle is None:
            self._probe_handle = self._loop.call_later(RETRY_DELAY, self._probe)

    def _probe(self) -> None:
        """While refusing: try to record the loss on disk; success means the disk takes writes
        again."""
        self._probe_handle = None
        if self.refusing is None:
            return
        try:
            self.record_loss()
        except OSError:
            self.schedule_probe()
            return
        logger.warning("airstore: writes to %s succeed again; accepting writes", self.path)
        self.refusing = None
        self._on_writable(True)

    def cancel_probe(self) -> None:
        """Cancel a probe scheduled (the store stops)."""
        if self._probe_handle is not None:
            self._probe_handle.cancel()
            self._probe_handle = None

    def record_loss(self) -> None:
        """Write the writes lost since the last record to the directory's event log.

        Raises:
            OSError: the disk refused it.
        """
        if self._lost_now:
            event = {
                "event": "lost_writes",
                "count": self._lost_now,
                "reason": self.refusing or "write failed",
                "ts": int(time.time() * 1000),
                "pid": os.getpid(),
            }
            append_event(self.path, event)
            self._lost_now = 0
