"""Data access for the dashboard: open a store read-only and build the page's view model.

Plain typed async code with no Dash import, so tests call it directly. Everything is read
through airmeter's public readers, which own the meter's storage format: the aggregate numbers
(headline, series, layers, per-tool rows) from an :class:`airmeter.RollupReader`, the recent
errors and a tool's latest calls as :class:`~airmeter.CallRecord` objects from
:func:`airmeter.recent_calls`. The store is opened with airstore's ``read_only=True`` after
:func:`airstore.store_exists`: no backend kind is named here.
"""

from __future__ import annotations

import bisect
import logging
import time
from collections.abc import Sequence
from typing import Any

from airmeter import (
    ERROR_CLASSES,
    AirmeterError,
    CallRecord,
    RollupReader,
    Snapshot,
    error_class_of,
    has_calls,
    recent_calls,
)
from airmeter.clients import ClientUsage, client_snapshot, client_usage
from airmeter.slo_config import Objective
from airstore import (
    AirstoreError,
    InvalidArgumentError,
    ReadOnlyUnsupportedError,
    Store,
    create_storage,
    store_exists,
)
from dashboard.errors import StoreUnavailableError
from dashboard.machine import MachineWatch
from dashboard.meter_watch import MeterWatch
from dashboard.ranges import CUSTOM, FIT_LIMIT, RANGES, fitting_range, resolve_range
from dashboard.servers import parse_server_choice, server_choices
from dashboard.types import (
    CallRow,
    DashboardView,
    ErrorRow,
    Filters,
    HistogramBin,
    LocationServer,
    TimeRange,
    ToolDetail,
)
from dashboard.usage import UsageWatch

__all__ = [
    "DETAIL_SAMPLE",
    "RECENT_ERRORS",
    "DashboardData",
    "latency_histogram",
    "open_store",
    "parse_server_choice",
    "server_choices",
]

logger = logging.getLogger(__name__)

RECENT_ERRORS = 50
"""How many of the newest failed calls the recent-errors table shows."""

DETAIL_SAMPLE = 2000
"""A tool's histogram covers at most this many of its newest calls in the range."""

DETAIL_LATEST = 25
"""A tool's latest-calls table shows this many calls."""

TOP_CLIENTS = 10
"""Rows of the top clients panel."""
CLIENTS_READ = 10_000
"""Newest calls of the range the top clients panel sums (the raw log: rollups hold no
clients); a chosen client's page reads up to airmeter's ``MAX_CLIENT_READ`` of its own."""
_MAX_CLIENT_NAMES = 500
CLIENTS_EVERY_S = 10.0
"""The top clients are read again at most this often for the same range and filters (a
changed range or filter reads at once): ~0.1 s of CPU per read of 10 000 calls."""

_NO_DATA_HINT = (
    "run `air demo` to generate sample traffic, or add the meter to your server "
    "(define_server(..., meter=True, storage=URL)) and point the dashboard at the same store"
)


async def _check_exists(url: str) -> None:
    """Refuse, with a hint, a URL that names nothing yet or the wrong kind of thing."""
    try:
        found = await store_exists(url)
    except InvalidArgumentError as exc:  # a bad URL, or a file where a directory belongs …
        raise StoreUnavailableError(
            f"store {url}: {exc.message}", url=url, hint="check the --store URL"
        ) from exc
    except AirstoreError as exc:  # unreadable (permission) or unreachable
        raise StoreUnavailableError(
            f"store {url} cannot be read: {exc.message}",
            url=url,
            hint="run the dashboard as a user that can read the store, or check the server",
        ) from exc
    if not found:
        raise StoreUnavailableError(
            f"no store at {url}: nothing has been recorded there yet", url=url, hint=_NO_DATA_HINT
        )


async def open_store(url: str) -> Store:
    """Open the store at ``url`` for reading (read-only where the backend has such a mode).

    Args:
        url: a store URL such as ``file://.air/data`` or ``sqlite:///air.db``.

    Returns:
        The opened store; the caller closes it.

    Raises:
        StoreUnavailableError: the URL is invalid, names nothing, or cannot be opened and read.
    """
    await _check_exists(url)
    try:
        try:
            store = await create_storage(url, read_only=True)
        except ReadOnlyUnsupportedError:  # memory://: nothing to share, open it plainly
            store = await create_storage(url)
    except (AirstoreError, OSError) as exc:
        raise StoreUnavailableError(
            f"cannot open store {url}: {exc}", url=url, hint="check the --store URL"
        ) from exc
    try:
        await has_calls(store)
    except (AirstoreError, OSError) as exc:
        await store.close()
        raise StoreUnavailableError(
            f"cannot read store {url}: {exc}", url=url, hint="check the store's files"
        ) from exc
    return store


_HIST_EDGES: tuple[float, ...] = tuple(
    m * 10.0**e for e in range(-2, 7) for m in (1.0, 2.0, 5.0)
)  # 0.01 ms … 5e6 ms in a 1-2-5 series


def latency_histogram(latencies: list[float]) -> tuple[HistogramBin, ...]:
    """Bin latencies on a 1-2-5 scale (0.01 ms … ), covering only the span that holds data.

    The first bin starts at 0; every latency falls in exactly one bin.
    """
    if not latencies:
        return ()
    lo, hi = min(latencies), max(latencies)
    top = next((e for e in _HIST_EDGES if e > hi), hi * 2 + 1)
    edges = [0.0, *(e for e in _HIST_EDGES if lo < e <= hi), top]
    counts = [0] * (len(edges) - 1)
    for value in latencies:
        counts[bisect.bisect_right(edges, value) - 1] += 1
    return tuple(
        HistogramBin(lo_ms=edges[i], hi_ms=edges[i + 1], count=n) for i, n in enumerate(counts)
    )


class DashboardData:
    """Builds view models from a store. One instance per dashboard process.

    Args:
        store: an opened store (read-only is enough); see :func:`open_store`.
        url: the store's URL, for messages.
        clock: seconds since the epoch; injectable for tests.
        slo_config: the SLO objectives file (default ``.air/slo.yml``, as ``air meter slo``).
        objectives: SLO objectives in code, instead of a file.
        everywhere: also list every other data location's servers (registered in the
            per-user ``locations.json``; :mod:`dashboard.machine`); ``False``: this store only.
    """

    def __init__(
        self,
        store: Store,
        *,
        url: str = "",
        clock: Any = time.time,
        slo_config: str | None = None,
        objectives: Sequence[Objective] | None = None,
        everywhere: bool = False,
    ) -> None:
        self._store = store
        # one reader for the page's snapshots and the meter panels: each rollup document is
        # parsed once, and the cyclic GC stays off while the reads run (a dashboard's cold
        # first view builds millions of long-lived rows; see airmeter.gc_pause)
        self._reader = RollupReader(store, pause_gc=True)
        self.url = url
        self._clock = clock
        self._known_tools: set[str] = set()
        self._known_servers: dict[str, set[str]] = {}
        self._known_clients: set[str] = set()
        self._clients_read: tuple[object, float, ClientUsage] | None = None
        self.usage = UsageWatch(store)
        """Disk use against the retention caps, measured in the background."""
        self.meter = MeterWatch(store, slo_config=slo_config, objectives=objectives, clock=clock,
                                reader=self._reader)  # fmt: skip
        """SLOs, meter health and context cost, evaluated in the background."""
        self._here_rows: tuple[tuple[str, int, int], tuple[LocationServer, ...]] | None = None
        self.machine = MachineWatch(store, url=url, everywhere=everywhere)
        """Every data location's servers and the gateway's hops, read in the background."""

    @classmethod
    async def open(
        cls,
        url: str,
        *,
        clock: Any = time.time,
        slo_config: str | None = None,
        objectives: Sequence[Objective] | None = None,
        everywhere: bool = False,
    ) -> DashboardData:
        """Open the store at ``url`` read-only; see :func:`open_store` for the errors.

        ``slo_config`` names the SLO objectives file (default ``.air/slo.yml``);
        ``objectives`` gives them in code instead; ``everywhere``: see the class.
        """
        store = await open_store(url)
        return cls(store, url=url, clock=clock, slo_config=slo_config, objectives=objectives,
                   everywhere=everywhere)  # fmt: skip

    async def close(self) -> None:
        """Stop measuring and close the store. Idempotent."""
        await self.machine.close()
        await self.meter.close()
        await self.usage.close()
        await self._store.close()

    def now_ms(self) -> int:
        """The current time in epoch ms, from the injected clock."""
        return int(self._clock() * 1000)

    def resolve(
        self, range_key: str, *, start_ms: int | None = None, end_ms: int | None = None
    ) -> TimeRange:
        """Resolve a range key against the current time; see :func:`resolve_range`."""
        return resolve_range(range_key, now_ms=self.now_ms(), start_ms=start_ms, end_ms=end_ms)

    async def _recent(self, rng: TimeRange, filters: Filters, **only: Any) -> list[CallRecord]:
        """The newest recorded calls in ``rng`` matching ``filters`` (and ``only``)."""
        narrowed = {
            "tool": filters.tool,
            "layer": filters.layer,
            "server": filters.server,
            "instance": filters.instance,
            "client": filters.client,
            **only,
        }
        try:
            return await recent_calls(
                self._store, since=rng.since_ms, until=rng.until_ms, **narrowed
            )
        except (AirstoreError, AirmeterError, OSError) as exc:
            raise StoreUnavailableError(
                f"cannot read store {self.url}: {exc}", url=self.url, hint="check the store"
            ) from exc

    async def _has_calls(self) -> bool:
        try:
            return await has_calls(self._store)
        except (AirstoreError, OSError) as exc:
            raise StoreUnavailableError(
                f"cannot read store {self.url}: {exc}", url=self.url, hint="check the store"
            ) from exc

    async def fitting_range(self) -> str:
        """The smallest preset range that holds the calls of the last 24 hours (``"24h"``
        when there are none, or they are older): what a page opens on at first sight.

        Raises:
            StoreUnavailableError: the store can no longer be read.
        """
        now = self.now_ms()
        length = RANGES[FIT_LIMIT][1]
        minute = RANGES["15m"][2]
        rng = TimeRange(key=FIT_LIMIT, since_ms=now - length, until_ms=now + 1, bucket_ms=minute)
        snap = await self._snapshot(rng, Filters())
        oldest = next((p.start_ms for p in snap.series if p.calls), None)
        return fitting_range(oldest, now_ms=now)

    async def _snapshot(self, rng: TimeRange, filters: Filters) -> Snapshot:
        try:
            if filters.client is not None:  # rollups hold no clients: its raw calls
                snap, _partial = await client_snapshot(
                    self._store, filters.client, since=rng.since_ms, until=rng.until_ms,
                    tool=filters.tool, layer=filters.layer, server=filters.server,
                    instance=filters.instance, bucket_ms=rng.bucket_ms, now_ms=self.now_ms(),
                )  # fmt: skip
                return snap
            return await self._reader.snapshot(
                since=rng.since_ms,
                until=rng.until_ms,
                tool=filters.tool,
                layer=filters.layer,
                server=filters.server,
                instance=filters.instance,
                bucket_ms=rng.bucket_ms,
            )
        except (AirstoreError, AirmeterError, OSError) as exc:
            raise StoreUnavailableError(
                f"cannot read store {self.url}: {exc}", url=self.url, hint="check the store"
            ) from exc

    async def view(self, rng: TimeRange, filters: Filters | None = None) -> DashboardView:
        """Everything the main page shows for ``rng`` and ``filters``.

        The aggregates come from :meth:`airmeter.RollupReader.snapshot` (minute-granular
        rollups: a minute counts when it overlaps the range); recent errors come from the raw
        call log.

        Raises:
            StoreUnavailableError: the store can no longer be read.
        """
        filters = filters or Filters()
        self.meter.poll(rng, filters.server)
        self.machine.poll(rng)
        snap = await self._snapshot(rng, filters)
        self._known_tools.update(t.tool for t in snap.tools)
        for row in snap.servers:
            self._known_servers.setdefault(row.server, set()).add(row.instance_id)
        failed = await self._recent(rng, filters, limit=RECENT_ERRORS, ok=False)
        usage = await self._clients(rng, filters)
        store_empty = snap.total_calls == 0 and not await self._has_calls()
        known = self._known_tools | ({filters.tool} if filters.tool else set())
        return DashboardView(
            range=rng,
            filters=filters,
            snapshot=snap,
            recent_errors=tuple(_error_row(e) for e in failed),
            tool_names=tuple(sorted(known)),
            server_choices=server_choices(self._known_servers),
            store_empty=store_empty,
            errors_by_type=tuple(
                sorted(snap.errors_by_type.items(), key=lambda kv: (-kv[1], kv[0]))
            ),
            generated_at_ms=self.now_ms(),
            alerts=self.meter.alerts() + self.usage.alerts(),
            errors_by_class=tuple(
                (c, snap.errors_by_class[c]) for c in ERROR_CLASSES if snap.errors_by_class.get(c)
            ),
            slo=self.meter.slo,
            context=self.meter.context,
            machine=self.machine.panel(await self._here(rng, filters, snap)),
            gateway=self.machine.gateway,
            clients=usage.clients[:TOP_CLIENTS],
            client_names=tuple(sorted(self._known_clients)),
            clients_partial=usage.truncated,
        )

    async def _here(
        self, rng: TimeRange, filters: Filters, snap: Snapshot
    ) -> tuple[LocationServer, ...]:
        """This store's servers in ``rng`` for the machine panel (every server: the page's
        filters narrow the views, not the list of what runs where). A filtered view reuses
        the rows of the range's last unfiltered read (read once when there is none), so a
        filter does not cost a second aggregation each refresh."""
        filtered = bool(filters.tool or filters.layer or filters.server or filters.client)
        key = (rng.key, rng.since_ms // 60_000, rng.until_ms // 60_000)
        if filtered and self._here_rows is not None and self._here_rows[0] == key:
            return self._here_rows[1]
        if filtered:
            snap = await self._snapshot(rng, Filters())
        rows = tuple(
            LocationServer(server=r.server, instance_id=r.instance_id, calls=r.calls,
                           errors=r.errors, error_rate=r.error_rate, p95_ms=r.p95_ms,
                           data=self.url, here=True)
            for r in snap.servers
        )  # fmt: skip
        self._here_rows = (key, rows)
        return rows

    async def _clients(self, rng: TimeRange, filters: Filters) -> ClientUsage:
        """The range's calls per client (the other filters apply; a chosen client shows
        alone), and the client ids the filter offers."""
        key = (rng.key, rng.since_ms if rng.key == CUSTOM else None,
               rng.until_ms if rng.key == CUSTOM else None, filters)  # fmt: skip
        now = self._clock()
        kept = self._clients_read
        if kept is not None and kept[0] == key and now - kept[1] < CLIENTS_EVERY_S:
            return kept[2]
        usage = await self._read_clients(rng, filters)
        self._clients_read = (key, now, usage)
        return usage

    async def _read_clients(self, rng: TimeRange, filters: Filters) -> ClientUsage:
        try:
            usage = await client_usage(
                self._store, since=rng.since_ms, until=rng.until_ms, tool=filters.tool,
                layer=filters.layer, server=filters.server, instance=filters.instance,
                now_ms=self.now_ms(), limit=CLIENTS_READ,
            )  # fmt: skip
        except (AirstoreError, AirmeterError, OSError) as exc:
            raise StoreUnavailableError(
                f"cannot read store {self.url}: {exc}", url=self.url, hint="check the store"
            ) from exc
        for row in usage.clients:  # real client ids only: "(none)" is no client_id to match
            if not row.client.startswith("(") and len(self._known_clients) < _MAX_CLIENT_NAMES:
                self._known_clients.add(row.client)
        if filters.client is not None:
            self._known_clients.add(filters.client)
            chosen = tuple(row for row in usage.clients if row.client == filters.client)
            usage = ClientUsage(clients=chosen, calls=sum(r.calls for r in chosen),
                                subjects=usage.subjects, truncated=usage.truncated)  # fmt: skip
        return usage

    async def tool_detail(
        self, tool: str, rng: TimeRange, filters: Filters | None = None
    ) -> ToolDetail:
        """One tool's latency histogram (its newest calls in ``rng``) and latest calls.

        Raises:
            StoreUnavailableError: the store can no longer be read.
        """
        entries = await self._recent(rng, filters or Filters(), limit=DETAIL_SAMPLE, tool=tool)
        latencies = [e.latency_ms for e in entries]
        return ToolDetail(
            tool=tool,
            calls=len(entries),
            histogram=latency_histogram(latencies),
            latest=tuple(_call_row(e) for e in entries[:DETAIL_LATEST]),
        )


def _error_row(rec: CallRecord) -> ErrorRow:
    return ErrorRow(
        ts_ms=rec.ts_ms,
        tool=rec.tool,
        layer=rec.layer,
        server=rec.server,
        error_type=rec.error_type or "error",
        message=rec.error_message or "",
        request_id=rec.request_id or "",
        error_class=rec.error_class or error_class_of(rec.error_type),
    )


def _call_row(rec: CallRecord) -> CallRow:
    return CallRow(
        ts_ms=rec.ts_ms,
        tool=rec.tool,
        layer=rec.layer,
        latency_ms=rec.latency_ms,
        ok=rec.ok,
        error_type=rec.error_type or "",
        request_id=rec.request_id or "",
    )
