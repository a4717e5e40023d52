"""SLOs from the rollups: budgets and multi-window burn rates checked against an independent
computation, states, alerts once per state change (log, a real local webhook, a callback), and
one alert for several watchers on one store."""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path
from typing import Any

import orjson
import pytest

from airmeter import CallRecord, Layer, MeterConfigError, StoreSink
from airmeter.slo import evaluate_slos
from airmeter.slo_alerts import SloAlert, SloWatcher, WebhookAlerts, log_alert
from airmeter.slo_config import Objective, load_objectives, objectives_from_data
from airstore import MemoryStore, SqliteStore
from airstore.types import Store

NOW_S = 1_800_000_000.0  # a minute boundary
NOW_MS = int(NOW_S * 1000)
MIN = 60_000


def _calls(n: int, *, start_ms: int, span_ms: int, tool: str = "get_user", server: str = "shop",
           fail_every: int = 0, etype: str = "tool_error", slow_every: int = 0,
           seed: int = 0) -> list[CallRecord]:  # fmt: skip
    out = []
    for i in range(n):
        bad = fail_every and i % fail_every == 0
        slow = slow_every and i % slow_every == 1
        out.append(CallRecord(
            ts_ms=start_ms + (i * span_ms) // n, server=server, tool=tool, layer=Layer.L2,
            latency_ms=250.0 if slow else 20.0, ok=not bad,
            error_type=etype if bad else None, request_id=f"{seed}-{i}",
        ))  # fmt: skip
    return out


async def _store(records: list[CallRecord], store: Store | None = None) -> Store:
    store = store or MemoryStore()
    sink = StoreSink(store, writer="w")
    await sink.write(records)
    await sink.close()
    return store


def _clock(now: float = NOW_S) -> Any:
    return lambda: now


async def test_budget_and_burn_rates_match_an_independent_count() -> None:
    # 6 h of traffic, 1 call a second; 1 in 200 fails before the last hour, 1 in 20 within it
    older = _calls(5 * 3600, start_ms=NOW_MS - 6 * 3600_000, span_ms=5 * 3600_000,
                   fail_every=200)  # fmt: skip
    recent = _calls(3600, start_ms=NOW_MS - 3600_000, span_ms=3600_000, fail_every=20, seed=1)
    refused = _calls(300, start_ms=NOW_MS - 600_000, span_ms=600_000, fail_every=1,
                     etype="-32602", seed=2)  # not the tool's doing: never counted  # fmt: skip
    records = older + recent + refused
    store = await _store(records)
    target = Objective(tool="get_*", availability=0.99, period="7d")
    (status,) = await evaluate_slos(store, [target], clock=_clock())

    def window(minutes: int) -> tuple[int, int]:
        start = NOW_MS - minutes * MIN
        valid = [r for r in records if r.ts_ms >= start and r.error_type != "-32602"]
        return len(valid), sum(1 for r in valid if not r.ok)

    allowed = 0.01
    for minutes, got in ((5, status.burn_rate_5m), (30, status.burn_rate_30m),
                         (60, status.burn_rate_1h), (360, status.burn_rate_6h)):  # fmt: skip
        valid, bad = window(minutes)
        assert got == pytest.approx(bad / valid / allowed, rel=1e-9), minutes
    valid, bad = window(10_000)
    assert (status.valid_calls, status.bad_calls) == (valid, bad)
    assert status.budget_remaining == pytest.approx(1 - bad / (allowed * valid))
    assert status.burn_rate_1h == pytest.approx(5.0, rel=0.01)  # 5 % failing / 1 % allowed
    # a 7-day period scales the fast threshold to 0.02 x 168 h = 3.36: 5x over 1 h and 5 min
    assert status.state == "breach"
    assert status.to_dict()["period"] == "7d"


async def test_a_short_period_objectives_6h_burn_rate_does_not_depend_on_the_others() -> None:
    # 20 % failing 5 h ago, nothing since: a 2 h objective's 6 h window still sees it
    records = _calls(600, start_ms=NOW_MS - 5 * 3600_000, span_ms=600_000, fail_every=5)
    records += _calls(60, start_ms=NOW_MS - 600_000, span_ms=600_000, seed=1)
    store = await _store(records)
    short = Objective(tool="get_*", availability=0.99, period="2h")
    (alone,) = await evaluate_slos(store, [short], clock=_clock())
    beside = await evaluate_slos(
        store, [short, Objective(tool="other", availability=0.99, period="30d")], clock=_clock()
    )
    valid = [r for r in records if r.ts_ms >= NOW_MS - 360 * MIN]
    expected = sum(1 for r in valid if not r.ok) / len(valid) / 0.01
    assert alone.burn_rate_6h == pytest.approx(expected, rel=1e-9)
    assert [s.burn_rate_6h for s in beside if s.tool == "get_user"] == [alone.burn_rate_6h]
    assert alone.valid_calls == 60  # the budget still counts only the 2 h period


async def test_fast_burn_breaches_slow_burn_warns_and_latency_counts_slow_calls() -> None:
    fast = _calls(600, start_ms=NOW_MS - 3600_000, span_ms=3600_000, tool="pay", fail_every=4)
    slow = _calls(3600, start_ms=NOW_MS - 6 * 3600_000, span_ms=6 * 3600_000, tool="ship",
                  fail_every=25, seed=1)  # 4 % failing: 8x of a 0.5 % budget  # fmt: skip
    # days of good calls before: its 30-day budget is not spent yet (else it is "exhausted")
    ship_before = _calls(40_000, start_ms=NOW_MS - 5 * 86_400_000, span_ms=4 * 86_400_000,
                         tool="ship", seed=3)  # fmt: skip
    fine = _calls(600, start_ms=NOW_MS - 3600_000, span_ms=3600_000, tool="list_items",
                  slow_every=10, seed=2)  # 10 % slower than 100 ms  # fmt: skip
    store = await _store(fast + slow + ship_before + fine)
    objectives = [Objective(server="shop", availability=0.995),
                  Objective(tool="list_*", latency_p95_ms=100)]  # fmt: skip
    got = {(s.tool, s.kind): s for s in await evaluate_slos(store, objectives, clock=_clock())}
    assert got[("pay", "availability")].state == "breach"
    assert got[("ship", "availability")].state == "warning"
    assert got[("ship", "availability")].budget_remaining > 0
    assert got[("list_items", "availability")].state == "ok"
    latency = got[("list_items", "latency")]
    assert latency.bad_calls == 60
    assert latency.burn_rate_1h == pytest.approx(0.1 / 0.05)
    assert latency.to_dict()["threshold_ms"] == 100


async def test_alerts_fire_once_per_state_change_and_resolve(
    caplog: pytest.LogCaptureFixture,
) -> None:
    store = await _store(_calls(600, start_ms=NOW_MS - 300_000, span_ms=300_000, fail_every=2))
    await _store(_calls(40_000, start_ms=NOW_MS - 3 * 86_400_000, span_ms=86_400_000, seed=1),
                 store)  # good days before the burst: the budget is not spent  # fmt: skip
    seen: list[SloAlert] = []
    now = [NOW_S]
    watcher = SloWatcher(store, [Objective(availability=0.99)], sinks=[log_alert, seen.append],
                         clock=lambda: now[0])  # fmt: skip
    with caplog.at_level(logging.INFO, logger="airmeter.slo_alerts"):
        _, first = await watcher.check()
        _, again = await watcher.check()
        now[0] += 7 * 3600  # every window has passed the burst
        _, resolved = await watcher.check()
    assert [a.status.state for a in first] == ["breach"]
    assert again == []
    assert [(a.resolved, a.previous) for a in resolved] == [(True, "breach")]
    assert [a.status.state for a in seen] == ["breach", "ok"]
    assert "SLO BREACH" in caplog.messages[0]
    assert "shop/get_user" in caplog.messages[0]
    assert caplog.messages[1].startswith("SLO resolved")


@pytest.fixture
def receiver() -> Iterator[tuple[str, list[dict[str, Any]], threading.Event]]:
    got: list[dict[str, Any]] = []
    arrived = threading.Event()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            length = int(self.headers["Content-Length"])
            got.append(orjson.loads(self.rfile.read(length)))
            self.send_response(204)
            self.end_headers()
            arrived.set()

        def log_message(self, *args: Any) -> None:
            pass

    server = HTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/hook", got, arrived
    finally:
        server.shutdown()
        server.server_close()


async def test_a_webhook_receives_the_alert_and_its_resolve_as_json(
    receiver: tuple[str, list[dict[str, Any]], threading.Event],
) -> None:
    url, got, arrived = receiver
    store = await _store(_calls(600, start_ms=NOW_MS - 300_000, span_ms=300_000, fail_every=2))
    await _store(_calls(40_000, start_ms=NOW_MS - 3 * 86_400_000, span_ms=86_400_000, seed=1),
                 store)  # good days before the burst: the budget is not spent  # fmt: skip
    hook = WebhookAlerts(url)
    now = [NOW_S]
    watcher = SloWatcher(store, [Objective(availability=0.99)], sinks=[hook],
                         clock=lambda: now[0])  # fmt: skip
    _, sent = await watcher.check()
    assert len(sent) == 1
    assert await asyncio.to_thread(arrived.wait, 10)
    (body,) = got
    assert body["alert"] == "breach"
    assert body["slo"]["tool"] == "get_user"
    assert body["slo"]["state"] == "breach"
    assert "SLO BREACH" in body["message"]
    now[0] += 7 * 3600  # every window has passed the burst: the resolve goes out too
    _, resolved = await watcher.check()
    assert [a.resolved for a in resolved] == [True]
    await hook.drain(30)  # alerts go out in the background
    assert [(b["alert"], b["previous"], b["slo"]["state"]) for b in got[1:]] == [
        ("resolved", "breach", "ok")
    ]
    assert got[1]["message"].startswith("SLO resolved (breach -> ok)")
    assert (hook.sent, hook.failures, hook.dropped) == (2, 0, 0)


async def _alerts_of_four_watchers(open_store: Callable[[], Store]) -> list[str]:
    """Breaching calls stored once, then four watchers (four processes' connections) each
    checking twice: the states of the alerts they sent."""
    async with open_store() as writer:
        await _store(_calls(600, start_ms=NOW_MS - 300_000, span_ms=300_000, fail_every=2),
                     writer)  # fmt: skip
    sent: list[SloAlert] = []
    stores = [open_store() for _ in range(4)]
    for store in stores:
        await store.init()
    try:
        watchers = [SloWatcher(s, [Objective(availability=0.99)], sinks=[sent.append],
                               clock=_clock()) for s in stores]  # fmt: skip
        await asyncio.gather(*(w.check() for w in watchers))
        await asyncio.gather(*(w.check() for w in watchers))
    finally:
        for store in stores:
            await store.close()
    return [a.status.state for a in sent]


async def test_several_watchers_on_one_store_alert_once(tmp_path: Path) -> None:
    db = tmp_path / "air.db"
    assert await _alerts_of_four_watchers(lambda: SqliteStore(db)) == ["breach"]


def test_objectives_from_yaml_and_their_errors(tmp_path: Path) -> None:
    good = tmp_path / "slo.yml"
    good.write_text(
        "objectives:\n"
        "  - {tool: 'get_*', server: '*', availability: 0.995, latency_p95_ms: 300}\n"
        "  - {tool: search, latency_p99_ms: 800, period: 7d}\n"
    )
    first, second = load_objectives(good)
    assert [t.kind for t in first.targets()] == ["availability", "latency"]
    assert first.targets()[0].period == "30d"
    (p99,) = second.targets()
    assert (p99.target, p99.threshold_ms, p99.period) == (0.99, 800.0, "7d")
    for data, message in (
        ({"objectives": [{"tool": "x"}]}, "set availability"),
        ({"objectives": [{"availability": 1.5}]}, "between 0 and 1"),
        ({"objectives": [{"availability": 0.9, "period": "soon"}]}, "duration"),
        ({"objectives": [{"availability": 0.9, "typo": 1}]}, "unknown keys"),
        ({"nothing": []}, "objectives"),
    ):
        with pytest.raises(MeterConfigError, match=message):
            objectives_from_data(data)
    with pytest.raises(MeterConfigError, match="cannot read"):
        load_objectives(tmp_path / "missing.yml")


@pytest.mark.redis
async def test_several_watchers_on_one_redis_server_alert_once() -> None:
    from airstore import RedisStore
    from tests.redis_server import shared_redis_server, unique_prefix

    server = shared_redis_server()
    prefix = unique_prefix("slo-watch")
    opened = await _alerts_of_four_watchers(lambda: RedisStore(server.url(), prefix=prefix))
    assert opened == ["breach"]


@pytest.mark.redis
async def test_several_watchers_on_a_redis_cluster_alert_once() -> None:
    from airstore import RedisStore
    from tests.redis_server import unique_prefix
    from tests.redis_topology import shared_cluster

    url = shared_cluster().url()
    prefix = unique_prefix("slo-watch-cluster")
    opened = await _alerts_of_four_watchers(lambda: RedisStore(url, prefix=prefix))
    assert opened == ["breach"]


async def test_objectives_of_different_periods_keep_their_closed_hour_sums(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import airmeter.slo as slo_module

    records = _calls(2000, start_ms=NOW_MS - 9 * 24 * 3600_000, span_ms=9 * 24 * 3600_000)
    store = await _store(records)
    objectives = [Objective(availability=0.99, period="30d"),
                  Objective(availability=0.995, period="7d")]  # fmt: skip
    evaluator = slo_module.SloEvaluator(store, objectives, clock=_clock())
    first = await evaluator.evaluate()
    summed: list[int] = []
    original = slo_module._period_sums

    def counting(hours: Any, key: Any, threshold: Any) -> tuple[int, int]:
        summed.append(len(hours))
        return original(hours, key, threshold)

    monkeypatch.setattr(slo_module, "_period_sums", counting)
    assert await evaluator.evaluate() == first
    assert sum(summed) <= 2 * 2  # only the two open hours of each objective, afresh
