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
  hours) — the SRE workbook's multi-window alerts, with the thresholds scaled to the period;
  ``exhausted`` when the budget is overspent (``budget_remaining`` < 0: the objective is missed
  over its period) and the burn is not at the breach rate; else ``ok``. Worst first:
  ``breach``, ``exhausted``, ``warning``, ``ok``.

Evaluation costs hours x tools, not calls: each stored hour is summed once per (server, tool)
and kept while its documents are the same; a warm evaluation re-reads an hour's documents only
when a writer's revision token for it changed (and every hour every 1-2 minutes), adds up only
the newest two hours afresh and reads each burn-rate window from per-hour running sums.
"""

from __future__ import annotations

import time
from bisect import bisect_left, bisect_right
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final, Literal

from airmeter.errors import MeterConfigError
from airmeter.histogram import bucket_of, bucket_value
from airmeter.outcome import RATE_CLASSES, error_class_of
from airmeter.rollup_reader import Revision, RollupReader, unchanged
from airmeter.rollups import HOUR_MS, MINUTE_MS, RollupRow, hour_namespace
from airmeter.slo_clients import count_client_targets
from airmeter.slo_config import Objective, SloTarget, parse_period
from airstore.types import Store

__all__ = ["STATES", "SloEvaluator", "SloState", "SloStatus", "evaluate_slos"]

SloState = Literal["ok", "warning", "exhausted", "breach"]
STATES: Final[tuple[SloState, ...]] = ("ok", "warning", "exhausted", "breach")
"""Every state, best first."""

_WINDOWS_MIN: Final = (5, 30, 60, 360)
_HOUR_WINDOW_MIN: Final = 60
_EXCLUDED: Final = frozenset({"refused", "cancelled", "budget", "protocol"})
_OPEN_HOURS: Final = 2  # the newest hours of a period are summed at every evaluation
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
    client: str | None = None
    raw_log_covers_s: float | None = None

    @property
    def key(self) -> str:
        """Names this status across evaluations (alerts are keyed by it)."""
        threshold = "" if self.threshold_ms is None else f"<={self.threshold_ms:g}ms"
        client = "" if self.client is None else f"[client {self.client}]"
        return (f"{self.server}/{self.tool}{client}/{self.kind}{threshold}@{self.target:g}/"
                f"{self.period}")  # fmt: skip

    @property
    def partial(self) -> bool:
        """A client objective whose raw call log covers less than its period (it was
        evaluated over what the log holds)."""
        covers = self.raw_log_covers_s
        return covers is not None and covers < parse_period(self.period)

    @property
    def coverage_note(self) -> str | None:
        """``"evaluated over the raw log: covers 2h of the 30d window"`` when :attr:`partial`."""
        if not self.partial or self.raw_log_covers_s is None:
            return None
        return (f"evaluated over the raw log: covers {_duration(self.raw_log_covers_s)} of the "
                f"{self.period} window")  # fmt: skip

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
        if self.client is not None:
            out["client"] = self.client
            out["evaluated_over"] = "raw log"
            out["raw_log_covers_s"] = round(self.raw_log_covers_s or 0.0, 3)
            out["partial"] = self.partial
            if self.coverage_note is not None:
                out["note"] = self.coverage_note
        return out


def _duration(seconds: float) -> str:
    for unit, size in (("d", 86_400), ("h", 3600), ("m", 60)):
        if seconds >= size:
            return f"{seconds / size:.3g}{unit}"
    return f"{seconds:.0f}s"


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
    """One stored hour: per minute and in total, by (server, tool); not read again while its
    writers' revision tokens are the same (for up to ``RECHECK_S``), and when read, valid
    while the store returns the same documents (``pairs``, compared by identity first, then by
    equality) or their parsed row lists are the same objects (it holds both, so none is
    reused)."""

    __slots__ = ("minutes", "order", "pairs", "prefix", "read_at", "revision", "signature",
                 "total")  # fmt: skip

    def __init__(self, signature: list[Sequence[RollupRow]], pairs: list[Any]) -> None:
        self.signature = signature
        self.pairs = pairs
        self.minutes: dict[int, dict[_Key, _Agg]] = {}
        self.total: dict[_Key, _Agg] = {}
        self.order: list[int] = []
        self.prefix: dict[tuple[_Key, float | None], tuple[list[int], list[int]]] = {}
        self.revision: Revision = None  # the hour's revision when its documents were read
        self.read_at = 0.0  # time.monotonic() when they were read

    def window(self, key: _Key, threshold: float | None, first: int, last: int) -> tuple[int, int]:
        """``(valid, bad)`` calls of ``key`` in the minutes ``first … last`` of this hour
        (bad: failures, or calls slower than ``threshold``), from running sums kept per key
        and threshold."""
        sums = self.prefix.get((key, threshold))
        if sums is None:
            if not self.order:
                self.order = sorted(self.minutes)
            valid, bad = [0], [0]
            v = b = 0
            for minute in self.order:
                agg = self.minutes[minute].get(key)
                if agg is not None:
                    v += agg.valid
                    b += agg.bad if threshold is None else agg.slower_than(threshold)
                valid.append(v)
                bad.append(b)
            sums = self.prefix[(key, threshold)] = (valid, bad)
        lo = bisect_left(self.order, first)
        hi = bisect_right(self.order, last)
        return sums[0][hi] - sums[0][lo], sums[1][hi] - sums[1][lo]


class SloEvaluator:
    """Evaluates targets against one store; keep it to evaluate again cheaply (warm).

    A warm evaluation reads the rollup index once and re-reads the documents of an hour only
    when a writer marked it revised (the current and previous hour: always; any hour: after
    ``RECHECK_S``); it rebuilds only the hours whose documents changed, keeps each
    (tool, target)'s sums over the closed hours of its period while those hours are unchanged,
    and reads each burn-rate window from running sums per hour and tool.

    Args:
        store: an opened store holding rollups (read-only is enough).
        objectives: the objectives (or their targets).
        clock: seconds since the epoch (tests, back-filled histories).
        reader: a :class:`~airmeter.RollupReader` of ``store`` whose parsed documents to share
            (the dashboard's snapshots and its SLOs parse each document once); by default
            the evaluator's own.
    """

    def __init__(
        self,
        store: Store,
        objectives: Iterable[Objective | SloTarget],
        *,
        clock: Any = time.time,
        reader: RollupReader | None = None,
    ) -> None:
        self._store = store
        if reader is not None and reader.store is not store:
            raise MeterConfigError("the reader given reads another store")
        self._reader = reader if reader is not None else RollupReader(store)
        self.targets: list[SloTarget] = []
        for obj in objectives:
            self.targets += obj.targets() if isinstance(obj, Objective) else [obj]
        self._client_targets = [t for t in self.targets if t.client is not None]
        self._clock = clock
        self._hours: dict[int, _Hour] = {}
        # closed-hour sums per (tool, threshold, period): objectives of other periods sum
        # other hours, so sharing one entry would make each replace the other's every time
        self._sums: dict[tuple[_Key, float | None, float], tuple[list[_Hour], int, int]] = {}
        self._evaluated: list[tuple[SloTarget, _Key, str]] = []

    async def evaluate(self) -> list[SloStatus]:
        """Every target's status for every (server, tool) it matches that has calls.

        Raises:
            airstore.AirstoreError: the store cannot be read.
        """
        now_ms = int(self._clock() * 1000)
        longest = max((t.period_s for t in self.targets), default=0.0)
        # the burn windows reach 6 h back whatever the periods are (a 2 h objective's
        # burn_rate_6h must not depend on whether a 30 d objective sits beside it)
        reach_ms = max(int(longest * 1000), max(_WINDOWS_MIN) * MINUTE_MS)
        first_hour = (now_ms - reach_ms) // HOUR_MS
        revisions = await self._reader.revisions(from_hour=first_hour)
        hours = [h for h in revisions if h >= first_hour]
        kept = set(hours)
        for gone in [h for h in self._hours if h not in kept]:
            del self._hours[gone]
        open_from = now_ms // HOUR_MS - 1  # the hours being written: always read
        for hour in hours:
            await self._load_hour(hour, None if hour >= open_from else revisions[hour])
        loaded = [(hour, self._hours[hour]) for hour in hours]
        every_key: set[_Key] = set()
        for _, entry in loaded:
            every_key.update(entry.total)
        window = _Window(loaded, now_ms)
        sums, self._sums = self._sums, {}
        out = []
        targets = []
        for target in self.targets:
            if target.client is not None:
                continue  # from the raw log, below
            period_start = now_ms - int(target.period_s * 1000)
            in_period = [entry for hour, entry in loaded if (hour + 1) * HOUR_MS > period_start]
            closed, recent = in_period[:-_OPEN_HOURS], in_period[-_OPEN_HOURS:]
            threshold = target.threshold_ms
            for key in sorted(k for k in every_key if target.matches(*k)):
                # The closed hours' sums are kept while those hours are the same objects.
                slot = (key, threshold, target.period_s)
                cached = self._sums.get(slot) or sums.get(slot)
                if cached is None or cached[0] != closed:
                    cached = (closed, *_period_sums(closed, key, threshold))
                self._sums[slot] = cached
                valid, bad = _period_sums(recent, key, threshold)
                targets.append(target)
                out.append(_status(target, key, valid + cached[1], bad + cached[2],
                                   window.sums(key, threshold)))  # fmt: skip
        self._evaluated = [
            (t, (s.server, s.tool), s.key) for t, s in zip(targets, out, strict=True)
        ]
        counted = await count_client_targets(
            self._store, self._client_targets, now_ms=now_ms, windows_min=_WINDOWS_MIN,
            rollup_hours=hours,
        )  # fmt: skip
        for c in counted:
            out.append(_status(c.target, c.key, c.valid, c.bad, c.windows, covers_s=c.covers_s))
        return out

    async def burn_rate_history(
        self, instants_ms: Sequence[int]
    ) -> dict[str, list[tuple[int, float]]]:
        """The 1 h burn rate of each status of the last :meth:`evaluate` at each instant: the
        ``burn_rate_1h`` an evaluation at that instant gives, in one pass over the rollups
        (hours already read are not parsed again; a sparkline's history).

        Args:
            instants_ms: epoch milliseconds.

        Returns:
            ``{status.key: [(instant, burn rate), …]}`` in time order; empty before the first
            evaluation.

        Raises:
            airstore.AirstoreError: the store cannot be read.
        """
        if not instants_ms or not self._evaluated:
            return {}
        earliest = min(instants_ms) - _HOUR_WINDOW_MIN * MINUTE_MS
        first_hour = (earliest - earliest % MINUTE_MS) // HOUR_MS
        last_hour = max(instants_ms) // HOUR_MS
        revisions = await self._reader.revisions(from_hour=first_hour)
        hours = [h for h in revisions if first_hour <= h <= last_hour]
        open_from = int(self._clock() * 1000) // HOUR_MS - 1
        for hour in hours:
            await self._load_hour(hour, None if hour >= open_from else revisions[hour])
        loaded = [(hour, self._hours[hour]) for hour in hours]
        out: dict[str, list[tuple[int, float]]] = {key: [] for _, _, key in self._evaluated}
        for at in sorted(instants_ms):
            window = _Window(loaded, at, windows=(_HOUR_WINDOW_MIN,), prune=False)
            for target, key, status_key in self._evaluated:
                ((valid, bad),) = window.sums(key, target.threshold_ms)
                allowed = 1.0 - target.target
                out[status_key].append((at, (bad / valid) / allowed if valid else 0.0))
        return out

    async def _load_hour(self, hour: int, revision: Revision) -> None:
        """Read one hour's documents unless it is kept with the same revision (and was read
        less than ``RECHECK_S`` ago); ``revision`` None: read it in any case."""
        cached = self._hours.get(hour)
        now = time.monotonic()
        if cached is not None and unchanged(cached.revision, cached.read_at, revision, hour, now):
            return
        pairs = await self._store.entries(hour_namespace(hour))
        if cached is not None and cached.pairs == pairs:  # identity first: no parse, no walk
            cached.revision, cached.read_at = revision, now
            return
        docs = self._reader  # parses only the documents that changed
        parsed = [(key, docs.rows(hour, key, doc)) for key, doc in pairs]
        signature: list[Sequence[RollupRow]] = [rows for _, rows in parsed]
        if (
            cached is not None
            and len(cached.signature) == len(signature)
            and all(a is b for a, b in zip(cached.signature, signature, strict=True))
        ):
            cached.pairs = pairs
            cached.revision, cached.read_at = revision, now
            return
        entry = _Hour(signature, pairs)
        entry.revision, entry.read_at = revision, now
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


class _Window:
    """The hours of the burn-rate windows ending at ``now_ms``, and where each window starts
    (shortest first); ``prune`` forgets the running sums of the hours outside every window."""

    __slots__ = ("firsts", "hours", "now_ms")

    def __init__(
        self,
        loaded: Sequence[tuple[int, _Hour]],
        now_ms: int,
        *,
        windows: Sequence[int] = _WINDOWS_MIN,
        prune: bool = True,
    ) -> None:
        firsts = []
        for minutes in windows:
            start = now_ms - minutes * MINUTE_MS
            firsts.append(start - start % MINUTE_MS)
        self.firsts: tuple[int, ...] = tuple(firsts)
        self.now_ms = now_ms
        earliest = min(firsts)
        self.hours: list[tuple[int, _Hour]] = []
        for hour, entry in loaded:
            if (hour + 1) * HOUR_MS > earliest and hour * HOUR_MS <= now_ms:
                self.hours.append((hour, entry))
            elif prune and entry.prefix:  # out of every window now: its running sums are not needed
                entry.prefix.clear()

    def sums(self, key: _Key, threshold: float | None) -> list[tuple[int, int]]:
        """``(valid, bad)`` calls of ``key`` in each window."""
        out = []
        now_ms = self.now_ms
        for first in self.firsts:
            valid = bad = 0
            for hour, entry in self.hours:
                if (hour + 1) * HOUR_MS > first:
                    v, b = entry.window(key, threshold, first, now_ms)
                    valid += v
                    bad += b
            out.append((valid, bad))
        return out


def _period_sums(hours: Sequence[_Hour], key: _Key, threshold: float | None) -> tuple[int, int]:
    """``(valid, bad)`` calls of ``key`` in ``hours``."""
    valid = bad = 0
    for entry in hours:
        agg = entry.total.get(key)
        if agg is not None:
            valid += agg.valid
            bad += agg.bad if threshold is None else agg.slower_than(threshold)
    return valid, bad


def _status(
    target: SloTarget, key: _Key, valid: int, bad: int, windows: Sequence[tuple[int, int]],
    *, covers_s: float | None = None,
) -> SloStatus:  # fmt: skip
    allowed = 1.0 - target.target
    threshold = target.threshold_ms
    b5, b30, b60, b360 = ((b / v) / allowed if v else 0.0 for v, b in windows)
    budget = 1.0 - bad / (allowed * valid) if valid else 1.0
    period_h = target.period_s / 3600.0
    fast = _FAST_SHARE * period_h / _FAST_HOURS
    slow = _SLOW_SHARE * period_h / _SLOW_HOURS
    state: SloState = "ok"
    if b60 >= fast and b5 >= fast:
        state = "breach"
    elif budget < 0:
        state = "exhausted"  # missed over its period, whatever the burn now
    elif b360 >= slow and b30 >= slow:
        state = "warning"
    return SloStatus(
        tool=key[1], server=key[0], kind=target.kind, target=target.target,
        threshold_ms=threshold, period=target.period, budget_remaining=budget,
        burn_rate_5m=b5, burn_rate_30m=b30, burn_rate_1h=b60, burn_rate_6h=b360,
        state=state, valid_calls=valid, bad_calls=bad, client=target.client,
        raw_log_covers_s=covers_s,
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
