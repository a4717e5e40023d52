"""``air meter slo`` as a real process (issue 32, §1.2 and §1.3): it finds the objectives by the
dashboard's rule (``--config``, else ``.air/slo.yml``, else the file ``air demo`` wrote), names
what it looked for when there is none, shows an overspent budget as ``exhausted`` (not ``ok``)
and exits non-zero when an objective is missed or burning, as ``--fail-on`` says."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import orjson
import pytest

from aircli._demo_history import demo_objectives
from aircli.dashboard import _slo_file
from aircli.meter_slo import EXIT_FAILING
from airmeter import CallRecord, Layer, StoreSink
from airmeter.slo import SloStatus
from airstore.file import FileStore
from dashboard.meter_panels import _slo_row
from dashboard.meter_watch import slo_alerts, slo_rows
from tests.air_process import run_air

HOUR_MS = 3_600_000
CSS = Path(__file__).resolve().parents[2] / "dashboard" / "assets" / "style.css"


async def _fill(data: Path, *, failed_hours_ago: float | None) -> None:
    """``get_user`` called every 10 s over the last 6 h; with ``failed_hours_ago``, a burst of
    failures that long ago (over, so no burn now), enough to overspend a 99.5 % budget."""
    now_ms = int(time.time() * 1000)
    records = []
    for i in range(6 * 360):
        ts = now_ms - 6 * HOUR_MS + i * 10_000
        bad = (
            failed_hours_ago is not None
            and 0 <= (now_ms - ts) - failed_hours_ago * HOUR_MS < 1_200_000
        )
        records.append(CallRecord(ts_ms=ts, server="demo", tool="get_user", layer=Layer.L2,
                                  latency_ms=5.0, ok=not bad,
                                  error_type="tool_error" if bad else None,
                                  request_id=str(i)))  # fmt: skip
    async with FileStore(data) as store:
        sink = StoreSink(store, writer="w")
        await sink.write(records)
        await sink.close()


def _slo(cwd: Path, *args: str) -> tuple[int, str, str]:
    done = run_air("meter", "slo", "--store", "file://.air/data", *args, cwd=cwd)
    return done.returncode, done.stdout, done.stderr


async def test_after_air_demo_the_demo_objectives_are_found_as_the_dashboard_finds_them(
    tmp_path: Path,
) -> None:
    await _fill(tmp_path / ".air" / "data", failed_hours_ago=None)
    demo_objectives(tmp_path / ".air")  # what `air demo` writes
    code, out, err = await asyncio.to_thread(_slo, tmp_path, "--format", "json")
    assert code == 0, err
    assert "objectives from .air/demo-slo.yml" in err
    entries = orjson.loads(out)["objectives"]
    assert {(e["tool"], e["kind"], e["state"]) for e in entries} == {
        ("get_user", "availability", "ok"), ("get_user", "latency", "ok")}  # fmt: skip


def test_the_dashboard_finds_the_same_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    assert _slo_file(None, "file://.air/data") is None  # none: the panel says how to add one
    demo_objectives(tmp_path / ".air")
    assert _slo_file(None, "file://.air/data") == ".air/demo-slo.yml"
    (tmp_path / ".air" / "slo.yml").write_text("objectives: []\n")
    assert _slo_file(None, "file://.air/data") == ".air/slo.yml"
    assert _slo_file("x.yml", "file://.air/data") == "x.yml"


async def test_a_project_slo_file_comes_before_the_demo_one_and_config_before_both(
    tmp_path: Path,
) -> None:
    await _fill(tmp_path / ".air" / "data", failed_hours_ago=None)
    demo_objectives(tmp_path / ".air")
    (tmp_path / ".air" / "slo.yml").write_text(
        "objectives:\n  - {tool: get_user, availability: 0.9}\n"
    )
    (tmp_path / "other.yml").write_text("objectives:\n  - {tool: get_user, latency_p99_ms: 100}\n")
    code, out, err = await asyncio.to_thread(_slo, tmp_path, "--format", "json")
    assert code == 0, err
    assert "objectives from .air/slo.yml" in err
    assert [e["target"] for e in orjson.loads(out)["objectives"]] == [0.9]
    code, out, err = await asyncio.to_thread(
        _slo, tmp_path, "--format", "json", "--config", "other.yml"
    )
    assert code == 0, err
    assert [e["kind"] for e in orjson.loads(out)["objectives"]] == ["latency"]


async def test_without_objectives_the_error_names_every_place_looked(tmp_path: Path) -> None:
    await _fill(tmp_path / ".air" / "data", failed_hours_ago=None)
    code, _, err = await asyncio.to_thread(_slo, tmp_path)
    assert code == 1
    assert "no SLO objectives: looked for '.air/slo.yml', '.air/demo-slo.yml'" in err
    assert "--config" in err


async def test_an_overspent_budget_is_exhausted_red_and_fails_the_command(tmp_path: Path) -> None:
    await _fill(tmp_path / ".air" / "data", failed_hours_ago=4)
    (tmp_path / ".air" / "slo.yml").write_text(
        "objectives:\n  - {tool: get_user, availability: 0.995, period: 1d}\n"
    )
    code, out, err = await asyncio.to_thread(_slo, tmp_path, "--format", "json")
    (entry,) = orjson.loads(out)["objectives"]
    assert entry["budget_remaining"] < 0
    assert entry["burn_rate_5m"] == 0  # the burst is over: no burn-rate state would say it
    assert entry["state"] == "exhausted"
    assert code == EXIT_FAILING
    assert "1 of 1 objectives failing (exhausted; --fail-on breach)" in err
    code, table, _ = await asyncio.to_thread(_slo, tmp_path)
    assert code == EXIT_FAILING
    assert "exhausted" in table
    assert (await asyncio.to_thread(_slo, tmp_path, "--fail-on", "never"))[0] == 0
    assert (await asyncio.to_thread(_slo, tmp_path, "--fail-on", "warning"))[0] == EXIT_FAILING
    status = SloStatus(
        **{"threshold_ms": None, **{k: v for k, v in entry.items() if k in _STATUS_KEYS}}
    )
    (row,), _ = slo_rows([status], {}, int(time.time() * 1000))
    rendered = _slo_row(row)
    assert rendered.className == "slo-row slo-exhausted"
    assert "#be123c" in str(rendered.children[1].children[0].children.style)  # type: ignore[union-attr]
    assert "slo-state-exhausted" in str(rendered.children[-1].className)  # type: ignore[union-attr]
    assert ".slo-state-exhausted" in CSS.read_text()
    (badge,) = slo_alerts([status])
    assert badge.text.startswith("SLO exhausted: demo/get_user")


@pytest.mark.parametrize(("fail_on", "code"), [("breach", 0), ("warning", 0), ("never", 0)])
async def test_a_healthy_objective_passes_whatever_fail_on(
    tmp_path: Path, fail_on: str, code: int
) -> None:
    await _fill(tmp_path / ".air" / "data", failed_hours_ago=None)
    demo_objectives(tmp_path / ".air")
    assert (await asyncio.to_thread(_slo, tmp_path, "--fail-on", fail_on))[0] == code


_STATUS_KEYS = {"tool", "server", "kind", "target", "threshold_ms", "period", "budget_remaining",
                "burn_rate_5m", "burn_rate_30m", "burn_rate_1h", "burn_rate_6h", "state",
                "valid_calls", "bad_calls"}  # fmt: skip
