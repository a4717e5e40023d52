"""SLO evaluation from the rollups: error budget left and multi-window burn rates.

For each target and each (server, tool) it matches, over the calls that count (valid calls:
all but ``refused``, ``cancelled``, ``budget`` and ``protocol`` failures, which are not the
tool's doing):

- availability: a bad call is one of the tool's own failures (``tool_error``, ``exception``,
  ``timeout``); latency: a bad call took longer than the threshold (read from the latency
  histograms, within 3 %);
- ``budget_remaining`` = 1 - bad / (allowed share x valid calls) over the period (negative once
  overspent; 1.0 without calls);
- ``burn_rate_W`` = (bad share over the last W) / allowed share, for W = 5 min, 30 min, 1 h, 6 h;
- ``state``: ``breach`` when the 1 h and 5 min burn rates are both at or above the fast
  threshold (14.4 for a 30-day period: 2 % of the budget in an hour); ``warning`` when the
  6 h and 30 min rates are both at or above the slow threshold (6 for 30 days: 5 % in six
  hours); else ``ok`` — the SRE workbook's multi-window alerts, with the thresholds scaled to
  the period. ``budget_remaining`` is reported, not alerted on.

Evaluation costs hours x tools, not calls: each stored hour is summed once per (server, tool)
and kept while its documents are the same objects; only the last 6 hours are read per minute.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final, Literal

from airmeter.histogram import bucket_of, bucket_value
from airmeter.outcome import RATE_CLASSES, error_class_of
from airmeter.rollups import HOUR_MS, MINUTE_MS, RollupRow, hour_namespace
from airmeter.slo_config import Objective, SloTarget
from airmeter.snapshot import _cache_of, stored_hours
from airstore.types import Store

__all__ = ["SloEvaluator", "SloState", "SloStatus", "evaluate_slos"]

SloState = Literal["ok", "warning", "breach"]

_WINDOWS_MIN: Final = (5, 30, 60, 360)
_EXCLUDED: Final = frozenset({"refused", "cancelled", "budget", "protocol"})
_FAST_SHARE, _FAST_HOURS = 0.02, 1.0
_SLOW_SHARE, _SLOW_HOURS = 0.05, 6.0

_Key = tuple[str, str]  # server, tool


@dataclass(frozen=True, slots=True, kw_only=True)
class SloStatus:
    """One target for one server's tool, right now."""

    tool: str
    server: str
    kind: Literal["availability", "latency"]
    target: float
    threshold_ms: float | None
    period: str
    budget_remaining: float
    burn_rate_5m: float
    burn_rate_30m: float
    burn_rate_1h: float
    burn_rate_6h: float
    state: SloState
    valid_calls: int
    bad_calls: int

    @property
    def key(self) -> str:
        """Names this status across evaluations (alerts are keyed by it)."""
        threshold = "" if self.threshold_ms is None else f"<={self.threshold_ms:g}ms"
        return f"{self.server}/{self.tool}/{self.kind}{threshold}@{self.target:g}/{self.period}"

    def to_dict(self) -> dict[str, Any]:
        """The JSON form of ``air meter slo --format json``."""
        out: dict[str, Any] = {
            "tool": self.tool, "server": self.server, "kind": self.kind, "target": self.target,
            "period": self.period, "budget_remaining": round(self.budget_remaining, 6),
            "burn_rate_5m": round(self.burn_rate_5m, 4),
            "burn_rate_30m": round(self.burn_rate_30m, 4),
            "burn_rate_1h": round(self.burn_rate_1h, 4),
            "burn_rate_6h": round(self.burn_rate_6h, 4), "state": self.state,
            "valid_calls": self.valid_calls, "bad_calls": self.bad_calls,
        }  # fmt: skip
        if self.threshold_ms is not None:
            out["threshold_ms"] = self.threshold_ms
        return out


class _Agg:
    """The calls of one (server, tool) in one minute or one hour."""

    __slots__ = ("bad", "hist", "slow", "valid")

    def __init__(self) -> None:
        self.valid = 0
        self.bad = 0
        self.hist: dict[int, int] = {}
        self.slow: dict[float, int] = {}

    def add(self, row: RollupRow) -> None:
        excluded = 0
        for etype, n in row.errors_by_type.items():
            cls = error_class_of(etype)
            if cls in RATE_CLASSES:
                self.bad += n
            elif cls in _EXCLUDED:
                excluded += n
        self.valid += row.calls - excluded
        hist = self.hist
        for index, n in row.hist.items():
            hist[index] = hist.get(index, 0) + n

    def merge(self, other: _Agg) -> None:
        self.valid += other.valid
        self.bad += other.bad
        hist = self.hist
        for index, n in other.hist.items():
            hist[index] = hist.get(index, 0) + n

    def slower_than(self, threshold_ms: float) -> int:
        """Calls above the threshold (a bucket counts by its midpoint); cached per threshold."""
        found = self.slow.get(threshold_ms)
        if found is None:
            edge = bucket_of(threshold_ms)
            found = sum(n for i, n in self.hist.items()
                        if i > edge or (i == edge and bucket_value(i) > threshold_ms))  # fmt: skip
            self.slow[threshold_ms] = found
        return found


class _Hour:
    """One stored hour: per minute and in total, by (server, tool); valid while the parsed
    row lists of its documents are the same objects (it holds them, so none is reused)."""

    __slots__ = ("minutes", "signature", "total")

    def __init__(self, signature: list[Sequence[RollupRow]]) -> None:
        self.signature = signature
        self.minutes: dict[int, dict[_Key, _Agg]] = {}
        self.total: dict[_Key, _Agg] = {}


class SloEvaluator:
    """Evaluates targets against one store; keep it to evaluate again cheaply (warm).

    Args:
        store: an opened store holding rollups (read-only is enough).
        objectives: the objectives (or their targets).
        clock: seconds since the epoch (tests, back-filled histories).
    """

    def __init__(
        self,
        store: Store,
        objectives: Iterable[Objective | SloTarget],
        *,
        clock: Any = time.time,
    ) -> None:
        self._store = store
        self.targets: list[SloTarget] = []
        for obj in objectives:
            self.targets += obj.targets() if isinstance(obj, Objective) else [obj]
        self._clock = clock
        self._hours: dict[int, _Hour] = {}

    async def evaluate(self) -> list[SloStatus]:
        """Every target's status for every (server, tool) it matches that has calls.

        Raises:
            airstore.AirstoreError: the store cannot be read.
        """
        now_ms = int(self._clock() * 1000)
        longest = max((t.period_s for t in self.targets), default=0.0)
        first_hour = (now_ms - int(longest * 1000)) // HOUR_MS
        hours = [h for h in await stored_hours(self._store) if h >= first_hour]
        for gone in [h for h in self._hours if h not in set(hours)]:
            del self._hours[gone]
        for hour in hours:
            await self._load_hour(hour)
        out = []
        for target in self.targets:
            keys = sorted({k for h in hours for k in self._hours[h].total
                           if target.matches(*k)})  # fmt: skip
            for key in keys:
                out.append(self._status(target, key, hours, now_ms))
        return out

    async def _load_hour(self, hour: int) -> None:
        pairs = await self._store.entries(hour_namespace(hour))
        docs = _cache_of(self._store)  # parses only the documents that changed
        parsed = [(key, docs.rows(hour, key, doc)) for key, doc in pairs]
        signature: list[Sequence[RollupRow]] = [rows for _, rows in parsed]
        cached = self._hours.get(hour)
        if (
            cached is not None
            and len(cached.signature) == len(signature)
            and all(a is b for a, b in zip(cached.signature, signature, strict=True))
        ):
            return
        entry = _Hour(signature)
        for key, rows in parsed:
            minute = int(key[:13]) if key[:13].isascii() and key[:13].isdigit() else -1
            if minute < 0:
                continue
            per_key = entry.minutes.setdefault(minute, {})
            for row in rows:
                k = (row.server, row.tool)
                agg = per_key.get(k)
                if agg is None:
                    agg = per_key[k] = _Agg()
                agg.add(row)
        for per_key in entry.minutes.values():
            for k, agg in per_key.items():
                total = entry.total.get(k)
                if total is None:
                    total = entry.total[k] = _Agg()
                total.merge(agg)
        self._hours[hour] = entry

    def _status(self, target: SloTarget, key: _Key, hours: Sequence[int], now_ms: int) -> SloStatus:
        allowed = 1.0 - target.target
        threshold = target.threshold_ms
        period_start = now_ms - int(target.period_s * 1000)

        def bad_of(agg: _Agg) -> int:
            return agg.bad if threshold is None else agg.slower_than(threshold)

        valid = bad = 0
        for hour in hours:
            if (hour + 1) * HOUR_MS <= period_start:
                continue
            agg = self._hours[hour].total.get(key)
            if agg is not None:
                valid += agg.valid
                bad += bad_of(agg)
        burns = []
        for minutes in _WINDOWS_MIN:
            start = now_ms - minutes * MINUTE_MS
            first = start - start % MINUTE_MS
            w_valid = w_bad = 0
            for hour in hours:
                if (hour + 1) * HOUR_MS <= first:
                    continue
                for minute, per_key in self._hours[hour].minutes.items():
                    if minute >= first and minute <= now_ms:
                        agg = per_key.get(key)
                        if agg is not None:
                            w_valid += agg.valid
                            w_bad += bad_of(agg)
            burns.append((w_bad / w_valid) / allowed if w_valid else 0.0)
        budget = 1.0 - bad / (allowed * valid) if valid else 1.0
        period_h = target.period_s / 3600.0
        fast = _FAST_SHARE * period_h / _FAST_HOURS
        slow = _SLOW_SHARE * period_h / _SLOW_HOURS
        b5, b30, b60, b360 = burns
        state: SloState = "ok"
        if b60 >= fast and b5 >= fast:
            state = "breach"
        elif b360 >= slow and b30 >= slow:
            state = "warning"
        return SloStatus(
            tool=key[1], server=key[0], kind=target.kind, target=target.target,
            threshold_ms=threshold, period=target.period, budget_remaining=budget,
            burn_rate_5m=b5, burn_rate_30m=b30, burn_rate_1h=b60, burn_rate_6h=b360,
            state=state, valid_calls=valid, bad_calls=bad,
        )  # fmt: skip


async def evaluate_slos(
    store: Store, objectives: Iterable[Objective | SloTarget], *, clock: Any = time.time
) -> list[SloStatus]:
    """One evaluation (see :class:`SloEvaluator` to evaluate repeatedly, warm).

    Raises:
        airstore.AirstoreError: the store cannot be read.
    """
    return await SloEvaluator(store, objectives, clock=clock).evaluate()


def states_of(statuses: Iterable[SloStatus]) -> Mapping[str, SloState]:
    """``{status.key: state}``."""
    return {s.key: s.state for s in statuses}
