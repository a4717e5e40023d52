"""Back-filling a history through the real meter path (``air demo --history 7d``).

:func:`backfill` runs every call of a plan through a :class:`~airmeter.MeterMiddleware` on the
given meter (engine → meter → sinks → store: what a live call takes), with a
:class:`VirtualClock` standing in for time, so each record carries its planned start and
latency. :func:`demo_plan` plans a week worth looking at: a daily load curve (busier by day,
denser in the last 24 hours), one slow tool, and an incident (an error burst and a latency
spike on one tool, three hours ago, long enough to breach an availability SLO that has
recovered since).
"""

from __future__ import annotations

import gc
import math
import random
from collections.abc import Awaitable, Callable, Iterable, Mapping, MutableMapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final, Literal

from airmeter.errors import MeterConfigError
from airmeter.meter import Meter
from airmeter.middleware import MeterMiddleware

__all__ = [
    "DEFAULT_HISTORY_CALLS",
    "HistoryCall",
    "Outcome",
    "PlannedTool",
    "VirtualClock",
    "backfill",
    "demo_plan",
]

Outcome = Literal["ok", "tool_error", "exception", "timeout", "refused"]
"""How a planned call ends (its record's error class)."""
DEFAULT_HISTORY_CALLS: Final = 150_000
"""Calls in a 7-day :func:`demo_plan` (scaled for other lengths)."""
FLUSH_EVERY: Final = 4096
"""Calls between two deliveries of the meter while back-filling (nothing is ever dropped)."""
INCIDENT_AGO_S: Final = 3 * 3600.0
"""The incident of :func:`demo_plan` starts this long before ``now``…"""
INCIDENT_S: Final = 40 * 60.0
"""…and lasts this long."""
_DAY: Final = 86_400.0
_RECENT_SHARE: Final = 1 / 3
_pausing = 0  # back-fills running in this process (the outermost one pauses and resumes the GC)
_resume = [True]  # whether the collector was on when the outermost back-fill started


class VirtualClock:
    """A clock that moves only when told: the meter's ``clock`` and ``timer`` while back-filling.

    Args:
        start: the first reading, in epoch seconds.
    """

    def __init__(self, start: float = 0.0) -> None:
        self.now = start
        self._elapsed = 0.0

    def time(self) -> float:
        """The current virtual time, in epoch seconds."""
        return self.now

    def perf(self) -> float:
        """Seconds advanced so far: a timer exact for short spans (epoch seconds are too large
        for a float to keep microseconds)."""
        return self._elapsed

    def advance(self, seconds: float) -> None:
        """Move forward by ``seconds``."""
        self.now += seconds
        self._elapsed += seconds


@dataclass(frozen=True, slots=True, kw_only=True)
class HistoryCall:
    """One planned call: when it started, which tool, how long it took and how it ended."""

    at: float
    tool: str
    latency_ms: float
    outcome: Outcome = "ok"
    arguments: Mapping[str, Any] = field(default_factory=dict)
    result: Any = "ok"


class _Call:
    """The :class:`~airmeter.types.CallInfo` of one back-filled call."""

    __slots__ = ("arguments", "layer", "planned", "tool_name", "usage")

    def __init__(self, planned: HistoryCall, layer: int | None) -> None:
        self.planned = planned
        self.tool_name = planned.tool
        self.arguments = planned.arguments
        self.layer = layer
        self.usage: MutableMapping[str, Any] = {}

    request_id = call_id = session_id = annotations = tool_meta = input_schema = None
    traceparent = tracestate = None
    protocol_version = "2025-11-25"
    transport = "history"
    client_name = "history"
    server_name: str | None = None


class _RefusedError(Exception):
    code = -32602


class _TimedOutError(Exception):
    code = -32001


_FAILURES: Final = (RuntimeError, _TimedOutError, _RefusedError)


async def backfill(
    meter: Meter,
    calls: Iterable[HistoryCall],
    *,
    clock: VirtualClock | None = None,
    layers: Mapping[str, int] | None = None,
    progress: Callable[[int], object] | None = None,
    **options: Any,
) -> int:
    """Run ``calls`` (oldest first) through the meter path, each at its planned time.

    The meter delivers every :data:`FLUSH_EVERY` calls, so its pending batch never overflows:
    a back-fill drops nothing. The cyclic garbage collector is paused while it runs and
    resumed after, also on error (the calls leave no cycles behind, and its passes over the
    growing store cost about a quarter of a back-filled week's CPU).

    Args:
        meter: a started meter (its sinks and store get the records).
        calls: the plan, oldest first.
        clock: the virtual clock to move (pass one to share it, e.g. with a
            :class:`~airmeter.Budget`); a new one by default.
        layers: explicit layers per tool (else the meter's classifier decides).
        progress: called with the number of calls recorded so far, every
            :data:`FLUSH_EVERY` calls and at the end.
        **options: more :class:`~airmeter.MeterMiddleware` options (``count_tokens``,
            ``budget`` …).

    Returns:
        How many calls were recorded.

    Raises:
        MeterConfigError: the calls are not in time order (what came before is recorded).
    """
    clock = clock or VirtualClock()
    hook = MeterMiddleware(meter, clock=clock.time, timer=clock.perf, **options)
    layers = layers or {}

    async def run(call: _Call) -> Any:
        planned = call.planned
        clock.advance(planned.latency_ms / 1000.0)
        outcome = planned.outcome
        if outcome == "ok":
            return planned.result
        if outcome == "exception":
            raise RuntimeError(f"{planned.tool} failed: upstream unavailable")
        if outcome == "timeout":
            raise _TimedOutError(f"tool {planned.tool!r} timed out")
        if outcome == "refused":
            raise _RefusedError(f"Invalid arguments for tool {planned.tool!r}")
        return {"content": [{"type": "text", "text": "not found"}], "isError": True}

    global _pausing
    if _pausing == 0:
        _resume[0] = gc.isenabled()
        gc.disable()
    _pausing += 1
    try:
        return await _run_all(meter, calls, hook, run, clock, layers, progress)
    finally:
        _pausing -= 1
        if _pausing == 0 and _resume[0] and not gc.isenabled():
            gc.enable()  # only the outermost back-fill resumes, and only what it paused


async def _run_all(
    meter: Meter,
    calls: Iterable[HistoryCall],
    hook: MeterMiddleware,
    run: Callable[[_Call], Awaitable[Any]],
    clock: VirtualClock,
    layers: Mapping[str, int],
    progress: Callable[[int], object] | None,
) -> int:
    last = -math.inf
    n = 0
    for planned in calls:
        if planned.at < last:
            raise MeterConfigError(
                f"back-filled calls must come oldest first ({planned.at} after {last})"
            )
        last = clock.now = planned.at
        try:  # noqa: SIM105 - contextlib.suppress costs more, and this runs per call
            await hook(_Call(planned, layers.get(planned.tool)), run)
        except _FAILURES:  # recorded by the meter: a planned failure
            pass
        n += 1
        if n % FLUSH_EVERY == 0:
            await meter.flush()
            if progress is not None:
                progress(n)
    await meter.flush()
    if progress is not None:
        progress(n)
    return n


@dataclass(frozen=True, slots=True, kw_only=True)
class PlannedTool:
    """A tool in :func:`demo_plan`: its share of calls, typical latency and result text.

    ``error_rate`` is the share of its calls that fail on their own (tool errors and
    exceptions); about 0.3 % more are refused for bad arguments.
    """

    name: str
    weight: float
    latency_ms: float
    error_rate: float = 0.004
    result: str = "ok"


def _load(hour_of_day: float) -> float:
    """Relative load by UTC hour: quiet at night, a peak mid-afternoon (0.25 … 1)."""
    daylight = max(0.0, math.sin(math.pi * (hour_of_day - 6) / 16))
    return 0.25 + 0.75 * float(daylight**1.5)


def demo_plan(
    tools: Sequence[PlannedTool],
    *,
    now: float,
    days: float = 7.0,
    calls: int | None = None,
    incident_tool: str | None = None,
    slow_tool: str | None = None,
    seed: int = 7,
) -> list[HistoryCall]:
    """A realistic history ending at ``now``, oldest first (see the module docstring).

    Args:
        tools: what is called, with weights and typical latencies.
        now: the end of the history, in epoch seconds.
        days: its length.
        calls: how many calls (default :data:`DEFAULT_HISTORY_CALLS` per 7 days); with more
            than a day, the last 24 hours hold a third of them.
        incident_tool: the tool of the incident (:data:`INCIDENT_AGO_S` before ``now``, for
            :data:`INCIDENT_S`): half its calls fail, the rest take 8x longer.
        slow_tool: a tool that always takes 6x its typical latency.
        seed: the random seed (a plan is reproducible).

    Returns:
        The calls, oldest first.

    Raises:
        MeterConfigError: no tools, or a non-positive length or size.
    """
    if calls is None:
        calls = max(1, round(DEFAULT_HISTORY_CALLS * days / 7))
    if not tools or not days > 0 or calls <= 0 or not all(t.weight >= 0 for t in tools):
        raise MeterConfigError("a plan needs tools (weights >= 0), days > 0 and calls > 0")
    rng = random.Random(seed)
    start = now - days * _DAY
    recent = now - min(days, 1.0) * _DAY
    weights = [t.weight for t in tools]
    incident = (now - INCIDENT_AGO_S, now - INCIDENT_AGO_S + INCIDENT_S)
    older = round(calls * (1 - _RECENT_SHARE)) if days > 1 else 0
    out: list[HistoryCall] = []
    for begin, end, count in ((start, recent, older), (recent, now, calls - older)):
        picked = 0
        while picked < count:
            at = rng.uniform(begin, end)
            if rng.random() > _load((at % _DAY) / 3600.0):
                continue
            picked += 1
            tool = rng.choices(tools, weights)[0]
            latency = tool.latency_ms * math.exp(rng.gauss(0.0, 0.5))
            if tool.name == slow_tool:
                latency *= 6.0
            outcome: Outcome = "ok"
            roll = rng.random()
            if roll < tool.error_rate:
                outcome = "tool_error" if rng.random() < 0.6 else "exception"
            elif roll < tool.error_rate + 0.003:
                outcome = "refused"
            if tool.name == incident_tool and incident[0] <= at < incident[1]:
                latency *= 8.0
                if rng.random() < 0.5:
                    outcome = "exception" if rng.random() < 0.7 else "timeout"
            out.append(HistoryCall(at=at, tool=tool.name, latency_ms=round(latency, 3),
                                   outcome=outcome, result=tool.result))  # fmt: skip
    out.sort(key=lambda c: c.at)
    return out
