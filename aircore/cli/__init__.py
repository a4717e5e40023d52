"""The ``air`` command line: one module per subcommand, each exposing ``register(subparsers)``.

A subcommand module registers an ``argparse`` parser and sets ``func`` (``args -> int`` exit code).
"""

from __future__ import annotations

import argparse
import importlib
import logging
import sys
from collections.abc import Sequence

__all__ = ["COMMANDS", "build_parser", "main"]

# Subcommand modules under aircore.cli, in the order `air --help` lists them.
COMMANDS: tuple[str, ...] = (
    "serve",
    "store",
    "meter",
    "demo",
    "dashboard",
    "check",
    "manifest",
    "scaffold",
)


def build_parser() -> argparse.ArgumentParser:
    """Build the ``air`` parser with every registered subcommand."""
    parser = argparse.ArgumentParser(
        prog="air",
        description="air: persistent storage, metering and a dashboard for MCP servers.",
    )
    parser.add_argument("-v", "--verbose", action="store_true", help="log debug output to stderr")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in COMMANDS:
        module = importlib.import_module(f"aircore.cli.{name}")
        module.register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``air`` console script; returns the exit code."""
    parser = build_parser()
    args = parser.parse_args(argv)
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
