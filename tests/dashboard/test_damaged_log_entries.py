"""Call-log entries that are JSON objects but not call records (fields of the wrong type,
written by something else into the data dir) are skipped: the dashboard's page and a tool's
detail still show every real call."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from airmeter import CallRecord, Layer, StoreSink, recent_calls
from airmeter.record import CALLS_NAMESPACE
from airstore import FileStore
from dashboard.data import DashboardData, open_store
from dashboard.types import Filters

NOW_MS = 1_790_000_000_000
MIN_MS = 60_000
DAMAGED: dict[str, dict[str, Any]] = {
    "error_type an object": {"error_type": {"a": 1}},
    "error_type a list": {"error_type": [1, 2]},
    "error_class a number": {"error_class": 5},
    "message an object": {"error_message": {"x": 1}},
    "ok a string": {"ok": "no"},
    "latency text in a list": {"latency_ms": ["1"]},
}


def _entry(tool: str, **fields: Any) -> dict[str, Any]:
    base = {"_ts": NOW_MS - 2 * MIN_MS, "server": "shop", "tool": tool, "layer": "L2",
            "latency_ms": 1.0, "ok": False, "error_type": "x", "request_id": tool}  # fmt: skip
    return {**base, **fields}


@pytest.mark.parametrize("damage", DAMAGED.values(), ids=DAMAGED.keys())
async def test_a_log_entry_of_the_wrong_types_is_skipped_by_the_page_and_the_detail(
    tmp_path: Path, damage: dict[str, Any]
) -> None:
    real = CallRecord(
        ts_ms=NOW_MS - 3 * MIN_MS, server="shop", tool="get_user", layer=Layer.L2,
        latency_ms=2.0, ok=False, error_type="tool_error", request_id="real",
    )  # fmt: skip
    async with FileStore(tmp_path / "data") as writer:
        sink = StoreSink(writer, writer="w", persist_interval=0)
        await sink.write([real])
        await sink.persist()
        await writer.append(CALLS_NAMESPACE, _entry("get_user", **damage))
    store = await open_store(f"file://{tmp_path}/data")
    data = DashboardData(store, url="test", clock=lambda: NOW_MS / 1000)
    try:
        rng = data.resolve("1h")
        view = await data.view(rng, Filters())
        assert [(e.tool, e.request_id, e.error_class) for e in view.recent_errors] == [
            ("get_user", "real", "tool_error")
        ]
        detail = await data.tool_detail("get_user", rng)
        assert [c.request_id for c in detail.latest] == ["real"]
        assert [r.request_id for r in await recent_calls(store, now_ms=NOW_MS)] == ["real"]
    finally:
        await data.close()
