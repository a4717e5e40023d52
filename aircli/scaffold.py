"""``air scaffold tool NAME [--category C] [--read-only|--destructive]``: start a new tool.

Writes a definition ``tool-definitions/{category}/{NAME}.yml``, a handler stub
``tools/{NAME}.py``, wires it into the server module (``server.py``, created when missing) and
adds ``tests/test_{NAME}.py``. The result passes ``air check`` as generated; edit the definition's
texts and the handler, then run ``air check server.py`` again.
"""

from __future__ import annotations

import argparse
import re
import sys
from dataclasses import dataclass
from pathlib import Path

from aircli import _scaffold_templates as templates
from aircore.definitions import DEFAULT_DEFINITIONS_DIR
from aircore.definitions.model import NAME_PATTERN

__all__ = ["ScaffoldError", "ScaffoldResult", "register", "scaffold_tool"]

CATEGORY_PATTERN = re.compile(r"^[a-z][a-z0-9_]{0,63}$")
IMPORTS_MARKER = "# air scaffold: imports"
TOOLS_MARKER = "# air scaffold: tools"


class ScaffoldError(ValueError):
    """The scaffold cannot be generated (bad name, existing file, server module without markers)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ScaffoldResult:
    """The files one scaffold run created or changed."""

    created: tuple[Path, ...]
    updated: tuple[Path, ...]


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the ``scaffold`` subcommand."""
    parser = sub.add_parser(
        "scaffold",
        help="generate a tool: definition YAML, handler stub wired into the server, test",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    kinds = parser.add_subparsers(dest="kind", metavar="KIND", required=True)
    tool = kinds.add_parser("tool", help="a new tool")
    tool.add_argument("name", metavar="NAME", help=f"tool name, {NAME_PATTERN.pattern}")
    tool.add_argument("--category", default="general", help="category key (default: general)")
    hint = tool.add_mutually_exclusive_group()
    hint.add_argument("--read-only", action="store_true", help="the tool only reads")
    hint.add_argument("--destructive", action="store_true", help="the tool may destroy data")
    tool.add_argument("--dir", default=".", help="project directory (default: .)")
    tool.add_argument("--server", default="server.py", help="server module in the project")
    tool.set_defaults(func=_run)


def scaffold_tool(
    name: str,
    *,
    project: str | Path = ".",
    category: str = "general",
    read_only: bool = False,
    destructive: bool = False,
    server_module: str = "server.py",
) -> ScaffoldResult:
    """Generate a tool's definition, handler stub, server wiring and test.

    Args:
        name: the tool name (``^[a-z][a-z0-9_]{2,63}$``).
        project: the project directory.
        category: the category key and definition sub-directory.
        read_only: set the read-only hint (idempotent too).
        destructive: set the destructive hint.
        server_module: the server module, relative to ``project``; created when missing, else
            it must contain the ``# air scaffold: imports`` and ``# air scaffold: tools`` markers.

    Returns:
        The files created and updated.

    Raises:
        ScaffoldError: bad name or category, both hints, a file that already exists, or a
            server module without the markers. Nothing is written in that case.
    """
    if not NAME_PATTERN.match(name):
        raise ScaffoldError(f"tool name {name!r} must match {NAME_PATTERN.pattern}")
    if not CATEGORY_PATTERN.match(category):
        raise ScaffoldError(f"category {category!r} must match {CATEGORY_PATTERN.pattern}")
    if read_only and destructive:
        raise ScaffoldError("a tool cannot be both read-only and destructive")
    root = Path(project)
    definition = root / DEFAULT_DEFINITIONS_DIR / category / f"{name}.yml"
    handler = root / "tools" / f"{name}.py"
    test = root / "tests" / f"test_{name}.py"
    server = root / server_module
    for path in (definition, handler, test):
        if path.exists():
            raise ScaffoldError(f"{path} already exists; nothing was written")
    existing = list((root / DEFAULT_DEFINITIONS_DIR).rglob(f"{name}.yml"))
    if existing:
        raise ScaffoldError(f"a definition for {name!r} already exists: {existing[0]}")
    server_text = _wire(server, name) if server.exists() else None

    created: list[Path] = []
    updated: list[Path] = []
    values = templates.values(name=name, category=category, read_only=read_only,
                              destructive=destructive, server_module=server_module)  # fmt: skip
    _write(definition, templates.DEFINITION.format(**values), created)
    package = root / "tools" / "__init__.py"
    if not package.exists():
        _write(package, templates.PACKAGE, created)
    _write(handler, templates.HANDLER.format(**values), created)
    if server_text is None:
        _write(server, templates.SERVER.format(**values), created)
        server.write_text(_wire(server, name), encoding="utf-8")
    else:
        server.write_text(server_text, encoding="utf-8")
        updated.append(server)
    _write(test, templates.TEST.format(**values), created)
    return ScaffoldResult(created=tuple(created), updated=tuple(updated))


def _write(path: Path, text: str, created: list[Path]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    created.append(path)


def _wire(server: Path, name: str) -> str:
    """The server module's text with the tool's import and registration added at the markers.

    Imports go in the sorted block right after ``# air scaffold: imports``; the tool goes into
    the ``tools=[...]`` list just before ``# air scaffold: tools``.
    """
    lines = server.read_text(encoding="utf-8").splitlines(keepends=True)
    stripped = [line.strip() for line in lines]
    missing = [m for m in (IMPORTS_MARKER, TOOLS_MARKER) if m not in stripped]
    if missing:
        raise ScaffoldError(
            f"{server} lacks the line(s) {missing}: add them where imports and the "
            "tools=[...] list go, or pass --server for another module"
        )
    at = stripped.index(TOOLS_MARKER)
    indent = lines[at][: len(lines[at]) - len(lines[at].lstrip())]
    lines.insert(at, f"{indent}{name},\n")
    start = stripped.index(IMPORTS_MARKER) + 1
    end = start
    while end < len(lines) and lines[end].startswith(("from ", "import ")):
        end += 1
    block = sorted({*lines[start:end], f"from tools.{name} import {name}\n"})
    lines[start:end] = block
    return "".join(lines)


def _run(args: argparse.Namespace) -> int:
    try:
        result = scaffold_tool(
            args.name,
            project=args.dir,
            category=args.category,
            read_only=args.read_only,
            destructive=args.destructive,
            server_module=args.server,
        )
    except ScaffoldError as exc:
        print(f"air scaffold: {exc}", file=sys.stderr)
        return 2
    for path in result.created:
        print(f"created {path}")
    for path in result.updated:
        print(f"updated {path}")
    print(f"next: edit the texts in the definition, implement the handler, run `air check "
          f"{Path(args.dir) / args.server}`")  # fmt: skip
    return 0
