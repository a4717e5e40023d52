"""``await snapshot(store, since=..., ...)``: totals, percentiles, layers, tools, servers and a
time series from the rollups of any store, including a read-only one opened by another process.

Windows are minute-granular: a minute counts when it overlaps ``[since, until)``. Latency
percentiles come from log-bucketed histograms (within 1.5 %); counts, errors and costs are
exact. The parts: :mod:`airmeter.buckets` (bounds and bucket arithmetic),
:mod:`airmeter.aggregate` (the pure aggregation) and :class:`~airmeter.RollupReader` (reads a
store, owns the cache). One call reads cold; to summarize a store again and again, keep a
:class:`~airmeter.RollupReader` and call its :meth:`~airmeter.RollupReader.snapshot`.
"""

from __future__ import annotations

from airmeter.buckets import DEFAULT_MAX_BUCKETS, Bound
from airmeter.layers import Layer
from airmeter.rollup_reader import RollupReader
from airmeter.snapshot_types import Snapshot
from airstore.types import Store

__all__ = ["snapshot"]


async def snapshot(
    store: Store,
    *,
    since: Bound = None,
    until: Bound = None,
    tool: str | None = None,
    layer: Layer | int | str | None = None,
    server: str | None = None,
    instance: str | None = None,
    bucket_ms: int | None = None,
    max_buckets: int = DEFAULT_MAX_BUCKETS,
) -> Snapshot:
    """A :class:`Snapshot` of the calls recorded in ``store`` (read-only stores work).

    Args:
        store: any opened store holding rollups written by a :class:`~airmeter.StoreSink`.
        since: inclusive start (``datetime``, epoch ms, or ``timedelta`` ago); ``None``: all.
        until: exclusive end; ``None``: now when ``since`` is given, else no end.
        tool: only this tool.
        layer: only this layer (``2``, ``"L2"``, ``Layer.L2``).
        server: only this server name.
        instance: only this server instance id.
        bucket_ms: width of a time-series bucket; by default chosen for ``max_buckets``.
        max_buckets: the most buckets the automatic width produces.

    Returns:
        The frozen :class:`Snapshot`.

    Raises:
        MeterConfigError: a bad bound, layer or bucket size.
        airstore.AirstoreError: the store cannot be read.
    """
    return await RollupReader(store).snapshot(
        since=since, until=until, tool=tool, layer=layer, server=server, instance=instance,
        bucket_ms=bucket_ms, max_buckets=max_buckets,
    )  # fmt: skip
