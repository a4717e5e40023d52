"""Blocking budgets through a real aircore server: a call refused for its arguments is recorded
as the refusal the client got and costs nothing; the monthly limit follows the UTC month."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from aircore import define_server, define_tool
from airmeter import Budget, MemorySink, Meter, MeterMiddleware
from airmeter.budget import BUDGET_ERROR_TYPE
from tests.airmeter.helpers import Clock

DAY = 86_400.0


def _server(budget: Budget, sink: MemorySink, ran: list[str]) -> tuple[Any, Meter]:
    def fetch_url(params: dict[str, Any]) -> str:  # L5: 20 units a call
        ran.append(params["url"])
        return "page"

    meter = Meter(sinks=[sink], server="budgeted")
    tool = define_tool(name="fetch_url", params={"url": "string"}, handler=fetch_url)
    mw = MeterMiddleware(meter, budget=budget)
    return define_server(name="budgeted", tools=[tool], meter=mw), meter


async def test_refused_arguments_cost_nothing_while_the_budget_has_room() -> None:
    budget = Budget(daily_limit=30, on_exceed="block", clock=Clock(1_800_000_000.0))
    sink, ran = MemorySink(), []
    server, meter = _server(budget, sink, ran)
    async with server:
        bad = await server.call_tool("fetch_url", {"url": 5}, request_id="bad")
        assert budget.status().spent_today == 0.0
        good = await server.call_tool("fetch_url", {"url": "https://a.test"}, request_id="ok")
    await meter.stop()
    assert bad["isError"] is True
    assert bad["content"][0]["text"].startswith("[-32602]")
    assert not good.get("isError")
    assert ran == ["https://a.test"]
    assert budget.status().spent_today == 20.0
    recs = {r.request_id: r for r in sink.records}
    assert (recs["bad"].ok, recs["bad"].error_type, recs["bad"].cost) == (False, "-32602", 0.0)
    assert (recs["ok"].ok, recs["ok"].cost) == (True, 20.0)


async def test_refused_arguments_over_an_exceeded_budget_are_recorded_as_the_refusal() -> None:
    budget = Budget(daily_limit=30, on_exceed="block", clock=Clock(1_800_000_000.0))
    sink, ran = MemorySink(), []
    server, meter = _server(budget, sink, ran)
    async with server:
        for rid in ("1", "2"):  # 20, then 40 >= 30: the budget is exceeded
            await server.call_tool("fetch_url", {"url": f"https://{rid}.test"}, request_id=rid)
        blocked = await server.call_tool("fetch_url", {"url": "https://3.test"}, request_id="3")
        bad = await server.call_tool("fetch_url", {"url": 5}, request_id="bad")
        missing = await server.call_tool("fetch_url", {}, request_id="missing")
    await meter.stop()
    assert ran == ["https://1.test", "https://2.test"]  # nothing ran once the budget was spent
    assert "daily budget exceeded" in blocked["content"][0]["text"]
    for answer in (bad, missing):  # what the client got: the refusal of its arguments
        assert answer["isError"] is True
        assert answer["content"][0]["text"].startswith("[-32602] Invalid arguments")
    recs = {r.request_id: r for r in sink.records}
    assert (recs["3"].error_type, recs["3"].cost) == (BUDGET_ERROR_TYPE, 0.0)
    for rid, answer in (("bad", bad), ("missing", missing)):
        rec = recs[rid]
        assert (rec.ok, rec.error_type, rec.cost) == (False, "-32602", 0.0)
        assert rec.error_message is not None
        assert rec.error_message in answer["content"][0]["text"]
    assert budget.status().spent_today == 40.0  # the refusals did not count


async def test_monthly_block_budget_holds_across_days_and_resets_with_the_utc_month() -> None:
    jan_30_noon = datetime(2027, 1, 30, 12, tzinfo=UTC).timestamp()
    clock = Clock(jan_30_noon)
    budget = Budget(monthly_limit=50, on_exceed="block", clock=clock)
    sink, ran = MemorySink(), []
    server, meter = _server(budget, sink, ran)
    answers: list[tuple[str, dict[str, Any]]] = []

    async def call(rid: str) -> None:
        answers.append((rid, await server.call_tool("fetch_url", {"url": rid}, request_id=rid)))

    async with server:
        for rid in ("a", "b", "c"):  # 20, 40, 60: the third still runs (40 < 50)
            await call(rid)
        await call("d")  # 60 >= 50: refused
        clock.advance(DAY)  # Jan 31: a new day, the same month
        assert (budget.status().spent_today, budget.status().spent_month) == (0.0, 60.0)
        await call("e")
        clock.now = datetime(2027, 1, 31, 23, 59, 59, tzinfo=UTC).timestamp()
        await call("f")
        clock.advance(1.0)  # Feb 1 00:00:00 UTC: the month resets
        await call("g")
        assert (budget.status().spent_today, budget.status().spent_month) == (20.0, 20.0)
    await meter.stop()
    assert ran == ["a", "b", "c", "g"]
    refused = {rid for rid, answer in answers if answer.get("isError")}
    assert refused == {"d", "e", "f"}
    texts = {answer["content"][0]["text"] for rid, answer in answers if rid in refused}
    assert texts == {"monthly budget exceeded: spent 60 of 50; the call was not run"}
    recs = {r.request_id: r for r in sink.records}
    assert {rid for rid, r in recs.items() if r.error_type == BUDGET_ERROR_TYPE} == refused
    assert [recs[rid].cost for rid in "abcdefg"] == [20.0, 20.0, 20.0, 0.0, 0.0, 0.0, 20.0]
