"""``Acc``: the running sums behind one row of a snapshot (a tool, a layer, a bucket …)."""

from __future__ import annotations

from airmeter.histogram import percentiles
from airmeter.rollups import Sums

__all__ = ["Acc"]

_QS = (50.0, 95.0, 99.0)


class Acc(Sums):
    """Sums rollup rows: counts, errors by type, latency, histogram, cost and tokens."""

    __slots__ = ()

    def mean(self) -> float | None:
        """Mean latency in ms, ``None`` without calls."""
        return self.latency_sum / self.calls if self.calls else None

    def percentiles(self) -> tuple[float | None, float | None, float | None]:
        """p50, p95 and p99 latency in ms (``None`` without calls)."""
        p50, p95, p99 = percentiles(self.hist, _QS)
        return p50, p95, p99
