"""What the meter knows beyond the calls, computed in the background for the page.

Three readings of airmeter's public API, none of them on a refresh's path:

- the SLO panel: the objectives file read once when the dashboard opens (as ``air meter slo``
  reads it: ``.air/slo.yml`` by default), evaluated with :class:`airmeter.slo.SloEvaluator`
  (kept warm), with the 1 h burn rate sampled every :data:`SPARK_STEP_MS` for a sparkline
  (back-filled from the rollups on the first evaluation, in one pass:
  :meth:`~airmeter.slo.SloEvaluator.burn_rate_history`);
- the header's ``drops`` badge: :func:`airmeter.meter_health`, the health document every meter
  keeps in the store (records dropped, sink failures, sink timeouts);
- the context panel: :func:`airmeter.context_cost.context_report` for the range the page shows.

A view calls :meth:`MeterWatch.poll` and reads the last results; a new evaluation starts in the
background at most every :data:`WATCH_EVERY` seconds, or at once when the range changed. It
shares the reader's event loop with the refreshes, so it yields between its slices (each
reading, the sparkline's back-fill): a refresh waits for one slice at most, not the whole. The
dashboard only reads the store, so it never sends SLO alerts (``air meter slo --watch`` does).
"""

from __future__ import annotations

import asyncio
import logging
import math
import time
from collections import deque
from collections.abc import Callable, Sequence
from pathlib import Path

from airmeter import AirmeterError, MeterHealth, RollupReader, SloStatus, meter_health
from airmeter.context_cost import ContextReport, ToolContextCost, context_report
from airmeter.slo import SloEvaluator
from airmeter.slo_config import DEFAULT_SLO_FILE, Objective, load_objectives
from airstore import AirstoreError, Store
from dashboard.types import Alert, ContextPanel, SloPanel, SloRow, TimeRange

__all__ = [
    "IN_CODE",
    "MAX_BADGES",
    "MAX_CONTEXT_ROWS",
    "MAX_SLO_ROWS",
    "SPARK_POINTS",
    "SPARK_STEP_MS",
    "WATCH_EVERY",
    "MeterWatch",
    "health_alerts",
    "slo_alerts",
    "slo_rows",
]

logger = logging.getLogger(__name__)

WATCH_EVERY = 10.0
"""Seconds between two background evaluations (SLOs, meter health, context cost)."""
SPARK_POINTS = 24
"""Samples of the 1 h burn rate a sparkline keeps (with the current value last)."""
SPARK_STEP_MS = 15 * 60_000
"""Time between two samples: 24 x 15 min = the last 6 hours."""
MAX_SLO_ROWS = 40
"""The most SLO rows the page gets (worst first)."""
MAX_CONTEXT_ROWS = 40
"""The most context-cost rows the page gets (largest definitions first)."""
MAX_BADGES = 3
"""The most ``drops`` badges (one per meter instance; a last one counts the others)."""

IN_CODE = "the objectives given to the dashboard"
"""The SLO panel's source when objectives come in code, not from a file."""

_STATE_ORDER = {"breach": 0, "exhausted": 1, "warning": 2, "ok": 3}
_NONE_GIVEN = "no objectives were given: pass some, or an objectives file, to see SLOs here"
_HOW_TO = (
    "no objectives file at {path}: add one to see error budgets and burn rates here, e.g. "
    'objectives: [{{tool: "*", availability: 0.995, latency_p95_ms: 300}}] '
    "(then restart the dashboard; `air meter slo --config {path}` shows the same numbers)"
)


def _objective_text(s: SloStatus) -> str:
    if s.threshold_ms is None:
        return f"availability {s.target * 100:g}%"
    return f"p{round(s.target * 100)} ≤ {s.threshold_ms:g} ms"


def slo_rows(
    statuses: Sequence[SloStatus], history: dict[str, deque[tuple[int, float]]], now_ms: int
) -> tuple[tuple[SloRow, ...], int]:
    """The panel's rows, worst first (state, then budget left), and how many were left out."""
    ordered = sorted(statuses, key=lambda s: (_STATE_ORDER.get(s.state, 4), s.budget_remaining,
                                              s.server, s.tool))  # fmt: skip
    rows = []
    for s in ordered[:MAX_SLO_ROWS]:
        past = [(t, b) for t, b in history.get(s.key, ()) if t < now_ms][-(SPARK_POINTS - 1) :]
        rows.append(
            SloRow(
                server=s.server, tool=s.tool, objective=_objective_text(s), period=s.period,
                budget_remaining=s.budget_remaining,
                burn_rates=(s.burn_rate_5m, s.burn_rate_30m, s.burn_rate_1h, s.burn_rate_6h),
                state=s.state, valid_calls=s.valid_calls, bad_calls=s.bad_calls,
                history_ms=(*(t for t, _ in past), now_ms),
                history=(*(b for _, b in past), s.burn_rate_1h),
            )
        )  # fmt: skip
    return tuple(rows), max(0, len(ordered) - MAX_SLO_ROWS)


def slo_alerts(statuses: Sequence[SloStatus]) -> tuple[Alert, ...]:
    """One badge when objectives are in ``breach``, ``exhausted`` or ``warning``, naming the
    worst."""
    bad = sorted((s for s in statuses if s.state != "ok"),
                 key=lambda s: (_STATE_ORDER[s.state], s.budget_remaining))  # fmt: skip
    if not bad:
        return ()
    worst = bad[0]
    text = f"SLO {worst.state}: {worst.server}/{worst.tool} {_objective_text(worst)}"
    if len(bad) > 1:
        text += f" (+{len(bad) - 1} more)"
    return (Alert(kind="slo", text=text),)


def health_alerts(healths: Sequence[MeterHealth]) -> tuple[Alert, ...]:
    """A ``drops`` badge for each meter instance that lost records or had a sink fail or hang
    (at most :data:`MAX_BADGES`; the last one counts the rest)."""
    degraded = [h for h in healths if h.degraded]
    out = []
    for h in degraded[: MAX_BADGES - 1 if len(degraded) > MAX_BADGES else MAX_BADGES]:
        parts = []
        if h.dropped:
            parts.append(f"{h.dropped:,} records dropped")
        if h.sink_errors:
            parts.append(f"{h.sink_errors:,} sink failures")
        if h.sink_timeouts:
            parts.append(f"{h.sink_timeouts:,} sink timeouts")
        out.append(Alert(kind="drops", text=f"meter {h.server} ({h.instance_id}): "
                                             + ", ".join(parts)))  # fmt: skip
    if len(degraded) > len(out):
        rest = len(degraded) - len(out)
        out.append(Alert(kind="drops", text=f"{rest} more meters lost records or had sink "
                                            "failures"))  # fmt: skip
    return tuple(out)


def _context_panel(report: ContextReport, range_key: str, now_ms: int) -> ContextPanel:
    def size(t: ToolContextCost) -> tuple[int, int, str, str]:
        return (-(t.definition_tokens or 0), -t.result_tokens_total, t.server, t.tool)

    tools = sorted(report.tools, key=size)
    rows = tuple(tools[:MAX_CONTEXT_ROWS])
    return ContextPanel(
        range_key=range_key, tokenizer=report.tokenizer, exact=report.exact,
        definition_tokens_total=report.definition_tokens_total, rows=rows,
        more=max(0, len(tools) - MAX_CONTEXT_ROWS), computed_at_ms=now_ms,
    )  # fmt: skip


class MeterWatch:
    """Evaluates SLOs, reads meter health and context cost in the background.

    Args:
        store: the dashboard's store (read-only).
        slo_config: the objectives file (``None``: the default ``.air/slo.yml``).
        objectives: objectives given in code (``air demo``); then no file is read.
        every: seconds between two evaluations.
        clock: seconds since the epoch (tests, back-dated histories).
        monotonic: monotonic seconds for the interval.
        reader: the dashboard's :class:`~airmeter.RollupReader` of ``store``, shared with
            its snapshots so each rollup document is parsed once (default: its own).
    """

    def __init__(
        self,
        store: Store,
        *,
        slo_config: str | Path | None = None,
        objectives: Sequence[Objective] | None = None,
        every: float = WATCH_EVERY,
        clock: Callable[[], float] = time.time,
        monotonic: Callable[[], float] = time.monotonic,
        reader: RollupReader | None = None,
    ) -> None:
        self._store = store
        self._reader = reader if reader is not None else RollupReader(store)
        self._every = every
        self._clock = clock
        self._monotonic = monotonic
        self._objectives: list[Objective] = list(objectives or ())
        if objectives is not None:
            self.config = IN_CODE
            self._slo = SloPanel(config=IN_CODE, status="pending", message="evaluating …")
            if not self._objectives:
                self._slo = SloPanel(config=IN_CODE, status="missing", message=_NONE_GIVEN)
        else:
            self.config = str(slo_config or DEFAULT_SLO_FILE)
            self._slo = self._load(self.config)
        self._at: float = self._clock()
        self._evaluator = (
            SloEvaluator(store, self._objectives, clock=lambda: self._at, reader=self._reader)
            if self._objectives
            else None
        )
        self._history: dict[str, deque[tuple[int, float]]] = {}
        self._backfilled = False
        self._health: tuple[Alert, ...] = ()
        self._slo_alerts: tuple[Alert, ...] = ()
        self._context: ContextPanel | None = None
        self._wanted: tuple[str, int, int, str | None] | None = None
        self._done: tuple[str, int, int, str | None] | None = None
        self._last = -math.inf
        self._task: asyncio.Task[None] | None = None
        self._lock = asyncio.Lock()
        self.updated = asyncio.Event()
        """Set after each evaluation (tests wait on it)."""

    def _load(self, path: str) -> SloPanel:
        if not Path(path).exists():
            return SloPanel(config=path, status="missing", message=_HOW_TO.format(path=path))
        try:
            self._objectives = load_objectives(path)
        except AirmeterError as exc:
            return SloPanel(config=path, status="invalid", message=str(exc))
        if not self._objectives:
            return SloPanel(config=path, status="missing", message=_HOW_TO.format(path=path))
        return SloPanel(config=path, status="pending", message="evaluating objectives …")

    def poll(self, rng: TimeRange, server: str | None) -> None:
        """Note what the page shows; start an evaluation in the background when one is due
        (the interval passed, or the range or server filter changed)."""
        wanted = (rng.key, rng.since_ms if rng.key == "custom" else 0,
                  rng.until_ms if rng.key == "custom" else 0, server)  # fmt: skip
        self._wanted = wanted
        if self._task is not None:
            return
        now = self._monotonic()
        if now - self._last >= self._every or wanted != self._done:
            self._last = now
            self._task = asyncio.get_running_loop().create_task(self._run(rng, wanted))

    @property
    def slo(self) -> SloPanel:
        """The last SLO panel."""
        return self._slo

    @property
    def context(self) -> ContextPanel | None:
        """The last context-cost panel (``None`` before the first reading)."""
        return self._context

    def alerts(self) -> tuple[Alert, ...]:
        """Badges: meters that lost records, objectives in warning or breach."""
        return self._health + self._slo_alerts

    async def _run(self, rng: TimeRange, wanted: tuple[str, int, int, str | None]) -> None:
        try:
            await self.evaluate_now(rng, wanted[3])
        except Exception:  # a bug here must not take the page down nor re-run on every refresh
            logger.exception("the meter panels' evaluation failed")
        finally:
            self._done = wanted
            self._task = None
            self.updated.set()

    async def evaluate_now(self, rng: TimeRange, server: str | None = None) -> None:
        """Read the meters' health and the context cost for ``rng`` and evaluate the SLOs now
        (what the background does; a reading that fails is logged and keeps its last value)."""
        async with self._lock:
            await self._evaluate_all(rng, server)

    async def _evaluate_all(self, rng: TimeRange, server: str | None) -> None:
        now_ms = int(self._clock() * 1000)
        try:
            self._health = health_alerts(await meter_health(self._store))
        except (AirstoreError, OSError) as exc:
            logger.warning("cannot read the meters' health: %s", exc)
        await asyncio.sleep(0)  # each reading is a slice: refreshes interleave between them
        try:
            report = await context_report(
                self._store,
                since=rng.since_ms,
                until=rng.until_ms,
                server=server,
                reader=self._reader,
            )
            self._context = _context_panel(report, rng.key, now_ms)
        except (AirstoreError, AirmeterError, OSError) as exc:
            logger.warning("cannot read the context cost: %s", exc)
        await asyncio.sleep(0)
        if self._evaluator is not None:
            try:
                await self._evaluate(now_ms)
            except (AirstoreError, AirmeterError, OSError) as exc:
                logger.warning("cannot evaluate the SLOs: %s", exc)
                self._slo = SloPanel(config=self.config, status="invalid",
                                     message=f"cannot evaluate: {exc}")  # fmt: skip

    async def _evaluate(self, now_ms: int) -> None:
        assert self._evaluator is not None
        self._at = now_ms / 1000
        statuses = await self._evaluator.evaluate()
        if not self._backfilled:  # first time: back-fill the sparkline from the rollups
            self._backfilled = True
            await asyncio.sleep(0)  # a refresh waiting for the loop goes first
            instants = [now_ms - back * SPARK_STEP_MS for back in range(SPARK_POINTS - 1, 0, -1)]
            for key, series in (await self._evaluator.burn_rate_history(instants)).items():
                self._history[key] = deque(series, maxlen=SPARK_POINTS)
        past = {k: h[-1][0] for k, h in self._history.items() if h}
        for s in statuses:
            if now_ms - past.get(s.key, -SPARK_STEP_MS) >= SPARK_STEP_MS:
                self._sample([s], now_ms)
        for gone in self._history.keys() - {s.key for s in statuses}:
            del self._history[gone]
        rows, more = slo_rows(statuses, self._history, now_ms)
        self._slo_alerts = slo_alerts(statuses)
        self._slo = SloPanel(config=self.config, status="ready", rows=rows, more=more,
                             evaluated_at_ms=now_ms)  # fmt: skip

    def _sample(self, statuses: Sequence[SloStatus], at_ms: int) -> None:
        for s in statuses:
            series = self._history.get(s.key)
            if series is None:
                series = self._history[s.key] = deque(maxlen=SPARK_POINTS)
            series.append((at_ms, s.burn_rate_1h))

    async def close(self) -> None:
        """Cancel an evaluation in progress. Idempotent."""
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
