"""Budgets in warn and block mode, through the meter middleware."""

from __future__ import annotations

import logging
from typing import Any

import pytest

from airmeter import (
    Budget,
    CallRecord,
    Layer,
    MemorySink,
    Meter,
    MeterMiddleware,
    StoreSink,
    report_usage,
)
from airmeter.budget import BUDGET_ERROR_TYPE
from airmeter.errors import BudgetExceededError, MeterConfigError
from airmeter.usage import CallUsage
from airstore import MemoryStore
from tests.airmeter.fakes import FakeContext, handler_returning
from tests.airmeter.helpers import Clock

DAY = 86_400.0


async def _setup(budget: Budget) -> tuple[Meter, MemorySink, MeterMiddleware]:
    sink = MemorySink()
    meter = Meter(sinks=[sink])
    await meter.start()
    return meter, sink, MeterMiddleware(meter, budget=budget)


def test_cost_is_reported_cost_then_tokens_then_layer_weight() -> None:
    budget = Budget(unit_price=0.5, token_price=0.01)
    usage = CallUsage()
    assert budget.cost_of(Layer.L5) == 10.0
    usage.add(tokens_in=100, tokens_out=50)
    assert budget.cost_of(Layer.L6, usage) == pytest.approx(1.5)
    usage.add(cost=7.0)
    assert budget.cost_of(Layer.L6, usage) == 7.0
    assert Budget().cost_of(Layer.L6, usage) == 7.0
    assert Budget(unit_price=2).cost_of(Layer.L6, CallUsage()) == 100.0


async def test_block_mode_refuses_calls_once_the_daily_limit_is_reached() -> None:
    clock = Clock(1_800_000_000.0)
    budget = Budget(daily_limit=25, on_exceed="block", clock=clock)
    meter, sink, mw = await _setup(budget)
    ran: list[int] = []

    async def handler(ctx: Any) -> str:
        ran.append(1)
        return "ok"

    for _ in range(3):  # fetch_url: L5, 20 units each
        await mw(FakeContext("fetch_url"), handler)
    assert len(ran) == 2  # 20, 40 >= 25 → the third is refused before running
    result = await mw(FakeContext("fetch_url"), handler)
    assert result["isError"] is True
    assert "daily budget exceeded" in result["content"][0]["text"]
    clock.advance(DAY)  # a new UTC day resets the daily spend
    assert await mw(FakeContext("fetch_url"), handler) == "ok"
    await meter.stop()
    kinds = [(r.ok, r.error_type) for r in sink.records]
    assert kinds == [
        (True, None),
        (True, None),
        (False, BUDGET_ERROR_TYPE),
        (False, BUDGET_ERROR_TYPE),
        (True, None),
    ]
    assert sink.records[2].error_message is not None
    assert sink.records[2].cost == 0.0
    assert budget.status().spent_today == 20.0
    assert budget.status().spent_month == 60.0


async def test_warn_mode_logs_once_and_lets_calls_run(caplog: pytest.LogCaptureFixture) -> None:
    budget = Budget(monthly_limit=10, on_exceed="warn")
    meter, sink, mw = await _setup(budget)
    with caplog.at_level(logging.WARNING, logger="airmeter.budget"):
        for _ in range(4):
            assert await mw(FakeContext("run_agent"), handler_returning("done")) == "done"
    await meter.stop()
    assert all(r.ok for r in sink.records)
    assert sum("monthly budget exceeded" in m for m in caplog.messages) == 1


async def test_per_call_token_limit_blocks_early_or_after_the_call() -> None:
    budget = Budget(tokens_per_call=100, on_exceed="block")
    meter, sink, mw = await _setup(budget)
    steps: list[str] = []

    async def greedy(ctx: Any) -> str:
        report_usage(tokens_in=80)
        steps.append("first")
        report_usage(tokens_out=30)  # raises here: 110 > 100
        steps.append("never")
        return "x"

    async def via_context(ctx: Any) -> str:
        ctx.usage["tokens_out"] = 500
        return "y"

    a = await mw(FakeContext("generate_text"), greedy)
    b = await mw(FakeContext("generate_text"), via_context)
    c = await mw(FakeContext("generate_text"), handler_returning("fine"))
    await meter.stop()
    assert steps == ["first"]
    assert a["isError"] is True
    assert "token limit per call exceeded" in a["content"][0]["text"]
    assert b["isError"] is True
    assert c == "fine"
    assert [r.error_type for r in sink.records] == [BUDGET_ERROR_TYPE, BUDGET_ERROR_TYPE, None]
    assert sink.records[0].tokens_in == 80


async def test_warn_mode_token_limit_only_logs(caplog: pytest.LogCaptureFixture) -> None:
    meter, sink, mw = await _setup(Budget(tokens_per_call=1, on_exceed="warn"))
    with caplog.at_level(logging.WARNING, logger="airmeter.budget"):

        async def handler(ctx: Any) -> str:
            report_usage(tokens_in=5)
            return "ok"

        assert await mw(FakeContext("chat"), handler) == "ok"
    await meter.stop()
    assert sink.records[0].ok
    assert any("token limit" in m for m in caplog.messages)


async def test_spending_is_seeded_from_the_store_after_a_restart() -> None:
    clock = Clock(1_800_000_000.0)
    store = MemoryStore()
    sink = StoreSink(store, writer="w")
    now_ms = int(clock() * 1000)
    await sink.write(
        [
            CallRecord(
                ts_ms=now_ms - 1000,
                server="s",
                tool="t",
                layer=Layer.L7,
                latency_ms=1,
                ok=True,
                cost=30.0,
            ),
            CallRecord(
                ts_ms=now_ms - int(2 * DAY * 1000),
                server="s",
                tool="t",
                layer=Layer.L7,
                latency_ms=1,
                ok=True,
                cost=12.0,
            ),
        ]
    )
    await sink.close()
    budget = Budget(daily_limit=30, on_exceed="block", clock=clock)
    mw = MeterMiddleware(budget=budget)
    await mw.start(server_name="s", store=store)
    status = budget.status()
    assert status.spent_today == 30.0
    assert status.spent_month in (30.0, 42.0)  # 42 unless the 2-days-ago call is last month
    result = await mw(FakeContext("echo"), handler_returning("x"))
    assert result["isError"] is True
    await mw.stop()


def test_bad_budget_options_are_config_errors() -> None:
    with pytest.raises(MeterConfigError):
        Budget(on_exceed="explode")  # type: ignore[arg-type]
    with pytest.raises(MeterConfigError):
        Budget(daily_limit=-1)
    err = BudgetExceededError("x", limit="daily", spent=2, allowed=1)
    assert (err.limit, err.spent, err.allowed) == ("daily", 2, 1)
