from __future__ import annotations

import subprocess
import sys

import pytest

from aircli import main


def test_air_help_lists_commands(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as info:
        main(["--help"])
    assert info.value.code == 0
    assert "demo" in capsys.readouterr().out


def test_air_console_script_runs() -> None:
    out = subprocess.run(
        [sys.executable, "-m", "aircli", "--help"], capture_output=True, text=True, check=True
    )
    assert "usage: air" in out.stdout
