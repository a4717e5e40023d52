"""``air meter report``: table and JSON checked against the raw call log."""

from __future__ import annotations

import re
import subprocess
import sys
from datetime import datetime, timedelta
from pathlib import Path

import orjson
import pytest

from aircore.cli import main
from aircore.cli.meter import _prometheus_renderer, parse_since
from airmeter import CALLS_NAMESPACE, Meter
from airstore.file import FileStore
from tests.airmeter.helpers import close, independent, make_records


async def _fill(path: Path, n: int = 2000) -> list[dict[str, object]]:
    async with FileStore(path) as store:
        async with Meter(store=store, instance_id="w1") as meter:
            for r in make_records(n):
                meter.record(r)
        return await store.query(CALLS_NAMESPACE, limit=n + 1)


async def test_json_report_matches_the_raw_log(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    raw = await _fill(tmp_path / "data")
    exp = independent(raw)
    url = f"file://{tmp_path / 'data'}"
    code = await _in_thread(
        ["meter", "report", "--store", url, "--since", "all", "--format", "json"]
    )
    assert code == 0
    data = orjson.loads(capsys.readouterr().out)
    assert data["total_calls"] == exp["total"]
    assert data["error_count"] == exp["errors"]
    assert data["success_rate"] == pytest.approx(1 - exp["errors"] / exp["total"])
    for q in ("p50", "p95", "p99"):
        assert close(data[f"{q}_ms"], exp[q])
    assert {k: v["calls"] for k, v in data["layers"].items() if v["calls"]} == exp["by_layer"]
    assert {t["tool"]: t["calls"] for t in data["tools"]} == {
        k: len(v) for k, v in exp["by_tool"].items()
    }
    code = await _in_thread(
        [
            "meter",
            "report",
            "--store",
            url,
            "--since",
            "all",
            "--format",
            "json",
            "--tool",
            "get_user",
        ]
    )
    assert orjson.loads(capsys.readouterr().out)["total_calls"] == len(exp["by_tool"]["get_user"])


async def test_table_report_shows_the_same_numbers(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    raw = await _fill(tmp_path / "data")
    exp = independent(raw)
    code = await _in_thread(
        ["meter", "report", "--store", f"file://{tmp_path / 'data'}", "--since", "all"]
    )
    out = capsys.readouterr().out
    assert code == 0
    assert re.search(rf"^calls\s+{exp['total']}\b", out, re.M)
    assert re.search(rf"^errors\s+{exp['errors']}\b", out, re.M)
    for tool, entries in exp["by_tool"].items():
        row = re.search(rf"^{tool}\s+(L\d)\s+(\d+)\s+(\d+)", out, re.M)
        assert row is not None, tool
        assert row.group(1) == entries[0]["layer"]
        assert int(row.group(2)) == len(entries)
        assert int(row.group(3)) == sum(1 for e in entries if not e["ok"])
    p95 = re.search(r"p95 ([\d.]+) ms", out)
    assert p95 is not None
    assert close(float(p95.group(1)), exp["p95"], rel=0.03)


async def test_empty_window_says_how_to_get_data(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    await _fill(tmp_path / "data", 10)  # records are from 2027: none in the last hour
    code = await _in_thread(["meter", "report", "--store", f"file://{tmp_path / 'data'}"])
    assert code == 0
    assert "No calls recorded" in capsys.readouterr().out


def test_missing_store_and_bad_since_are_clear_errors(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(["meter", "report", "--store", f"file://{tmp_path / 'nope'}"])
    assert code == 1
    assert "air meter report:" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["meter", "report", "--since", "yesterday-ish"])


def _has_renderer() -> bool:
    try:
        _prometheus_renderer()
    except Exception:
        return False
    return True


def test_prometheus_format_renders_or_says_it_is_not_available(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code = main(["meter", "report", "--store", "memory://", "--format", "prometheus"])
    captured = capsys.readouterr()
    if _has_renderer():
        assert code == 0
        assert "# TYPE" in captured.out
    else:
        assert code == 2
        assert "not available yet" in captured.err


def test_since_parses_durations_times_and_all() -> None:
    assert parse_since("15m") == timedelta(minutes=15)
    assert parse_since("7d") == timedelta(days=7)
    assert parse_since("all") is None
    assert parse_since("2026-01-02T03:04:05") == datetime(2026, 1, 2, 3, 4, 5)


def test_air_meter_report_runs_as_a_console_command(tmp_path: Path) -> None:
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "aircore.cli",
            "meter",
            "report",
            "--store",
            "memory://",
            "--format",
            "json",
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    assert orjson.loads(out.stdout)["total_calls"] == 0


async def _in_thread(argv: list[str]) -> int:
    """``main`` runs its own event loop; call it off this test's loop."""
    import asyncio

    return await asyncio.to_thread(main, argv)
