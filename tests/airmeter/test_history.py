"""A back-filled history goes through the real meter path into a real store: every planned
call lands at its planned time with its latency and error class (read back through the
snapshot, the readers and the SLO evaluator), nothing is dropped, and the demo plan has the
shape it promises (a daily curve, a denser last day, a slow tool, an incident that breached an
availability SLO and has recovered, a budget warning)."""

from __future__ import annotations

import asyncio
import gc
import logging
from collections import Counter
from pathlib import Path

import pytest

from airmeter import Budget, Meter, MeterConfigError, Objective, snapshot
from airmeter.history import (
    INCIDENT_AGO_S,
    INCIDENT_S,
    HistoryCall,
    PlannedTool,
    VirtualClock,
    backfill,
    demo_plan,
)
from airmeter.readers import recent_calls
from airmeter.slo import evaluate_slos
from airstore.file import FileStore
from airstore.sqlite import SqliteStore

NOW = 1_800_000_000.0
TOOLS = [
    PlannedTool(name="get_user", weight=5, latency_ms=4),
    PlannedTool(name="fetch_url", weight=3, latency_ms=90),
    PlannedTool(name="generate_text", weight=1, latency_ms=400),
]
LAYERS = {"get_user": 2, "fetch_url": 5, "generate_text": 6}


async def test_every_planned_call_is_recorded_at_its_time_with_its_latency_and_class(
    tmp_path: Path,
) -> None:
    plan = [
        HistoryCall(at=NOW - 7200, tool="get_user", latency_ms=12.5),
        HistoryCall(at=NOW - 3600, tool="get_user", latency_ms=3.0, outcome="tool_error"),
        HistoryCall(at=NOW - 1800, tool="fetch_url", latency_ms=250.0, outcome="exception"),
        HistoryCall(at=NOW - 900, tool="fetch_url", latency_ms=30_000.0, outcome="timeout"),
        HistoryCall(at=NOW - 60, tool="generate_text", latency_ms=1.0, outcome="refused"),
    ]
    seen: list[int] = []
    async with FileStore(tmp_path / "data") as store:
        meter = Meter(store=store, server="shop")
        await meter.start()
        assert await backfill(meter, plan, layers=LAYERS, progress=seen.append) == 5
        await meter.stop()
        assert meter.stats.dropped == 0
        got = await recent_calls(store, limit=10, since=None, now_ms=int(NOW * 1000))
        snap = await snapshot(store, since=int((NOW - 86_400) * 1000), until=int(NOW * 1000))
    assert seen == [5]
    by_ts = sorted(got, key=lambda r: r.ts_ms)
    assert [r.ts_ms for r in by_ts] == [int(c.at * 1000) for c in plan]
    assert [r.latency_ms for r in by_ts] == pytest.approx([c.latency_ms for c in plan])
    assert [r.error_class for r in by_ts] == [None, "tool_error", "exception", "timeout",
                                              "refused"]  # fmt: skip
    assert [r.layer.value for r in by_ts] == [2, 2, 5, 5, 6]
    assert {r.server for r in by_ts} == {"shop"}
    assert snap.total_calls == 5
    assert dict(snap.errors_by_class) == {"tool_error": 1, "exception": 1, "timeout": 1,
                                          "refused": 1}  # fmt: skip


async def test_calls_out_of_time_order_are_refused_and_what_came_before_is_kept() -> None:
    plan = [HistoryCall(at=NOW, tool="a", latency_ms=1.0),
            HistoryCall(at=NOW - 1, tool="a", latency_ms=1.0)]  # fmt: skip
    meter = Meter(server="s")
    await meter.start()
    with pytest.raises(MeterConfigError, match="oldest first"):
        await backfill(meter, plan)
    await meter.stop()
    assert meter.stats.recorded == 1


def test_the_demo_plan_has_a_daily_curve_a_denser_last_day_a_slow_tool_and_an_incident() -> None:
    plan = demo_plan(TOOLS, now=NOW, days=7, calls=30_000, incident_tool="fetch_url",
                     slow_tool="generate_text")  # fmt: skip
    assert len(plan) == 30_000
    assert [c.at for c in plan] == sorted(c.at for c in plan)
    assert plan[0].at >= NOW - 7 * 86_400
    assert plan[-1].at <= NOW
    last_day = sum(c.at >= NOW - 86_400 for c in plan)
    assert last_day == 10_000  # a third, where a flat week would hold a seventh
    hours = Counter(int(c.at % 86_400 // 3600) for c in plan)
    assert hours[14] > 2.5 * hours[2]  # busy afternoons, quiet nights
    start, end = NOW - INCIDENT_AGO_S, NOW - INCIDENT_AGO_S + INCIDENT_S
    during = [c for c in plan if c.tool == "fetch_url" and start <= c.at < end]
    before = [c for c in plan if c.tool == "fetch_url" and c.at < start]
    assert sum(c.outcome != "ok" for c in during) / len(during) > 0.3
    assert sum(c.outcome != "ok" for c in before) / len(before) < 0.02
    slow = [c.latency_ms for c in plan if c.tool == "generate_text"]
    assert sorted(slow)[len(slow) // 2] > 6 * 400 * 0.8
    assert demo_plan(TOOLS, now=NOW, calls=100) == demo_plan(TOOLS, now=NOW, calls=100)
    with pytest.raises(MeterConfigError):
        demo_plan([], now=NOW)


async def test_the_incident_breached_the_slo_which_recovered_and_the_budget_warned(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    plan = demo_plan(TOOLS, now=NOW, days=2, calls=12_000, incident_tool="fetch_url")
    clock = VirtualClock()
    budget = Budget(daily_limit=30_000, clock=clock.time)  # L2 = 3, L5 = 30, L6 = 60 a call
    async with FileStore(tmp_path / "data") as store:
        meter = Meter(store=store, server="demo")
        await meter.start()
        with caplog.at_level(logging.WARNING, logger="airmeter.budget"):
            await backfill(meter, plan, clock=clock, layers=LAYERS, budget=budget)
        await meter.stop()
        assert meter.stats.dropped == 0
        objective = [Objective(tool="fetch_url", availability=0.99)]
        end = NOW - INCIDENT_AGO_S + INCIDENT_S
        (then,) = await evaluate_slos(store, objective, clock=lambda: end)
        (now,) = await evaluate_slos(store, objective, clock=lambda: NOW)
        snap = await snapshot(store, since=int((NOW - 3 * 86_400) * 1000), until=int(NOW * 1000))
    assert then.state == "breach"
    assert now.state == "ok"
    assert now.budget_remaining < 1.0  # the incident spent part of the budget
    assert snap.total_calls == 12_000
    assert any("daily budget exceeded" in m for m in caplog.messages)


async def test_the_garbage_collector_is_paused_while_back_filling_and_resumed_after() -> None:
    seen: list[bool] = []
    plan = [HistoryCall(at=NOW + i, tool="a", latency_ms=1.0) for i in range(3)]
    meter = Meter(server="s")
    await meter.start()
    assert gc.isenabled()
    assert await backfill(meter, plan, progress=lambda n: seen.append(gc.isenabled())) == 3
    assert seen == [False]
    assert gc.isenabled()
    with pytest.raises(MeterConfigError, match="oldest first"):  # resumed on error too
        await backfill(meter, [*plan, HistoryCall(at=NOW, tool="a", latency_ms=1.0)])
    assert gc.isenabled()
    gc.disable()  # a caller that paused it keeps it paused
    try:
        await backfill(meter, [HistoryCall(at=NOW + 9, tool="a", latency_ms=1.0)])
        assert not gc.isenabled()
    finally:
        gc.enable()
    await meter.stop()
    assert meter.stats.recorded == 7


async def test_overlapping_back_fills_keep_the_collector_paused_until_the_last_ends(
    tmp_path: Path,
) -> None:
    during: list[bool] = []
    first = [HistoryCall(at=NOW + 100 + i, tool="a", latency_ms=1.0) for i in range(3_000)]
    second = [HistoryCall(at=NOW + 5_000 + i, tool="b", latency_ms=1.0) for i in range(20_000)]
    async with SqliteStore(tmp_path / "air.db") as store:  # its writes suspend: they interleave
        meter = Meter(store=store, server="s")
        await meter.start()
        a = asyncio.create_task(backfill(meter, first))
        b = asyncio.create_task(
            backfill(meter, second, progress=lambda n: during.append(gc.isenabled()))
        )
        await asyncio.gather(a, b)
        await meter.stop()
    assert during
    assert not any(during)
    assert gc.isenabled()  # resumed once both ended
