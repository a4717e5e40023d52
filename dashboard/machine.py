"""One machine, one view: every data location's servers, and the gateway's added latency.

A desktop MCP client that starts a server in ``/`` meters to the per-user data directory, a
server started in a project meters to the project's ``.air/data``. Every file data directory a
meter writes to is registered in the per-user ``locations.json``
(:mod:`airstore.locations_index`). Unless the dashboard was opened on one store (``air
dashboard --store URL``), :class:`MachineWatch` reads every other registered location in the
background, each opened read-only and kept open, and the page lists every server of every
location with where its data is (:class:`MachinePanel`). Nothing is merged on disk: the numbers
of each location are read from that location. The page's other views (the headline, charts,
tools, errors, SLOs) stay those of the store the dashboard was opened on.

The same watch reads the gateway's hops in the dashboard's store
(:func:`airmeter.hops.hop_summary`): the latency ``air gateway`` added to the calls it proxied
to upstreams that metered them into the same store (:class:`GatewayPanel`). Plain typed code,
no Dash import.
"""

from __future__ import annotations

import asyncio
import logging
import math
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from airmeter import AirmeterError, snapshot
from airmeter.hops import hop_summary, same_store
from airstore import AirstoreError, ReadOnlyUnsupportedError, Store, create_storage, store_exists
from airstore.locations_index import known_locations
from dashboard.types import GatewayPanel, LocationServer, MachinePanel, TimeRange

__all__ = ["MAX_MACHINE_ROWS", "MachineWatch"]

logger = logging.getLogger(__name__)

MAX_MACHINE_ROWS = 200
"""The most server rows the machine panel gets (most calls first)."""
_WATCH_EVERY = 10.0


class MachineWatch:
    """Reads the other data locations and the gateway's hops in the background.

    Args:
        store: the dashboard's store.
        url: its URL.
        everywhere: read every registered location (``False``: this store only).
        locations: the other locations' directories (default: the registered ones, read
            again on each evaluation, so a location registered later shows up).
        every: seconds between two evaluations.
        monotonic: monotonic seconds for the interval.
    """

    def __init__(
        self,
        store: Store,
        *,
        url: str,
        everywhere: bool = True,
        locations: Callable[[], Sequence[Path]] = known_locations,
        every: float = _WATCH_EVERY,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        self._store = store
        self._url = url
        self._everywhere = everywhere
        self._locations = locations
        self._every = every
        self._monotonic = monotonic
        self._others: dict[str, Store] = {}
        self._other_rows: tuple[LocationServer, ...] = ()
        self.gateway = GatewayPanel()
        """The last gateway panel."""
        self._done: tuple[int, int] | None = None
        self._last = -math.inf
        self._task: asyncio.Task[None] | None = None
        self.updated = asyncio.Event()
        """Set after each evaluation (tests wait on it)."""

    def poll(self, rng: TimeRange) -> None:
        """Start an evaluation in the background when one is due (the interval passed, or the
        range changed)."""
        if self._task is not None:
            return
        wanted = (rng.since_ms // 60_000, rng.until_ms // 60_000)
        now = self._monotonic()
        if now - self._last >= self._every or wanted != self._done:
            self._last = now
            self._task = asyncio.get_running_loop().create_task(self._run(rng, wanted))

    def panel(self, here: Sequence[LocationServer]) -> MachinePanel:
        """The machine panel: ``here`` (the dashboard's store's servers, from the view) and the
        other locations' servers of the last evaluation."""
        others = sorted(self._other_rows, key=lambda r: (-r.calls, r.data, r.server))
        rows = (*here, *others)
        locations = (self._url, *dict.fromkeys(r.data for r in others))
        return MachinePanel(rows=rows[:MAX_MACHINE_ROWS], locations=locations,
                            everywhere=self._everywhere,
                            more=max(0, len(rows) - MAX_MACHINE_ROWS))  # fmt: skip

    async def _run(self, rng: TimeRange, wanted: tuple[int, int]) -> None:
        try:
            await self.evaluate_now(rng)
        except Exception:  # a bug here must not take the page down
            logger.exception("the machine panel's evaluation failed")
        finally:
            self._done = wanted
            self._task = None
            self.updated.set()

    async def evaluate_now(self, rng: TimeRange) -> None:
        """Read the gateway's hops and every other location's servers for ``rng`` now."""
        try:
            summary = await hop_summary(self._store, since=rng.since_ms)
            self.gateway = GatewayPanel(hops=summary.hops, rows=summary.servers)
        except (AirstoreError, AirmeterError, OSError) as exc:
            logger.warning("cannot read the gateway's hops: %s", exc)
        if not self._everywhere:
            return
        rows: list[LocationServer] = []
        for url in await self._other_urls():
            await asyncio.sleep(0)  # one location a slice: refreshes interleave
            store = self._others[url]
            try:
                snap = await snapshot(store, since=rng.since_ms, until=rng.until_ms)
            except (AirstoreError, AirmeterError, OSError) as exc:
                logger.warning("cannot read %s: %s", url, exc)
                continue
            rows += [LocationServer(server=r.server, instance_id=r.instance_id, calls=r.calls,
                                    errors=r.errors, error_rate=r.error_rate, p95_ms=r.p95_ms,
                                    data=url, here=False)
                     for r in snap.servers]  # fmt: skip
        self._other_rows = tuple(rows)

    async def _other_urls(self) -> list[str]:
        """The other registered locations, opened (read-only) once and kept; those gone are
        closed."""
        try:
            paths = await asyncio.to_thread(self._locations)
        except OSError as exc:
            logger.warning("cannot read the locations index: %s", exc)
            return list(self._others)
        urls = [f"file://{p}" for p in paths if not same_store(f"file://{p}", self._url)]
        for gone in set(self._others) - set(urls):
            await self._others.pop(gone).close()
        for url in urls:
            if url in self._others:
                continue
            try:
                if not await store_exists(url):
                    continue
                try:
                    self._others[url] = await create_storage(url, read_only=True)
                except ReadOnlyUnsupportedError:
                    continue
            except (AirstoreError, OSError) as exc:
                logger.warning("cannot open %s: %s", url, exc)
        return [u for u in urls if u in self._others]

    async def close(self) -> None:
        """Cancel an evaluation in progress and close the other locations. Idempotent."""
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
        others, self._others = self._others, {}
        for store in others.values():
            await store.close()
