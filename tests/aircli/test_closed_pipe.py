"""``air … | head``: a reader that stops reading ends the command quietly, for every command
that prints (each one raised ``BrokenPipeError`` with a traceback, except the meter report),
with the status a shell gives a command its SIGPIPE ended (141): cut short, not a success."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from tests.air_process import air

ROOT = Path(__file__).resolve().parents[2]
DEMO = str(ROOT / "examples" / "demo_server.py")


@pytest.mark.parametrize(
    "args",
    [
        ("check", DEMO),
        ("manifest", DEMO),
        ("store", "stats", "--store", "memory://"),
        ("meter", "report", "--store", "memory://"),
    ],
    ids=["check", "manifest", "store-stats", "meter-report"],
)
def test_a_reader_that_went_away_ends_the_command_without_a_traceback(
    args: tuple[str, ...],
) -> None:
    read_end, write_end = os.pipe()
    os.close(read_end)  # the reader is gone before the first line: every write fails
    try:
        done = subprocess.run(
            air(*args), stdin=subprocess.DEVNULL, stdout=write_end, stderr=subprocess.PIPE,
            text=True, timeout=120, check=False, cwd=ROOT,
        )  # fmt: skip
    finally:
        os.close(write_end)
    assert "Traceback" not in done.stderr
    assert "BrokenPipeError" not in done.stderr
    assert done.returncode == 141, done.stderr
