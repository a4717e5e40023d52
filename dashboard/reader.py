"""A thin sync reader: runs :class:`DashboardData` on a private event-loop thread.

Dash callbacks are plain functions called from the web server's threads; they reach the async
store through :meth:`SyncReader.run`, which submits the coroutine to the loop and waits.
"""

from __future__ import annotations

import asyncio
import gc
import threading
from collections.abc import Awaitable, Callable, Coroutine, Sequence
from typing import Any, TypeVar

from airmeter.slo_config import Objective
from dashboard.data import DashboardData
from dashboard.errors import DashboardError
from dashboard.types import DashboardView, Filters, ToolDetail

__all__ = ["DEFAULT_TIMEOUT", "FULL_GC_EVERY", "SyncReader"]

T = TypeVar("T")

DEFAULT_TIMEOUT = 30.0
"""Seconds a callback waits for the store before giving up."""

FULL_GC_EVERY = 100
"""A full garbage collection runs every this many views (see :meth:`SyncReader._after_view`)."""


class SyncReader:
    """Owns a loop thread and the :class:`DashboardData` that lives on it.

    Args:
        opener: builds the data object on the loop (e.g. ``lambda: DashboardData.open(url)``).
        timeout: seconds to wait for each call.
        freeze_gc: after each view, move long-lived objects out of the cyclic GC's way
            (process-wide: meant for a process that serves the dashboard, see ``_after_view``).

    Raises:
        DashboardError: whatever ``opener`` raises (the loop is stopped first).
    """

    def __init__(
        self,
        opener: Callable[[], Awaitable[DashboardData]],
        *,
        timeout: float = DEFAULT_TIMEOUT,
        freeze_gc: bool = False,
    ) -> None:
        self._timeout = timeout
        self._freeze_gc = freeze_gc
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(
            target=self._loop.run_forever, name="air-dashboard-data", daemon=True
        )
        self._thread.start()
        self._closed = False
        self._views = 0

        async def _open() -> DashboardData:
            return await opener()

        try:
            self.data: DashboardData = self.run(_open())
        except BaseException:
            self._stop_loop()
            raise

    @classmethod
    def open(
        cls,
        url: str,
        *,
        timeout: float = DEFAULT_TIMEOUT,
        freeze_gc: bool = False,
        slo_config: str | None = None,
        objectives: Sequence[Objective] | None = None,
        everywhere: bool = False,
    ) -> SyncReader:
        """Open the store at ``url`` read-only (``freeze_gc``: see the class; ``slo_config``:
        the SLO objectives file, default ``.air/slo.yml``; ``objectives``: in code instead;
        ``everywhere``: list every data location's servers too, see
        :class:`~dashboard.data.DashboardData`).

        Raises:
            StoreUnavailableError: the store cannot be opened or read.
        """
        return cls(
            lambda: DashboardData.open(
                url, slo_config=slo_config, objectives=objectives, everywhere=everywhere
            ),
            timeout=timeout,
            freeze_gc=freeze_gc,
        )

    def run(self, coro: Coroutine[Any, Any, T]) -> T:
        """Run ``coro`` on the reader's loop and return its result (or raise its error)."""
        if self._closed:
            coro.close()
            raise DashboardError("the dashboard reader is closed")
        future = asyncio.run_coroutine_threadsafe(coro, self._loop)
        return future.result(self._timeout)

    def view(
        self,
        range_key: str,
        filters: Filters | None = None,
        *,
        start_ms: int | None = None,
        end_ms: int | None = None,
    ) -> DashboardView:
        """The main page's view model; see :meth:`DashboardData.view`."""
        rng = self.data.resolve(range_key, start_ms=start_ms, end_ms=end_ms)
        view = self.run(self.data.view(rng, filters))
        self._after_view()
        return view

    def fitting_range(self) -> str:
        """The range a page opens on at first sight; see :meth:`DashboardData.fitting_range`."""
        return self.run(self.data.fitting_range())

    def _after_view(self) -> None:
        """Keep the long-lived data (parsed rollups, caches) out of the cyclic GC's way.

        The process holds millions of long-lived objects; a full collection walks all of them
        (~1 s at 1 M calls). Freezing after each view moves them to the permanent generation, so
        refreshes only pay for young objects; a full collection every ``FULL_GC_EVERY`` views
        reclaims any cyclic garbage that was frozen along the way.
        """
        if not self._freeze_gc:
            return
        self._views += 1
        if self._views % FULL_GC_EVERY == 0:
            gc.unfreeze()
            gc.collect()
        gc.freeze()

    def tool_detail(
        self,
        tool: str,
        range_key: str,
        filters: Filters | None = None,
        *,
        start_ms: int | None = None,
        end_ms: int | None = None,
    ) -> ToolDetail:
        """One tool's drill-down; see :meth:`DashboardData.tool_detail`."""
        rng = self.data.resolve(range_key, start_ms=start_ms, end_ms=end_ms)
        return self.run(self.data.tool_detail(tool, rng, filters))

    def close(self) -> None:
        """Close the store and stop the loop thread. Idempotent."""
        if self._closed:
            return
        try:
            self.run(self.data.close())
        finally:
            self._closed = True
            self._stop_loop()

    def _stop_loop(self) -> None:
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=self._timeout)
        self._loop.close()
