"""Disk use against the retention caps, watched in the background for the header's badge.

A store that can measure its files (:class:`airstore.Inspectable`: FileStore) reports per
namespace its log bytes and oldest log age beside the caps set for it (``set_log_retention``).
Measuring reads every log file, so it runs in the background at most every
:data:`USAGE_EVERY` seconds and the page shows the last result; a log at or past
:data:`NEAR_CAP` of a cap gets a badge (beyond the cap the oldest raw calls are dropped).
"""

from __future__ import annotations

import asyncio
import logging
import math
import time
from collections.abc import Callable

from airstore import AirstoreError, Inspectable, NamespaceStats, Store
from dashboard.types import Alert

__all__ = ["NEAR_CAP", "USAGE_EVERY", "UsageWatch", "disk_alerts"]

logger = logging.getLogger(__name__)

USAGE_EVERY = 300.0
"""Seconds between two measurements of the store's files."""

NEAR_CAP = 0.8
"""The share of a cap from which the page warns."""


def _size(n: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    raise AssertionError("unreachable")  # pragma: no cover


def _days(seconds: float) -> str:
    days = seconds / 86_400
    return f"{days:.1f} days" if days < 10 else f"{days:.0f} days"


def disk_alerts(usage: tuple[NamespaceStats, ...]) -> tuple[Alert, ...]:
    """A badge for every namespace whose log is at or past :data:`NEAR_CAP` of a cap."""
    out = []
    for item in usage:
        if item.max_bytes and item.log_bytes >= NEAR_CAP * item.max_bytes:
            out.append(
                Alert(
                    kind="disk",
                    text=f"{item.namespace}: log at {item.log_bytes / item.max_bytes:.0%} of its "
                    f"{_size(item.max_bytes)} cap (older entries go)",
                )
            )
        age = item.oldest_log_age
        if item.max_age and age is not None and age >= NEAR_CAP * item.max_age:
            out.append(
                Alert(
                    kind="disk",
                    text=f"{item.namespace}: oldest entries {_days(age)} old, kept "
                    f"{_days(item.max_age)} (older ones go)",
                )
            )
    return tuple(out)


class UsageWatch:
    """Measures a store's disk use in the background; :meth:`alerts` never waits for it.

    Args:
        store: the dashboard's store (read-only); a store that is not
            :class:`~airstore.Inspectable` has nothing to measure.
        every: seconds between two measurements.
        clock: monotonic seconds; injectable for tests.
    """

    def __init__(
        self,
        store: Store,
        *,
        every: float = USAGE_EVERY,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._store = store if isinstance(store, Inspectable) else None
        self._every = every
        self._clock = clock
        self._last = -math.inf
        self._usage: tuple[NamespaceStats, ...] = ()
        self._task: asyncio.Task[None] | None = None
        self.measured = asyncio.Event()
        """Set once a measurement finished (tests wait on it)."""

    def alerts(self) -> tuple[Alert, ...]:
        """The badges of the last measurement; starts a new one in the background when due."""
        if self._store is not None and self._task is None:
            now = self._clock()
            if now - self._last >= self._every:
                self._last = now
                self._task = asyncio.get_running_loop().create_task(self._measure())
        return disk_alerts(self._usage)

    async def _measure(self) -> None:
        assert self._store is not None
        try:
            self._usage = tuple(await self._store.stats())
        except (AirstoreError, OSError) as exc:  # the page keeps working without the badge
            logger.warning("cannot measure the store's disk use: %s", exc)
        finally:
            self._task = None
            self.measured.set()

    async def close(self) -> None:
        """Cancel a measurement in progress. Idempotent."""
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
