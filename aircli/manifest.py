"""``air manifest [TARGET] [--out FILE]``: write the tool manifest.

TARGET is a definitions directory (each tool rendered straight from its definition) or a server
``file.py[:server]`` / ``package.module[:server]`` (the server's own ``tools/list`` metadata).
Without TARGET it finds the project's server as ``air check`` does (``[tool.air]`` in
``pyproject.toml``, else ``./server.py``, else ``./tool-definitions``). Without ``--out`` the
JSON goes to stdout.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from aircli._project import find_project
from aircli.check import is_directory_target
from aircore.definitions import (
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
        help="write the tool manifest (each tool exactly as tools/list lists it)",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "target",
        nargs="?",
        default=None,
        metavar="TARGET",
        help="definitions directory or server target (default: the project's server)",
    )
    parser.add_argument("--out", metavar="FILE", help="write here instead of stdout")
    parser.set_defaults(func=_run)


def build_target_manifest(target: str | None) -> dict[str, Any]:
    """The manifest of a definitions directory or of a server target.

    Args:
        target: a directory, ``file.py[:server]`` or ``package.module[:server]``; ``None``:
            the project's server (or definitions directory) in the working directory.

    Returns:
        The manifest mapping.

    Raises:
        ToolDefinitionError: the definitions break the standard, or the target cannot be loaded.
    """
    definitions_dir: Path | None = None
    if target is None:
        project = find_project(".")
        if project.server is None:
            target = str(project.definitions)
        else:
            project.import_paths()
            target, definitions_dir = project.server, project.definitions
    if is_directory_target(target):
        definitions = load_definitions(target)
        try:
            return manifest_from_definitions(definitions.values())
        except ValueError as exc:
            raise ToolDefinitionError([], summary=f"{exc}; run air manifest on the server") from exc
    from aircli._server_check import server_manifest

    return server_manifest(target, definitions=definitions_dir)


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
