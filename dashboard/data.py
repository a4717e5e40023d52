"""Data access for the dashboard: open a store read-only and build the page's view model.

Plain typed async code with no Dash import, so tests call it directly. The aggregate numbers
(headline, series, layers, per-tool rows) come from airmeter's snapshot queries; raw log queries
are used only for the recent errors and a tool's latest calls.
"""

from __future__ import annotations

import bisect
import logging
import os
import time
from typing import Any

from airmeter import (
    CALLS_NAMESPACE,
    AirmeterError,
    Layer,
    SeriesPoint,
    Snapshot,
    ToolStats,
    parse_layer,
    snapshot,
)
from airstore import (
    AirstoreError,
    ReadOnlyUnsupportedError,
    Store,
    create_storage,
    parse_store_url,
)
from dashboard.errors import StoreUnavailableError
from dashboard.ranges import resolve_range
from dashboard.servers import parse_server_choice, server_choices
from dashboard.types import (
    CallRow,
    DashboardView,
    ErrorRow,
    Filters,
    Headline,
    HistogramBin,
    LayerSlice,
    TimeBucket,
    TimeRange,
    ToolDetail,
    ToolRow,
)

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

_NO_DATA_HINT = (
    "run `air demo` to generate sample traffic, or add the meter to your server "
    "(define_server(..., meter=True, storage=URL)) and point the dashboard at the same store"
)


def _check_location(url: str, kind: str, location: str | None) -> None:
    if kind in ("memory", "redis") or location is None:
        return
    path = os.path.abspath(location)
    if not os.path.exists(path):
        raise StoreUnavailableError(
            f"no store at {location!r} ({url}): nothing has been recorded there yet",
            url=url,
            hint=_NO_DATA_HINT,
        )
    want_dir = kind == "file"
    if want_dir != os.path.isdir(path):
        expected = "a directory" if want_dir else "a database file"
        raise StoreUnavailableError(
            f"store {url} is not {expected}: {path}", url=url, hint="check the --store URL"
        )
    mode = os.R_OK | (os.X_OK if want_dir else 0)
    if not os.access(path, mode):
        raise StoreUnavailableError(
            f"store {url} cannot be read: permission denied on {path}",
            url=url,
            hint="run the dashboard as a user that can read the store",
        )


async def open_store(url: str) -> Store:
    """Open the store at ``url`` for reading (read-only where the backend supports it).

    Args:
        url: a store URL such as ``file://.air/data`` or ``sqlite:///air.db``.

    Returns:
        The opened store; the caller closes it.

    Raises:
        StoreUnavailableError: the URL is invalid, names nothing, or cannot be opened and read.
    """
    try:
        kind, location = parse_store_url(url)
    except AirstoreError as exc:
        raise StoreUnavailableError(
            exc.message, url=str(url), hint="check the --store URL"
        ) from exc
    _check_location(url, kind, location)
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
        await store.query(CALLS_NAMESPACE, limit=1)
    except (AirstoreError, OSError) as exc:
        await store.close()
        raise StoreUnavailableError(
            f"cannot read store {url}: {exc}", url=url, hint="check the store's files"
        ) from exc
    return store


def _store_filter(filters: Filters, *, skip_tool: bool = False) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if filters.tool is not None and not skip_tool:
        out["tool"] = filters.tool
    if filters.layer is not None:
        out["layer"] = filters.layer.code
    if filters.server is not None:
        out["server"] = filters.server
    if filters.instance is not None:
        out["instance_id"] = filters.instance
    return out


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
    """

    def __init__(self, store: Store, *, url: str = "", clock: Any = time.time) -> None:
        self._store = store
        self.url = url
        self._clock = clock
        self._known_tools: set[str] = set()
        self._known_servers: dict[str, set[str]] = {}

    @classmethod
    async def open(cls, url: str, *, clock: Any = time.time) -> DashboardData:
        """Open the store at ``url`` read-only; see :func:`open_store` for the errors."""
        return cls(await open_store(url), url=url, clock=clock)

    async def close(self) -> None:
        """Close the store. Idempotent."""
        await self._store.close()

    def now_ms(self) -> int:
        """The current time in epoch ms, from the injected clock."""
        return int(self._clock() * 1000)

    def resolve(
        self, range_key: str, *, start_ms: int | None = None, end_ms: int | None = None
    ) -> TimeRange:
        """Resolve a range key against the current time; see :func:`resolve_range`."""
        return resolve_range(range_key, now_ms=self.now_ms(), start_ms=start_ms, end_ms=end_ms)

    async def _query(self, **kwargs: Any) -> list[dict[str, Any]]:
        try:
            return await self._store.query(CALLS_NAMESPACE, **kwargs)
        except (AirstoreError, OSError) as exc:
            raise StoreUnavailableError(
                f"cannot read store {self.url}: {exc}", url=self.url, hint="check the store"
            ) from exc

    async def _snapshot(self, rng: TimeRange, filters: Filters) -> Snapshot:
        try:
            return await snapshot(
                self._store,
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

        The aggregates come from :func:`airmeter.snapshot` (minute-granular rollups: a minute
        counts when it overlaps the range); recent errors come from the raw call log.

        Raises:
            StoreUnavailableError: the store can no longer be read.
        """
        filters = filters or Filters()
        snap = await self._snapshot(rng, filters)
        self._known_tools.update(t.tool for t in snap.tools)
        for row in snap.servers:
            self._known_servers.setdefault(row.server, set()).add(row.instance_id)
        flt = _store_filter(filters)
        failed = await self._query(
            limit=RECENT_ERRORS,
            since=rng.since_ms,
            until=rng.until_ms,
            filter={**flt, "ok": False},
        )
        store_empty = snap.total_calls == 0 and not await self._query(limit=1)
        known = self._known_tools | ({filters.tool} if filters.tool else set())
        return DashboardView(
            range=rng,
            filters=filters,
            headline=_headline(snap),
            series=tuple(_bucket(p) for p in snap.series),
            layers=tuple(
                LayerSlice(
                    layer=parse_layer(code),
                    calls=st.calls,
                    cost=st.cost,
                    weighted_cost=int(st.weighted_cost),
                )
                for code, st in sorted(snap.layers.items())
            ),
            tools=tuple(_tool_row(t) for t in snap.tools),
            recent_errors=tuple(_error_row(e) for e in failed),
            tool_names=tuple(sorted(known)),
            server_choices=server_choices(self._known_servers),
            store_empty=store_empty,
            errors_by_type=tuple(
                sorted(snap.errors_by_type.items(), key=lambda kv: (-kv[1], kv[0]))
            ),
            generated_at_ms=self.now_ms(),
        )

    async def tool_detail(
        self, tool: str, rng: TimeRange, filters: Filters | None = None
    ) -> ToolDetail:
        """One tool's latency histogram (its newest calls in ``rng``) and latest calls.

        Raises:
            StoreUnavailableError: the store can no longer be read.
        """
        flt = {**_store_filter(filters or Filters(), skip_tool=True), "tool": tool}
        entries = await self._query(
            limit=DETAIL_SAMPLE, since=rng.since_ms, until=rng.until_ms, filter=flt
        )
        latencies = [float(e.get("latency_ms", 0.0)) for e in entries]
        return ToolDetail(
            tool=tool,
            calls=len(entries),
            histogram=latency_histogram(latencies),
            latest=tuple(_call_row(e) for e in entries[:DETAIL_LATEST]),
        )


def _headline(snap: Snapshot) -> Headline:
    return Headline(
        calls=snap.total_calls,
        calls_per_min=snap.calls_per_min,
        errors=snap.error_count,
        error_rate=snap.error_rate if snap.total_calls else 0.0,
        p50_ms=snap.p50_ms,
        p95_ms=snap.p95_ms,
        p99_ms=snap.p99_ms,
        cost=snap.total_cost,
    )


def _bucket(point: SeriesPoint) -> TimeBucket:
    return TimeBucket(
        start_ms=point.start_ms,
        calls_by_layer=tuple(point.layers.get(layer.code, 0) for layer in Layer),
        errors=point.errors,
        p50_ms=point.p50_ms,
        p95_ms=point.p95_ms,
        p99_ms=point.p99_ms,
    )


def _tool_row(t: ToolStats) -> ToolRow:
    return ToolRow(
        tool=t.tool,
        layer=parse_layer(t.layer),
        calls=t.calls,
        errors=t.errors,
        error_rate=t.error_rate,
        p50_ms=t.p50_ms,
        p95_ms=t.p95_ms,
        p99_ms=t.p99_ms,
        cost=t.cost,
    )


def _layer_of(entry: dict[str, Any]) -> Layer:
    try:
        return parse_layer(entry.get("layer", 4))
    except ValueError:
        return Layer.L4


def _error_row(entry: dict[str, Any]) -> ErrorRow:
    return ErrorRow(
        ts_ms=int(entry["_ts"]),
        tool=str(entry.get("tool", "")),
        layer=_layer_of(entry),
        server=str(entry.get("server", "")),
        error_type=str(entry.get("error_type") or "error"),
        message=str(entry.get("error_message") or ""),
        request_id=str(entry.get("request_id") or ""),
    )


def _call_row(entry: dict[str, Any]) -> CallRow:
    return CallRow(
        ts_ms=int(entry["_ts"]),
        tool=str(entry.get("tool", "")),
        layer=_layer_of(entry),
        latency_ms=float(entry.get("latency_ms", 0.0)),
        ok=bool(entry.get("ok", True)),
        error_type=str(entry.get("error_type") or ""),
        request_id=str(entry.get("request_id") or ""),
    )
