"""render_snapshot: a Meter's snapshot as valid exposition text with the snapshot's numbers."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pytest

from aircli import main
from airmeter import CallRecord, Layer, Meter, PrometheusSink
from airmeter.prometheus_snapshot import render_snapshot
from airmeter.snapshot_types import Snapshot
from airstore import MemoryStore
from airstore.file import FileStore
from tests.airmeter.prom_parser import parse


def _rec(tool: str, layer: Layer, latency_ms: float, error: str | None = None) -> CallRecord:
    return CallRecord(
        ts_ms=time.time_ns() // 1_000_000,
        server="s",
        tool=tool,
        layer=layer,
        latency_ms=latency_ms,
        ok=error is None,
        error_type=error,
    )


RECORDS = [
    *(_rec("get_user", Layer.L2, float(ms)) for ms in range(1, 101)),
    _rec("fetch_url", Layer.L5, 300.0, "tool_error"),
    _rec("fetch_url", Layer.L5, 200.0, "-32602"),
    _rec("fetch_url", Layer.L5, 100.0),
]


async def _snapshot_and_sink() -> tuple[Snapshot, PrometheusSink]:
    sink = PrometheusSink()
    async with MemoryStore() as store, Meter(store=store, sinks=[sink]) as meter:
        for record in RECORDS:
            meter.record(record)
        await meter.flush()
        return await meter.snapshot(), sink


async def test_snapshot_renders_valid_text_with_the_snapshot_numbers() -> None:
    snap, _ = await _snapshot_and_sink()
    families = parse(render_snapshot(snap))
    calls = {
        (s.labels["tool"], s.labels["layer"], s.labels["ok"]): s.value
        for s in families["air_mcp_calls_total"].samples
    }
    assert calls == {
        ("get_user", "L2", "true"): 100,
        ("fetch_url", "L5", "true"): 1,
        ("fetch_url", "L5", "false"): 2,
    }
    errors = {
        (s.labels["tool"], s.labels["error_type"]): s.value
        for s in families["air_mcp_errors_total"].samples
    }
    assert errors == {("fetch_url", "tool_error"): 1, ("fetch_url", "-32602"): 1}
    summary = families["air_mcp_tool_duration_seconds"]
    assert summary.type == "summary"
    quantiles = {
        (s.labels["tool"], s.labels["quantile"]): s.value
        for s in summary.samples
        if "quantile" in s.labels
    }
    get_user = snap.tool("get_user")
    assert get_user is not None
    assert get_user.p95_ms is not None
    assert quantiles[("get_user", "0.95")] == pytest.approx(get_user.p95_ms / 1000)
    counts = {s.labels["tool"]: s.value for s in summary.samples if s.name.endswith("_count")}
    assert counts == {"get_user": 100, "fetch_url": 3}
    layer_calls = {
        s.labels["layer"]: s.value for s in families["air_mcp_layer_calls_total"].samples
    }
    assert layer_calls["L2"] == 100
    assert layer_calls["L5"] == 3
    (ratio,) = families["air_mcp_success_ratio"].samples
    assert ratio.value == pytest.approx(101 / 103)


async def test_the_sink_and_the_snapshot_agree_on_calls_and_errors() -> None:
    snap, sink = await _snapshot_and_sink()
    from_sink = parse(sink.render())
    from_snapshot = parse(render_snapshot(snap))
    for family in ("air_mcp_calls_total", "air_mcp_errors_total"):
        a = sorted((tuple(sorted(s.labels.items())), s.value) for s in from_sink[family].samples)
        b = sorted(
            (tuple(sorted(s.labels.items())), s.value) for s in from_snapshot[family].samples
        )
        assert a == b


def test_air_meter_report_prometheus_is_strictly_valid(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    async def fill() -> None:
        async with FileStore(tmp_path / "data") as store, Meter(store=store) as meter:
            for record in RECORDS:
                meter.record(record)

    asyncio.run(fill())
    url = f"file://{tmp_path / 'data'}"
    code = main(["meter", "report", "--store", url, "--since", "all", "--format", "prometheus"])
    assert code == 0
    families = parse(capsys.readouterr().out)
    total = sum(s.value for s in families["air_mcp_calls_total"].samples)
    assert total == len(RECORDS)
