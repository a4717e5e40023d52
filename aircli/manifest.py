"""``air manifest [TARGET] [--out FILE]``: write the tool manifest.

TARGET is a definitions directory (each tool rendered straight from its definition) or a server
``file.py[:server]`` / ``package.module[:server]`` (the server's own ``tools/list`` metadata).
Without TARGET it reads ``./tool-definitions``. Without ``--out`` the JSON goes to stdout.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from aircli.check import _is_directory_target
from aircore.definitions import (
    DEFAULT_DEFINITIONS_DIR,
    ToolDefinitionError,
    dump_manifest,
    load_definitions,
    manifest_from_definitions,
)

__all__ = ["build_target_manifest", "register"]


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the ``manifest`` subcommand."""
    parser = sub.add_parser(
        "manifest",
        help="write the tool manifest (tools/list metadata + timeoutMillis, enabled)",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "target",
        nargs="?",
        default=DEFAULT_DEFINITIONS_DIR,
        metavar="TARGET",
        help=f"definitions directory or server target (default: ./{DEFAULT_DEFINITIONS_DIR})",
    )
    parser.add_argument("--out", metavar="FILE", help="write here instead of stdout")
    parser.set_defaults(func=_run)


def build_target_manifest(target: str) -> dict[str, Any]:
    """The manifest of a definitions directory or of a server target.

    Args:
        target: a directory, ``file.py[:server]`` or ``package.module[:server]``.

    Returns:
        The manifest mapping.

    Raises:
        ToolDefinitionError: the definitions break the standard, or the target cannot be loaded.
    """
    if _is_directory_target(target):
        definitions = load_definitions(target)
        try:
            return manifest_from_definitions(definitions.values())
        except ValueError as exc:
            raise ToolDefinitionError([], summary=f"{exc}; run air manifest on the server") from exc
    from aircli._server_check import server_manifest

    return server_manifest(target)


def _run(args: argparse.Namespace) -> int:
    try:
        manifest = build_target_manifest(args.target)
    except ToolDefinitionError as exc:
        print(f"air manifest: {exc}", file=sys.stderr)
        return 1
    data = dump_manifest(manifest)
    if args.out:
        out = Path(args.out)
        out.parent.mkdir(parents=True, exist_ok=True)
        tmp = out.with_name(out.name + ".tmp")
        tmp.write_bytes(data)
        tmp.replace(out)
        print(f"air manifest: {len(manifest['tools'])} tool(s) written to {out}", file=sys.stderr)
    else:
        sys.stdout.write(data.decode())
    return 0
