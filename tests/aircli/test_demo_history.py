"""``air demo --history``: durations, the planned tools kept in step with the demo server, and
the objectives the demo's dashboard shows."""

from __future__ import annotations

from pathlib import Path

import pytest

from aircli._demo_history import (
    DEMO_LAYERS,
    DEMO_OBJECTIVES,
    HistoryError,
    demo_objectives,
    parse_history,
)
from aircli.demo_server import server
from airmeter.slo_config import load_objectives


@pytest.mark.parametrize(("text", "days"), [("7d", 7.0), ("36h", 1.5), ("0", 0.0), (" 2 d", 2.0)])
def test_history_durations_are_days_or_hours(text: str, days: float) -> None:
    assert parse_history(text) == days


@pytest.mark.parametrize("text", ["7", "7x", "-1d", "31d", "", "d", "1e3d"])
def test_a_bad_history_duration_is_a_clear_error(text: str) -> None:
    with pytest.raises(HistoryError, match="--history"):
        parse_history(text)


def test_the_history_plans_the_demo_servers_tools_at_their_layers() -> None:
    assert {name: tool.layer for name, tool in server.tools.items()} == DEMO_LAYERS


def test_the_demo_objectives_are_written_once_and_load_as_air_meter_slo_reads_them(
    tmp_path: Path,
) -> None:
    path = Path(demo_objectives(tmp_path / "air"))
    assert path.read_text(encoding="utf-8") == DEMO_OBJECTIVES
    path.write_text("objectives: [{tool: ping, availability: 0.9}]\n", encoding="utf-8")
    assert demo_objectives(tmp_path / "air") == str(path)  # a user's edit is kept
    targets = [t for o in load_objectives(str(path)) for t in o.targets()]
    assert [(t.tool, t.kind) for t in targets] == [("ping", "availability")]
    fresh = Path(demo_objectives(tmp_path / "other"))
    shipped = [(t.tool, t.kind) for o in load_objectives(str(fresh)) for t in o.targets()]
    assert ("fetch_url", "availability") in shipped
    assert len(shipped) == 5
