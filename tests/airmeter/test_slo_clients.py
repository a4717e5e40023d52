"""SLO objectives with a client selector: counted over the raw call log per client, and honest
about how much of the period that log covers (a real SQLite store whose log retention dropped the
older calls the rollups still hold)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from airmeter import CALLS_NAMESPACE, CallRecord, Layer, MeterConfigError, StoreSink
from airmeter.slo import SloStatus, evaluate_slos
from airmeter.slo_config import Objective, objectives_from_data
from airstore import SqliteStore

NOW_S = 1_800_000_000.0  # a minute boundary
NOW_MS = int(NOW_S * 1000)
MIN = 60_000


def _calls(n: int, *, start_ms: int, client: str, fail_every: int = 0,
           seed: str = "") -> list[CallRecord]:  # fmt: skip
    return [
        CallRecord(ts_ms=start_ms + i * 1000, server="shop", tool="get_user", layer=Layer.L2,
                   latency_ms=20.0, ok=not (fail_every and i % fail_every == 0),
                   error_type="tool_error" if fail_every and i % fail_every == 0 else None,
                   request_id=f"{seed}{client}-{i}", client_id=client, auth="oauth")
        for i in range(n)
    ]  # fmt: skip


async def _write(store: SqliteStore, records: list[CallRecord]) -> None:
    sink = StoreSink(store, writer="w")
    await sink.write(records)
    await sink.close()


def _clock() -> Any:
    return lambda: NOW_S


def _by_client(statuses: list[SloStatus]) -> dict[str | None, SloStatus]:
    return {s.client: s for s in statuses}


async def test_each_client_objective_counts_only_its_clients_calls(tmp_path: Path) -> None:
    store = SqliteStore(tmp_path / "db.sqlite")
    await store.init()
    try:
        start = NOW_MS - 4 * MIN
        await _write(store, _calls(100, start_ms=start, client="ci-bot", fail_every=2)
                     + _calls(100, start_ms=start, client="reports-app"))  # fmt: skip
        objectives = [Objective(client="ci-*", availability=0.99, period="1d"),
                      Objective(client="reports-*", availability=0.99, period="1d"),
                      Objective(availability=0.99, period="1d")]  # fmt: skip
        found = _by_client(await evaluate_slos(store, objectives, clock=_clock()))
    finally:
        await store.close()
    ci, reports, every = found["ci-*"], found["reports-*"], found[None]
    assert (ci.valid_calls, ci.bad_calls, ci.state) == (100, 50, "breach")
    assert (reports.valid_calls, reports.bad_calls, reports.state) == (100, 0, "ok")
    assert reports.budget_remaining == 1.0
    assert reports.burn_rate_5m == 0.0
    assert (every.valid_calls, every.bad_calls) == (200, 50)  # from the rollups, as before
    # the log reaches back over the whole day (nothing older was ever recorded)
    assert ci.raw_log_covers_s == 86_400.0
    assert not ci.partial
    assert ci.coverage_note is None
    assert ci.key != every.key
    assert "[client ci-*]" in ci.key
    assert ci.to_dict()["client"] == "ci-*"
    assert ci.to_dict()["evaluated_over"] == "raw log"
    assert "client" not in every.to_dict()


async def test_a_period_longer_than_the_raw_log_is_evaluated_over_the_log_and_says_so(
    tmp_path: Path,
) -> None:
    store = SqliteStore(tmp_path / "db.sqlite")
    await store.init()
    try:
        # eight hours ago: 200 failing calls of ci-bot; then the log keeps only the newest
        await _write(store, _calls(200, start_ms=NOW_MS - 8 * 60 * MIN, client="ci-bot",
                                   fail_every=1, seed="old"))  # fmt: skip
        await store.set_log_retention(CALLS_NAMESPACE, max_bytes=4_000)
        await _write(store, _calls(30, start_ms=NOW_MS - 20 * MIN, client="ci-bot"))
        left = await store.query(CALLS_NAMESPACE, limit=1000)
        assert left
        assert min(int(e["_ts"]) for e in left) >= NOW_MS - 20 * MIN
        statuses = await evaluate_slos(
            store, [Objective(client="ci-*", availability=0.99, period="1d")], clock=_clock()
        )
    finally:
        await store.close()
    (ci,) = statuses
    assert (ci.valid_calls, ci.bad_calls) == (len(left), 0)  # what the log holds
    assert ci.partial
    assert ci.raw_log_covers_s is not None
    oldest = min(int(e["_ts"]) for e in left)
    assert ci.raw_log_covers_s == (NOW_MS - oldest) / 1000  # from the oldest call the log holds
    assert re.fullmatch(r"evaluated over the raw log: covers 1\d(\.\d)?m of the 1d window",
                        ci.coverage_note or "")  # fmt: skip
    assert ci.to_dict()["partial"] is True
    assert ci.to_dict()["note"] == ci.coverage_note


@pytest.mark.parametrize("value", [5, "", ["ci-*"], True])
def test_a_client_that_is_not_a_glob_is_refused_naming_the_key(value: object) -> None:
    data = {"objectives": [{"tool": "*", "availability": 0.99},
                           {"client": value, "availability": 0.99}]}  # fmt: skip
    with pytest.raises(MeterConfigError, match=r"objectives\[1\]: client must be a glob"):
        objectives_from_data(data)
