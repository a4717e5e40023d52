"""``air serve`` starts without the other subcommands: an MCP client spawns it for every
session, so what it imports is the user's wait (``bench/startup_bench.py``)."""

from __future__ import annotations

import argparse
import subprocess
import sys

import pytest

import aircli

ELSEWHERE = ("aircli.check", "aircli.dashboard", "aircli.gateway", "aircli.meter",
             "aircli.status", "aircore.definitions", "yaml")  # fmt: skip


def _loaded_after(code: str) -> set[str]:
    out = subprocess.run(
        [sys.executable, "-c", f"import sys\n{code}\nprint('\\n'.join(sys.modules))"],
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    ).stdout
    return set(out.split())


def test_the_serve_parser_imports_no_other_subcommand() -> None:
    loaded = _loaded_after("import aircli\naircli.build_parser(command='serve')")
    assert "aircli.serve" in loaded
    assert not loaded & set(ELSEWHERE)


def test_the_full_parser_registers_every_command_in_order() -> None:
    parser = aircli.build_parser()
    (sub,) = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    assert tuple(sub.choices) == aircli.COMMANDS
    (serve_only,) = [
        a
        for a in aircli.build_parser(command="serve")._actions
        if isinstance(a, argparse._SubParsersAction)
    ]
    assert tuple(serve_only.choices) == ("serve",)


@pytest.mark.parametrize("argv", [["-h"], ["-h", "serve"], ["--help", "serve", "x.py"]])
def test_top_level_help_lists_every_command(
    argv: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exited:
        aircli.main(argv)
    assert exited.value.code == 0
    out = capsys.readouterr().out
    assert all(name in out for name in aircli.COMMANDS), out


def test_serve_help_and_a_bad_serve_flag_still_answer_with_serves_usage(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with pytest.raises(SystemExit) as helped:
        aircli.main(["-v", "serve", "--help"])
    assert helped.value.code == 0
    assert "--transport" in capsys.readouterr().out
    with pytest.raises(SystemExit) as refused:
        aircli.main(["serve", "x.py", "--no-such-flag"])
    assert refused.value.code == 2
    err = capsys.readouterr().err
    assert "air serve" in err
    assert "--no-such-flag" in err
