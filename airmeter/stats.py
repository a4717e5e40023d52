"""``Acc``: the running sums behind one row of a snapshot (a tool, a layer, a bucket …)."""

from __future__ import annotations

from airmeter.histogram import merge_into, percentiles
from airmeter.rollups import RollupRow, Sums

__all__ = ["Acc"]

_QS = (50.0, 95.0, 99.0)


class Acc(Sums):
    """Sums rollup rows: counts, errors by type, latency, histogram, cost and tokens."""

    __slots__ = ()

    def add_row(self, row: RollupRow, *, histogram: bool = True) -> None:
        """Add one rollup row (``histogram=False`` skips the latency histogram)."""
        self.calls += row.calls
        if row.errors:
            self.errors += row.errors
            ebt = self.errors_by_type
            for etype, count in row.errors_by_type.items():
                ebt[etype] = ebt.get(etype, 0) + count
        self.latency_sum += row.latency_sum
        if row.latency_max > self.latency_max:
            self.latency_max = row.latency_max
        self.cost += row.cost
        self.tokens_in += row.tokens_in
        self.tokens_out += row.tokens_out
        if histogram:
            merge_into(self.hist, row.hist)

    def mean(self) -> float | None:
        """Mean latency in ms, ``None`` without calls."""
        return self.latency_sum / self.calls if self.calls else None

    def percentiles(self) -> tuple[float | None, float | None, float | None]:
        """p50, p95 and p99 latency in ms (``None`` without calls)."""
        p50, p95, p99 = percentiles(self.hist, _QS)
        return p50, p95, p99
