"""Every wait on a sink is bounded: one call at most ``timeout`` seconds, failures counted and
logged at most once a minute per sink."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable
from typing import Final

__all__ = ["DEFAULT_SINK_TIMEOUT", "SINK_ERROR_LOG_INTERVAL", "SinkCalls"]

logger = logging.getLogger(__name__)

DEFAULT_SINK_TIMEOUT: Final = 10.0
"""Longest wait on one sink call (a write, a close, a rollup persist); then it is abandoned."""
SINK_ERROR_LOG_INTERVAL: Final = 60.0
"""Seconds between two logged failures of one sink (the others are counted, not logged)."""


class SinkCalls:
    """Runs sink calls with a timeout and keeps the failure counts.

    Args:
        timeout: longest wait on one call, in seconds.
    """

    def __init__(self, *, timeout: float = DEFAULT_SINK_TIMEOUT) -> None:
        self.timeout = timeout
        self.errors = 0
        self.timeouts = 0
        self._abandoned: set[asyncio.Task[object]] = set()
        self._logged: dict[int, float] = {}
        self._quiet: dict[int, int] = {}

    async def call(self, sink: object, call: Awaitable[object], what: str, n: int = 0) -> bool:
        """Await ``call`` for at most :attr:`timeout` seconds.

        A call that does not finish is cancelled and left behind, never waited for (a sink
        that ignores the cancellation must not block the meter either).

        Args:
            sink: the sink (for the log line).
            call: its awaitable (``sink.write(batch)`` …).
            what: what the call does, for the log line.
            n: how many records it carried.

        Returns:
            Whether it finished without an error (failures and timeouts are counted).
        """
        task: asyncio.Task[object] = asyncio.ensure_future(call)
        try:
            done, _ = await asyncio.wait({task}, timeout=self.timeout)
        except asyncio.CancelledError:
            task.cancel()
            raise
        if not done:
            task.cancel()
            self._abandoned.add(task)
            task.add_done_callback(self._abandoned.discard)
            self.timeouts += 1
            self._log(sink, n, f"{what} did not finish within {self.timeout:g}s", None)
            return False
        exc = task.exception()
        if exc is not None:
            self.errors += 1
            self._log(sink, n, f"{what} failed", exc)
            return False
        return True

    def _log(self, sink: object, n: int, what: str, exc: BaseException | None) -> None:
        """Log a failure (with its traceback), then at most once a minute per sink (an outage
        would otherwise log every delivery)."""
        now = time.monotonic()
        key = id(sink)
        last = self._logged.get(key)
        if last is not None and now - last < SINK_ERROR_LOG_INTERVAL:
            self._quiet[key] = self._quiet.get(key, 0) + 1
            return
        self._logged[key] = now
        quiet = self._quiet.pop(key, 0)
        more = f" ({quiet} more failures not logged)" if quiet else ""
        logger.error("airmeter: sink %r: %s on %d records%s", sink, what, n, more, exc_info=exc)
