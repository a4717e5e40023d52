"""A rollup row that is well-formed JSON but out of range (another program, a bad restore, a
hand edit) is skipped like any damaged minute document: it never breaks `air meter report`,
a snapshot or an SLO evaluation, and never skews their numbers."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest

from airmeter import CallRecord, Layer, StoreSink
from airmeter.rollups import ROLLUPS_NAMESPACE, hour_namespace, hour_of, minute_key
from airmeter.slo import SloEvaluator
from airmeter.slo_config import Objective
from airmeter.snapshot import snapshot
from airstore import FileStore
from tests.air_process import run_air

MIN_MS = 60_000
GOOD_ROW: dict[str, Any] = {
    "server": "shop", "instance": "evil", "tool": "get_user", "layer": 2, "calls": 2,
    "errors": 1, "errors_by_type": {"tool_error": 1}, "latency_sum": 3.0, "latency_max": 2.0,
    "cost": 6.0, "tokens_in": 0, "tokens_out": 0, "hist": [10, 2],
}  # fmt: skip
DAMAGE: dict[str, dict[str, Any]] = {
    "layer past L7": {"layer": 99},
    "layer 0": {"layer": 0},
    "negative calls": {"calls": -5, "errors": 0},
    "more errors than calls": {"errors": 50},
    "bucket counts that are text": {"hist": [10, "x"]},
    "a bucket past any float": {"hist": [10**9, 2]},
    "a negative bucket count": {"hist": [10, -2]},
}


async def _seed(path: Path, damage: dict[str, Any]) -> int:
    """Three good calls through a real StoreSink, and one damaged row of another writer."""
    now = int(time.time() * 1000) // MIN_MS * MIN_MS
    async with FileStore(path) as store:
        sink = StoreSink(store, writer="good", persist_interval=0)
        await sink.write([
            CallRecord(ts_ms=now - 5 * MIN_MS + i, server="shop", tool="get_user",
                       layer=Layer.L2, latency_ms=4.0, ok=True, request_id=str(i))
            for i in range(3)
        ])  # fmt: skip
        await sink.persist()
        minute = now - 3 * MIN_MS
        doc = {"format": 2, "minute": minute, "rows": [{**GOOD_ROW, **damage}]}
        await store.set(hour_namespace(hour_of(minute)), minute_key(minute, "evil"), doc)
        await store.set(ROLLUPS_NAMESPACE, "hours:evil", [hour_of(minute)])
    return now


@pytest.mark.parametrize("damage", DAMAGE.values(), ids=DAMAGE.keys())
async def test_an_out_of_range_row_is_skipped_by_snapshots_and_slos(
    tmp_path: Path, damage: dict[str, Any]
) -> None:
    now = await _seed(tmp_path, damage)
    async with FileStore(tmp_path, read_only=True) as store:
        snap = await snapshot(store, since=now - 60 * MIN_MS, until=now + MIN_MS)
        assert (snap.total_calls, snap.error_count, snap.success_rate) == (3, 0, 1.0)
        assert snap.p99_ms is not None
        assert abs(snap.p99_ms - 4.0) < 0.1
        objective = Objective(tool="get_user", availability=0.99)
        evaluator = SloEvaluator(store, [objective], clock=lambda: now / 1000)
        assert [s.valid_calls for s in await evaluator.evaluate()] == [3]


def test_air_meter_report_reads_past_an_out_of_range_row(tmp_path: Path) -> None:
    import asyncio

    asyncio.run(_seed(tmp_path / "data", DAMAGE["layer past L7"]))
    done = run_air(
        "meter", "report", "--store", f"file://{tmp_path}/data", "--since", "all",
        "--format", "json",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["total_calls"] == 3
