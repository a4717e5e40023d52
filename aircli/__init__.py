"""The ``air`` command line, air's composition root: the one package that imports all the others.

One module per subcommand, each exposing ``register(subparsers)``.

A subcommand module registers an ``argparse`` parser and sets ``func`` (``args -> int`` exit code).
"""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Sequence
from types import ModuleType
from typing import Any

from aircli import (
    check,
    dashboard,
    demo,
    gateway,
    manifest,
    meter,
    migrate,
    scaffold,
    serve,
    status,
    store,
)

__all__ = ["COMMANDS", "build_parser", "main"]

# Subcommand modules, in the order `air --help` lists them (each imports its heavy parts,
# such as Dash or the MCP client, inside the function that needs them).
_MODULES: tuple[ModuleType, ...] = (
    serve, store, meter, demo, dashboard, check, manifest, scaffold, migrate, gateway, status
)  # fmt: skip
COMMANDS: tuple[str, ...] = tuple(m.__name__.rpartition(".")[2] for m in _MODULES)


def build_parser() -> argparse.ArgumentParser:
    """Build the ``air`` parser with every registered subcommand."""
    parser = argparse.ArgumentParser(
        prog="air",
        description="air: persistent storage, metering and a dashboard for MCP servers.",
    )
    parser.add_argument("-v", "--verbose", action="store_true", help="log debug output to stderr")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for module in _MODULES:
        module.register(sub)
    return parser


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
    parser = build_parser()
    args, extra = parser.parse_known_args(argv)
    if extra:  # say it with the subcommand's usage, not the top-level one
        _chosen_parser(parser, args).error(f"unrecognized arguments: {' '.join(extra)}")
    logging.basicConfig(
        level=logging.DEBUG if args.verbose else logging.WARNING,
        stream=sys.stderr,
        format="%(levelname)s %(name)s: %(message)s",
    )
    func = getattr(args, "func", None)
    if func is None:
        parser.print_help()
        return 0
    code: int = func(args)
    return code


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
