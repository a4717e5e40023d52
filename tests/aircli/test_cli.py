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


@pytest.mark.parametrize(
    ("argv", "usage"),
    [
        (["dashboard", "--port", "99999"], "usage: air dashboard"),
        (["dashboard", "--port", "-3"], "usage: air dashboard"),
        (["demo", "--no-dashboard", "--port", "65536"], "usage: air demo"),
        (["serve", "x.py", "--transport", "http", "--port", "70000"], "usage: air serve"),
        (["serve", "x.py", "--port", "eighty"], "usage: air serve"),
    ],
)
def test_a_port_out_of_range_is_refused_with_the_subcommands_usage(
    argv: list[str], usage: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as info:
        main(argv)
    assert info.value.code == 2
    said = capsys.readouterr().err
    assert said.startswith(usage)
    assert "argument --port:" in said
    assert "0-65535" in said
    assert "Traceback" not in said


@pytest.mark.parametrize("argv", [[], ["-v"]])
def test_air_without_a_command_prints_its_help_on_stderr_and_exits_2(argv: list[str]) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "aircli", *argv], capture_output=True, text=True, check=False
    )
    assert done.returncode == 2
    assert done.stdout == ""
    assert done.stderr.startswith("usage: air")
    assert "demo" in done.stderr  # the commands are listed
