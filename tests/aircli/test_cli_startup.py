"""``air COMMAND`` starts without the other subcommands: an MCP client spawns ``air serve`` for
every session, scripts run ``air meter report`` and the like, so what each imports is the user's
wait (``bench/startup_bench.py``). ``air``, ``air --help`` and an unknown command list them all."""

from __future__ import annotations

import argparse
import subprocess
import sys

import pytest

import aircli

ELSEWHERE = ("aircli.check", "aircli.dashboard", "aircli.gateway", "aircli.meter",
             "aircli.status", "aircore.definitions", "yaml")  # fmt: skip


def _loaded_after(code: str) -> set[str]:
    """The modules a fresh interpreter holds after running ``code`` (its own output dropped)."""
    out = subprocess.run(
        [sys.executable, "-c", f"import sys\n{code}\nprint('\\n' + '\\n'.join(sys.modules))"],
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    ).stdout
    return set(out.split("\n\n")[-1].split())


def test_the_serve_parser_imports_no_other_subcommand() -> None:
    loaded = _loaded_after("import aircli\naircli.build_parser(command='serve')")
    assert "aircli.serve" in loaded
    assert not loaded & set(ELSEWHERE)


@pytest.mark.parametrize(
    "argv",
    [["store", "--help"], ["-v", "meter", "report", "--help"], ["status", "--help"]],
)
def test_a_command_imports_no_other_subcommand(argv: list[str]) -> None:
    command = next(arg for arg in argv if not arg.startswith("-"))
    loaded = _loaded_after(
        f"import aircli\ntry:\n    aircli.main({argv!r})\nexcept SystemExit as e:\n"
        "    assert e.code == 0, e.code"
    )
    assert f"aircli.{command}" in loaded
    others = {f"aircli.{name}" for name in aircli.COMMANDS if name != command}
    assert not loaded & (others | {"aircore.definitions", "yaml"})


def _registered(command: str | None = None) -> tuple[str, ...]:
    """The subcommands ``build_parser(command=command)`` registers, in order."""
    parser = aircli.build_parser(command=command)
    (sub,) = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    return tuple(sub.choices)


@pytest.mark.parametrize("command", aircli.COMMANDS)
def test_a_named_command_registers_only_itself(command: str) -> None:
    assert _registered(command) == (command,)


def _exit_of(argv: list[str]) -> int | str | None:
    """``aircli.main(argv)``'s exit status, which it gives by raising SystemExit."""
    with pytest.raises(SystemExit) as exited:
        aircli.main(argv)
    return exited.value.code


@pytest.mark.parametrize("argv", [["bogus"], ["-v", "bogus", "--help"]])
def test_an_unknown_command_is_refused_with_every_command_listed(
    argv: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    assert _exit_of(argv) == 2
    err = capsys.readouterr().err
    assert "invalid choice: 'bogus'" in err
    assert all(repr(name) in err for name in aircli.COMMANDS), err


def test_the_full_parser_registers_every_command_in_order() -> None:
    assert _registered() == aircli.COMMANDS
    assert _registered("serve") == ("serve",)


@pytest.mark.parametrize(
    "argv",
    [["-h"], ["-h", "serve"], ["--help", "serve", "x.py"], ["-vh", "store"], ["--hel", "store"]],
)
def test_top_level_help_lists_every_command(
    argv: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    assert _exit_of(argv) == 0
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
