"""``air meter report``: table and JSON checked against the raw call log."""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
import time
from datetime import datetime, timedelta
from pathlib import Path

import orjson
import pytest

from aircli import main
from aircli.meter import parse_since
from airmeter import CALLS_NAMESPACE, Meter
from airstore import SqliteStore
from airstore.file import FileStore
from tests.airmeter.helpers import close, independent, make_records
from tests.airmeter.prom_parser import parse


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


async def test_report_reads_a_sqlite_store_read_only(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "meter.db"
    async with SqliteStore(db) as store:
        async with Meter(store=store, instance_id="w1") as meter:
            for r in make_records(300):
                meter.record(r)
        exp = independent(await store.query(CALLS_NAMESPACE, limit=1000))
        # the writer is still open: the report opens its own read-only connection
        argv = ["meter", "report", "--store", f"sqlite:///{db}", "--since", "all"]
        assert await _in_thread([*argv, "--format", "json"]) == 0
    data = orjson.loads(capsys.readouterr().out)
    assert (data["total_calls"], data["error_count"]) == (exp["total"], exp["errors"])
    assert await _in_thread(["meter", "report", "--store", f"sqlite:///{tmp_path / 'no.db'}"]) == 1
    assert "does not exist" in capsys.readouterr().err
    assert not (tmp_path / "no.db").exists()


async def test_prometheus_format_exposes_the_logged_numbers(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    raw = await _fill(tmp_path / "data", n=500)
    exp = independent(raw)
    url = f"file://{tmp_path / 'data'}"
    argv = ["meter", "report", "--store", url, "--since", "all", "--format", "prometheus"]
    assert await _in_thread(argv) == 0
    families = parse(capsys.readouterr().out)  # strict: a scraper would accept it
    calls = families["air_mcp_calls_total"].samples
    assert sum(x.value for x in calls) == exp["total"]
    assert sum(x.value for x in calls if x.labels["ok"] == "false") == exp["errors"]
    by_layer = {x.labels["layer"]: x.value for x in families["air_mcp_layer_calls_total"].samples}
    assert {k: v for k, v in by_layer.items() if v} == exp["by_layer"]
    errors: dict[str, float] = {}
    for x in families["air_mcp_errors_total"].samples:
        errors[x.labels["error_type"]] = errors.get(x.labels["error_type"], 0) + x.value
    assert errors == exp["by_type"]


def test_since_parses_durations_times_and_all() -> None:
    assert parse_since("15m") == timedelta(minutes=15)
    assert parse_since("7d") == timedelta(days=7)
    assert parse_since("all") is None
    assert parse_since("2026-01-02T03:04:05") == datetime(2026, 1, 2, 3, 4, 5)


@pytest.mark.parametrize("since", ["2099-01-01", "2099-01-01T00:00:00+00:00"])
def test_a_since_in_the_future_is_refused_as_a_usage_error(since: str) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "aircli", "meter", "report", "--store", "memory://",
         "--since", since],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert done.returncode == 2
    assert done.stdout == ""
    assert f"argument --since: --since {since!r} is in the future" in done.stderr
    assert "Traceback" not in done.stderr
    with pytest.raises(argparse.ArgumentTypeError, match="is in the future"):
        parse_since(since)


@pytest.mark.parametrize(
    ("since", "code"),
    [("99999999d", 0), ("10000000000000000000000m", 0), ("1969-07-20", 0), ("0001-01-01", 2)],
)
def test_a_since_before_1970_means_every_call_and_one_no_clock_shows_is_a_usage_error(
    tmp_path: Path, since: str, code: int
) -> None:
    """A duration reaching back before 1970 holds every call, as an ISO time then does; only
    an ISO time the clock cannot show is refused (it ended in a traceback)."""
    import asyncio

    async def seed() -> None:
        async with FileStore(tmp_path / "data") as store, Meter(store=store) as meter:
            for rec in make_records(5, start_ms=int(time.time() * 1000) - 120_000, minutes=1):
                meter.record(rec)

    asyncio.run(seed())
    done = subprocess.run(
        [sys.executable, "-m", "aircli", "meter", "report", "--store",
         f"file://{tmp_path}/data", "--since", since],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert "Traceback" not in done.stderr
    assert done.returncode == code, done.stderr
    if code:
        assert f"argument --since: --since {since!r}" in done.stderr
    else:
        assert re.search(r"\b5 calls\b|calls\s+5\b", done.stdout), done.stdout


def test_air_meter_report_runs_as_a_console_command(tmp_path: Path) -> None:
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "aircli",
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
