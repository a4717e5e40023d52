"""The history ``air demo`` writes before its live traffic (``--history 7d``; ``0``: none).

Only into an empty store, through the meter path (:func:`airmeter.history.backfill` on a
:class:`~airmeter.Meter` writing to the store the demo server then meters to), oldest first:
a daily load curve over the demo server's tools, denser in the last 24 hours, a slow tool
(``plan_trip``), an incident on ``fetch_url`` three hours ago (an error burst and a latency
spike that breached its availability SLO and spent its error budget: no longer burning, but
``exhausted`` for its period) and a daily budget that the
busiest days run over (a warning line).
"""

from __future__ import annotations

import logging
import re
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Final

from aircli._traffic import SCENARIOS
from airmeter import Budget, Layer, Meter, Objective
from airmeter.budget import logger as budget_log
from airmeter.history import (
    INCIDENT_AGO_S,
    INCIDENT_S,
    HistoryCall,
    PlannedTool,
    VirtualClock,
    backfill,
    demo_plan,
)
from airmeter.readers import has_calls
from airmeter.slo import evaluate_slos
from airstore import Store, create_storage, parse_store_url

__all__ = [
    "DEFAULT_HISTORY",
    "DEMO_LAYERS",
    "DEMO_OBJECTIVES",
    "HISTORY_INSTANCE",
    "HistoryError",
    "demo_objectives",
    "parse_history",
    "write_history",
]

DEFAULT_HISTORY: Final = "7d"
HISTORY_INSTANCE: Final = "air-demo-history"
"""The instance id the history is recorded under (the report and dashboard tell it apart)."""
SERVER: Final = "air-demo"
DEMO_LAYERS: Final = {
    "ping": 1, "greet": 1, "always_fails": 1, "get_user": 2, "search_notes": 2, "save_note": 2,
    "get_stats": 2, "convert_units": 3, "summarize_text": 4, "slow_task": 4, "delete_note": 5,
    "fetch_url": 5, "confirm_deploy": 5, "generate_text": 6, "plan_trip": 7,
}  # fmt: skip
"""The demo server's tools and their layers (a test keeps them in step with the server)."""
_LATENCY_MS: Final = {1: 0.5, 2: 3.0, 3: 5.0, 4: 14.0, 5: 90.0, 6: 300.0, 7: 650.0}
_RESULTS: Final = {
    "get_user": '{"name": "Alice", "email": "alice@example.com", "age": 30}',
    "search_notes": '[{"id": "n3", "text": "buy milk and bread on the way home"}]',
    "summarize_text": '{"words": 48, "sentences": 4, "first": "The meeting moved to Monday."}',
    "fetch_url": "<html><head><title>Example Domain</title></head><body>" + "lorem " * 60,
    "generate_text": "Here is a short answer to the prompt. " * 6,
    "plan_trip": "Day 1: arrive and walk the old town. Day 2: museums. Day 3: day trip. " * 2,
}
_DAILY_BUDGET_SHARE: Final = 0.8
"""The demo's daily budget: this share of its busiest day's spend (so that day warns)."""
_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([hd]?)\s*$")


DEMO_OBJECTIVES: Final = """\
# The SLOs of `air demo`'s dashboard (used when there is no .air/slo.yml; see docs/metering.md).
objectives:
  - {tool: fetch_url, availability: 0.995, latency_p95_ms: 1000, period: 7d}
  - {tool: "get_*", availability: 0.995, latency_p95_ms: 50, period: 7d}
  - {tool: generate_text, latency_p95_ms: 1500, period: 7d}
"""
DEMO_OBJECTIVES_FILE: Final = "demo-slo.yml"


def demo_objectives(directory: Path) -> str:
    """Write :data:`DEMO_OBJECTIVES` into ``directory`` (once) and return the file's path."""
    path = directory / DEMO_OBJECTIVES_FILE
    if not path.is_file():
        directory.mkdir(parents=True, exist_ok=True)
        path.write_text(DEMO_OBJECTIVES, encoding="utf-8")
    return str(path)


class HistoryError(Exception):
    """A bad ``--history`` value."""


def parse_history(text: str) -> float:
    """``"7d"``, ``"36h"``, ``"0"`` → days (``0``: no history).

    Raises:
        HistoryError: not a duration in hours or days, or longer than 30 days.
    """
    match = _DURATION.match(text)
    if match is None or (match.group(2) == "" and float(match.group(1)) != 0):
        raise HistoryError(f"--history {text!r}: use a duration like 7d or 12h, or 0 for none")
    days = float(match.group(1)) / (24 if match.group(2) == "h" else 1)
    if days > 30:
        raise HistoryError(f"--history {text!r}: at most 30d")
    return days


def _tools() -> list[PlannedTool]:
    out = []
    for name, layer in DEMO_LAYERS.items():
        weight = SCENARIOS[name][0] if name in SCENARIOS else 0.0
        rate = 1.0 if name == "always_fails" else 0.004
        out.append(PlannedTool(name=name, weight=weight, latency_ms=_LATENCY_MS[layer],
                               error_rate=rate, result=_RESULTS.get(name, "ok")))  # fmt: skip
    return [t for t in out if t.weight > 0]


def _say(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


class _SayWarnings(logging.Handler):
    """The budget's warnings, as ``air demo`` lines."""

    def emit(self, record: logging.LogRecord) -> None:
        _say(f"air demo: history: {record.getMessage().removeprefix('airmeter: ')}")


async def write_history(
    url: str, *, days: float, calls: int | None = None, seed: int = 7, now: float | None = None
) -> int:
    """Write the demo's history into the store at ``url`` when it holds no call yet.

    Args:
        url: the store the demo server will meter to.
        days: how far back it goes (``0``: write nothing).
        calls: how many calls (default: about 150,000 a week).
        seed: the plan's random seed.
        now: where the history ends (default: now).

    Returns:
        How many calls were written (0 when skipped, and why is said on stderr).

    Raises:
        airstore.AirstoreError: the store cannot be opened or written.
    """
    if days <= 0:
        return 0
    if parse_store_url(url)[0] == "memory":
        _say("air demo: no history for a memory:// store (it lives in the server process)")
        return 0
    end = time.time() if now is None else now
    store = await create_storage(url)
    try:
        if await has_calls(store):
            _say("air demo: the store already holds calls: no history written (only an empty "
                 "store gets one)")  # fmt: skip
            return 0
        plan = demo_plan(_tools(), now=end, days=days, calls=calls, incident_tool="fetch_url",
                         slow_tool="plan_trip", seed=seed)  # fmt: skip
        total = len(plan)
        _say(f"air demo: writing {total:,} calls of history over the last {days:g} days, "
             "oldest first, through the meter")  # fmt: skip
        clock = VirtualClock(plan[0].at)
        budget = Budget(daily_limit=_daily_limit(plan), clock=clock.time)
        step = max(1, total // 10)
        marks = iter(range(step, total + step, step))
        mark = next(marks)

        def progress(done: int) -> None:
            nonlocal mark
            if done >= mark or done == total:
                _say(f"air demo: history {done:,}/{total:,} calls ({done * 100 // total}%)")
                while mark <= done:
                    mark = next(marks, total + 1)

        warnings = _SayWarnings(logging.WARNING)
        budget_log.addHandler(warnings)
        budget_log.propagate = False  # said once, as an ``air demo`` line
        started = time.perf_counter()
        meter = Meter(store=store, server=SERVER, instance_id=HISTORY_INSTANCE)
        await meter.start()
        try:
            await backfill(meter, plan, clock=clock, layers=DEMO_LAYERS, progress=progress,
                           budget=budget)  # fmt: skip
        finally:
            await meter.stop()
            budget_log.removeHandler(warnings)
            budget_log.propagate = True
        _say(f"air demo: history written in {time.perf_counter() - started:.1f}s")
        await _say_incident(store, end)
        return total
    finally:
        await store.close()


def _daily_limit(plan: Sequence[HistoryCall]) -> float:
    """A daily budget the busiest UTC day runs over (layer weights as the cost, unit price 1;
    refused calls cost nothing)."""
    days: dict[int, float] = {}
    for call in plan:
        if call.outcome != "refused":
            day = int(call.at // 86_400)
            days[day] = days.get(day, 0.0) + Layer(DEMO_LAYERS[call.tool]).weight
    return round(max(days.values()) * _DAILY_BUDGET_SHARE)


async def _say_incident(store: Store, end: float) -> None:
    """Say what the incident did to ``fetch_url``'s availability SLO (99.5 %)."""
    objective = [Objective(tool="fetch_url", availability=0.995)]
    peak = end - INCIDENT_AGO_S + INCIDENT_S
    then = await evaluate_slos(store, objective, clock=lambda: peak)
    now = await evaluate_slos(store, objective, clock=lambda: end)
    if then and now:
        _say(f"air demo: history: an incident on {SERVER}/fetch_url "
             f"{INCIDENT_AGO_S / 3600:g} h ago put its 99.5% availability SLO in "
             f"{then[0].state}; now {now[0].state}")  # fmt: skip
