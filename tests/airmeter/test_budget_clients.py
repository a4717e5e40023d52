"""A budget with a client selector: each matching client gets its own daily calls (and cost),
counted in the store, so the limit holds across two real ``air serve --auth-config`` processes
sharing one FileStore; other clients are not limited by it."""

from __future__ import annotations

import asyncio
import contextlib
from pathlib import Path
from typing import Any

import httpx
import pytest

from airhttp.identity import Identity, use_identity
from airmeter import Budget, BudgetExceededError, MeterConfigError
from airmeter.budget_counters import CALLS_PER_DAY
from airstore import FileStore, MemoryStore
from tests.airhttp.oauth_serve import OAuthServed, oauth_serving

SERVER = """
from aircore import define_server, define_tool
from airmeter import Budget, MeterMiddleware

server = define_server(
    name="notes",
    tools=[define_tool(name="read_note", params={"id": "string"},
                       handler=lambda p: "note " + p["id"])],
    meter=MeterMiddleware(budget=Budget(client="ci-*", calls_per_day=5, on_exceed="block")),
)
"""

V = "2026-07-28"


async def _call(http: httpx.AsyncClient, served: OAuthServed, client_id: str) -> str:
    """One stateless tools/call as ``client_id``: ``ok``, or ``refused`` (the budget)."""
    meta = {"io.modelcontextprotocol/protocolVersion": V,
            "io.modelcontextprotocol/clientCapabilities": {}}  # fmt: skip
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
            "params": {"name": "read_note", "arguments": {"id": "1"}, "_meta": meta}}  # fmt: skip
    headers = {"Authorization": f"Bearer {served.token(client_id=client_id, sub='s')}",
               "Accept": "application/json, text/event-stream", "MCP-Protocol-Version": V,
               "Mcp-Method": "tools/call", "Mcp-Name": "read_note"}  # fmt: skip
    answer = await http.post(served.url, json=body, headers=headers)
    assert answer.status_code == 200, answer.text
    result = answer.json()["result"]
    if not result.get("isError"):
        return "ok"
    text = result["content"][0]["text"]
    assert f"daily call budget of client {client_id!r} exceeded" in text, text
    return "refused"


async def test_a_clients_daily_calls_hold_across_two_replicas(tmp_path: Path) -> None:
    store = f"file://{tmp_path / 'data'}"
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    async with (
        oauth_serving(tmp_path / "a", SERVER, store=store) as a,
        oauth_serving(tmp_path / "b", SERVER, store=store) as b,
        httpx.AsyncClient(timeout=30) as http,
    ):
        seen = [await _call(http, served, "ci-bot") for served in (a, b, a, b, a)]
        assert seen == ["ok"] * 5
        assert await _call(http, b, "ci-bot") == "refused"
        assert await _call(http, a, "ci-bot") == "refused"
        # another client the selector matches has its own count; one it does not is not limited
        assert await _call(http, b, "ci-other") == "ok"
        assert [await _call(http, a, "reports-app") for _ in range(8)] == ["ok"] * 8
        # twenty at once, ten at each replica: exactly five run
        burst = await asyncio.gather(
            *(_call(http, a if i % 2 else b, "ci-burst") for i in range(20))
        )
        assert sorted(burst).count("ok") == 5


def _as(client: str) -> contextlib.AbstractContextManager[None]:
    @contextlib.contextmanager
    def scope() -> Any:
        token = use_identity(Identity(auth="oauth", client_id=client))
        try:
            yield
        finally:
            token.var.reset(token)

    return scope()


async def test_a_clients_daily_cost_is_shared_through_the_store(tmp_path: Path) -> None:
    """Two budgets (two processes' worth) on one FileStore: what one charged for a client
    counts at the other's next admission; another client is untouched."""
    async with FileStore(tmp_path / "data") as store:
        one, two = (Budget(client="*", daily_limit=25, on_exceed="block") for _ in range(2))
        for budget in (one, two):
            await budget.load(store, server="notes")
        with _as("app"):
            for _ in range(3):
                assert await one.admit() is None
                one.add(10.0)  # spent 30 of 25 once sent
            refusal = await two.admit()  # one sent its charges at its third admission: 20
            assert refusal is None
            await one.load(store, server="notes")  # the refresh sends the rest: 30
            refusal = await two.admit()
        assert isinstance(refusal, BudgetExceededError)
        assert (refusal.limit, refusal.spent, refusal.allowed) == ("daily", 30.0, 25)
        with _as("other"):
            assert await two.admit() is None
        assert one.refusal() is None  # the server-wide check leaves clients to admit()


async def test_warn_mode_counts_and_lets_calls_through(tmp_path: Path) -> None:
    budget = Budget(client="*", calls_per_day=1, on_exceed="warn")
    with _as("app"):
        assert await budget.admit() is None
        assert await budget.admit() is None  # over, logged once, not refused


def test_bad_client_budgets_are_refused() -> None:
    with pytest.raises(MeterConfigError, match="needs a client selector"):
        Budget(calls_per_day=5)
    with pytest.raises(MeterConfigError, match="client must be"):
        Budget(client="")
    with pytest.raises(MeterConfigError, match="whole number"):
        Budget(client="*", calls_per_day=2.5)  # type: ignore[arg-type]
    assert CALLS_PER_DAY == "calls_per_day"


async def test_the_last_calls_cost_reaches_the_store_when_the_meter_stops(tmp_path: Path) -> None:
    from airmeter import MeterMiddleware
    from airmeter.budget_counters import COUNTERS_NAMESPACE

    async with FileStore(tmp_path / "data") as store:
        budget = Budget(client="*", daily_limit=100, on_exceed="block")
        meter = MeterMiddleware(budget=budget)
        await meter.start(server_name="notes", store=store)
        with _as("app"):
            assert await budget.admit() is None
            budget.add(7.5)  # charged, not sent yet (the next admission or refresh sends it)
        await meter.stop()
        stored = [value for _, value in await store.entries(COUNTERS_NAMESPACE, "cost-")]
        assert stored == [7_500_000_000] * 2  # the day's and the month's, in billionths


async def test_a_server_wide_budget_and_a_per_client_one_hold_together() -> None:
    """Through a real aircore server: each client may make 2 calls a day, and all clients
    together spend 5 units (L1 calls: 1 unit each)."""
    from aircore import define_server, define_tool
    from airmeter import MemorySink, Meter, MeterMiddleware

    budget = Budget(daily_limit=5, on_exceed="block",
                    per_client=Budget(client="*", calls_per_day=2, on_exceed="block"))  # fmt: skip
    meter = Meter(sinks=[MemorySink()], server="s")
    server = define_server(
        name="s",
        tools=[define_tool(name="ping", params={}, handler=lambda p: "pong", layer=1)],
        meter=MeterMiddleware(meter, budget=budget),
    )
    outcomes: list[tuple[str, bool]] = []
    async with server:
        for client in ("a", "a", "a", "b", "b", "c", "c", "d"):
            with _as(client):
                result = await server.call_tool("ping", {})
                text = result["content"][0]["text"]
                outcomes.append((client, bool(result.get("isError")) and "budget" in text))
    await meter.stop()
    # a: 2 run, the third is over a's own 2; b: 2 run (4 in all); c: the fifth runs, then the
    # server's 5 units are spent; d: refused by the server-wide limit
    assert outcomes == [("a", False), ("a", False), ("a", True), ("b", False), ("b", False),
                        ("c", False), ("c", True), ("d", True)]  # fmt: skip
    with pytest.raises(MeterConfigError, match="per_client"):
        Budget(per_client=Budget(daily_limit=1))
    with pytest.raises(MeterConfigError, match="per_client"):
        Budget(client="*", per_client=Budget(client="*", calls_per_day=1))


def _clock_at(now: list[float]) -> Any:
    return lambda: now[0]


def _utc(text: str) -> float:
    import datetime

    return datetime.datetime.fromisoformat(text).timestamp()


async def _run_until_refused(budget: Budget, cost: float, most: int) -> int:
    ran = 0
    for _ in range(most):
        if await budget.admit() is not None:
            break
        ran += 1
        budget.add(cost)
    return ran


async def test_a_clients_cost_budget_trips_on_calls_cheaper_than_a_thousandth() -> None:
    """Costs of 0.0001 a call add up (nothing below a rounding step is dropped)."""
    budget = Budget(client="*", daily_limit=0.001, unit_price=0.0001, on_exceed="block")
    await budget.load(MemoryStore(), server="s")
    use_identity(Identity(auth="oauth", client_id="c1"))
    assert await _run_until_refused(budget, 0.0001, 100) == 10


@pytest.mark.parametrize("day", ["2026-12-01T10:00:00+00:00", "2026-12-02T10:00:00+00:00"])
async def test_a_clients_daily_cost_is_counted_once_on_the_first_of_a_month(day: str) -> None:
    budget = Budget(client="*", daily_limit=10.0, unit_price=1.0, on_exceed="block",
                    clock=_clock_at([_utc(day)]))  # fmt: skip
    await budget.load(MemoryStore(), server="s")
    use_identity(Identity(auth="oauth", client_id="c1"))
    assert await _run_until_refused(budget, 1.0, 20) == 10


async def test_a_clients_month_outlives_the_day_counters_started_on_its_first_day() -> None:
    now = [_utc("2026-12-01T10:00:00+00:00")]
    store = MemoryStore(clock=_clock_at(now))
    budget = Budget(client="*", monthly_limit=50.0, unit_price=1.0, on_exceed="block",
                    clock=_clock_at(now))  # fmt: skip
    await budget.load(store, server="s")
    use_identity(Identity(auth="oauth", client_id="c1"))
    assert await _run_until_refused(budget, 1.0, 20) == 20
    now[0] += 3 * 86_400  # the 4th: the day counters of the 1st have expired
    assert await _run_until_refused(budget, 1.0, 100) == 30
