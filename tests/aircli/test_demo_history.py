"""``air demo --history``: durations, and the planned tools kept in step with the demo server."""

from __future__ import annotations

import pytest

from aircli._demo_history import DEMO_LAYERS, HistoryError, parse_history
from aircli.demo_server import server


@pytest.mark.parametrize(("text", "days"), [("7d", 7.0), ("36h", 1.5), ("0", 0.0), (" 2 d", 2.0)])
def test_history_durations_are_days_or_hours(text: str, days: float) -> None:
    assert parse_history(text) == days


@pytest.mark.parametrize("text", ["7", "7x", "-1d", "31d", "", "d", "1e3d"])
def test_a_bad_history_duration_is_a_clear_error(text: str) -> None:
    with pytest.raises(HistoryError, match="--history"):
        parse_history(text)


def test_the_history_plans_the_demo_servers_tools_at_their_layers() -> None:
    assert {name: tool.layer for name, tool in server.tools.items()} == DEMO_LAYERS
