"""``air demo`` with careless input: a bad value is one clear line and a non-zero exit, before
any traffic and without a traceback."""

from __future__ import annotations

from pathlib import Path

import pytest

from aircli import main


def test_a_store_where_the_servers_log_cannot_be_written_is_one_clear_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("not a directory\n", encoding="utf-8")
    store = f"file://{blocker / 'data'}"

    code = main(["demo", "--no-dashboard", "--calls", "1", "--history", "0", "--store", store])

    said = capsys.readouterr().err
    assert code == 1
    assert f"air demo: cannot write the demo server's log {blocker / 'demo-server.log'}" in said
    assert "Traceback" not in said
    assert "calls in" not in said  # no traffic was sent
    assert blocker.read_text(encoding="utf-8") == "not a directory\n"


@pytest.mark.parametrize("calls", ["100000000000000000000", "1000001"])
def test_more_calls_than_the_demo_bounds_are_refused_before_any_traffic(
    calls: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(["demo", "--no-dashboard", "--calls", calls, "--store", "memory://"])

    said = capsys.readouterr().err
    assert code == 2
    assert "air demo: --calls must be" in said
    assert "1,000,000" in said
    assert "Traceback" not in said
