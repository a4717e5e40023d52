"""The ``air`` command line, air's composition root: the one package that imports all the others.

One module per subcommand, each exposing ``register(subparsers)``.

A subcommand module registers an ``argparse`` parser and sets ``func`` (``args -> int`` exit code).
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
from collections.abc import Sequence
from types import ModuleType
from typing import Any

__all__ = ["COMMANDS", "build_parser", "main"]

COMMANDS: tuple[str, ...] = (
    "serve", "store", "meter", "demo", "dashboard", "check", "manifest", "scaffold", "migrate",
    "gateway", "status",
)  # fmt: skip
"""The subcommands, in the order `air --help` lists them."""

_USAGE_EXIT = 2
"""The exit status of a usage error (argparse's own), ``air`` without a COMMAND included."""


def _module(command: str) -> ModuleType:
    """Subcommand ``command``'s module (one of :data:`COMMANDS`), importing that one alone.

    Spelled out case by case: nothing of ours is imported by a string
    (``tests/test_architecture.py``).
    """
    match command:
        case "serve":
            from aircli import serve

            return serve
        case "store":
            from aircli import store

            return store
        case "meter":
            from aircli import meter

            return meter
        case "demo":
            from aircli import demo

            return demo
        case "dashboard":
            from aircli import dashboard

            return dashboard
        case "check":
            from aircli import check

            return check
        case "manifest":
            from aircli import manifest

            return manifest
        case "scaffold":
            from aircli import scaffold

            return scaffold
        case "migrate":
            from aircli import migrate

            return migrate
        case "gateway":
            from aircli import gateway

            return gateway
        case "status":
            from aircli import status

            return status
    raise ValueError(f"not a subcommand: {command!r}")


def _modules(command: str | None) -> tuple[ModuleType, ...]:
    """The subcommand modules to register, in :data:`COMMANDS` order: only ``command``'s when
    it is one (``air serve`` is spawned by a client for every session, and every other command
    by scripts and the tests; the other modules and what they import, such as the
    tool-definition standard and YAML, cost ~20% of a start-up's CPU), else all (``air``,
    ``air --help`` and ``air bogus`` list every subcommand). Each module imports its heavy
    parts, such as Dash or the MCP client, inside the function that needs them."""
    return tuple(_module(name) for name in ((command,) if command in COMMANDS else COMMANDS))


def build_parser(*, command: str | None = None) -> argparse.ArgumentParser:
    """Build the ``air`` parser.

    Args:
        command: the subcommand about to run: one of :data:`COMMANDS` registers only that one
            (the others are not imported). ``None`` (the default) or another word: every
            subcommand.
    """
    parser = argparse.ArgumentParser(
        prog="air",
        description="air: persistent storage, metering and a dashboard for MCP servers.",
    )
    parser.add_argument("-v", "--verbose", action="store_true", help="log debug output to stderr")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for module in _modules(command):
        module.register(sub)
    return parser


def _command_of(argv: Sequence[str]) -> str | None:
    """The subcommand ``argv`` names (its first word that is not an option), unless the
    top-level help is asked for first (that lists every subcommand)."""
    for arg in argv:
        if _asks_help(arg):
            return None
        if not arg.startswith("-"):
            return arg
    return None


def _asks_help(arg: str) -> bool:
    """Whether ``arg`` is argparse's help option: ``-h``, in a cluster of short options
    (``-vh``) or ``--help`` abbreviated (``--hel``)."""
    if arg.startswith("--"):
        return len(arg) >= 3 and "--help".startswith(arg)
    return arg.startswith("-") and "h" in arg[1:]


def _chosen_parser(parser: argparse.ArgumentParser, args: argparse.Namespace) -> Any:
    """The innermost subcommand parser ``args`` went through (``air meter report``'s)."""
    while True:
        found = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
        name = getattr(args, found[0].dest, None) if found else None
        if not found or name is None:
            return parser
        parser = found[0].choices[name]


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``air`` console script; returns the exit code."""
    argv = sys.argv[1:] if argv is None else list(argv)
    parser = build_parser(command=_command_of(argv))
    args, extra = parser.parse_known_args(argv)
    if extra:  # say it with the subcommand's usage, not the top-level one
        _chosen_parser(parser, args).error(f"unrecognized arguments: {' '.join(extra)}")
    logging.basicConfig(
        level=logging.DEBUG if args.verbose else logging.WARNING,
        stream=sys.stderr,
        format="%(levelname)s %(name)s: %(message)s",
    )
    func = getattr(args, "func", None)
    if func is None:  # no COMMAND: a usage error, like any other (the help says what to type)
        parser.print_help(sys.stderr)
        return _USAGE_EXIT
    code: int | None = None
    try:
        code = func(args)
        sys.stdout.flush()
    except BrokenPipeError:
        if not _stdout_reader_gone():
            raise  # another pipe or socket broke: a failure like any other
        _discard_stdout()  # `air … | head`: the reader has what it wanted; no traceback
        return _PIPE_CLOSED_EXIT if code is None else code
    return code


_PIPE_CLOSED_EXIT = 128 + 13
"""The status of a command cut short because its reader went away (a shell's SIGPIPE: 141)."""


def _stdout_reader_gone() -> bool:
    """Whether stdout is a pipe or socket whose reading end is closed."""
    from aircli._platform import reader_gone

    try:
        return reader_gone(sys.stdout.fileno())
    except (OSError, ValueError, AttributeError):  # no real stdout (replaced, closed)
        return False


def _discard_stdout() -> None:
    """Point stdout at the null device, so the interpreter's last flush cannot fail again."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, sys.stdout.fileno())
    finally:
        os.close(devnull)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
