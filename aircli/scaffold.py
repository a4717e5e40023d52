"""``air scaffold tool NAME|--base SERVICE_ACTION [inputs…]``: start a new tool.

Collects the standard's inputs from flags (and, on a terminal, asks for the missing ones), then
writes the definition ``tool-definitions/{category}/{NAME}.yml``, a handler stub
``tools/{NAME}.py`` wired into the server module (``server.py``, created when missing), the
output JSON Schema resource ``schemas/{NAME}.output.json``, a mock response
``mocks/{NAME}.json`` (the stub answers it until implemented) and ``tests/test_{NAME}.py``.
Behaviour hints not given are inferred from the name's verb, conservatively. Right after, it
runs ``air check`` on the server and lists what is left to fill (every ``TODO``).
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from aircli import _scaffold_templates as templates
from aircli._scaffold_inputs import (
    Field,
    ScaffoldInputs,
    ask_missing,
    definition_yaml,
    mock_response,
    output_schema,
    parse_field,
    py_literal,
)
from aircore.definitions import DEFAULT_DEFINITIONS_DIR
from aircore.definitions.model import NAME_PATTERN

__all__ = ["ScaffoldError", "ScaffoldResult", "register", "run_check", "scaffold_tool"]

CATEGORY_PATTERN = re.compile(r"^[a-z][a-z0-9_]{0,63}$")
IMPORTS_MARKER = "# air scaffold: imports"
TOOLS_MARKER = "# air scaffold: tools"
DEFAULT_CATEGORY = "general"
CHECK_TIMEOUT_S = 120.0
INTERRUPTED_EXIT = 130
"""Exit status after Ctrl+C at a question (128 + SIGINT, as shells report it)."""


class ScaffoldError(ValueError):
    """The scaffold cannot be generated (bad name, existing file, server module without markers)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ScaffoldResult:
    """The files one scaffold run created or changed."""

    name: str
    created: tuple[Path, ...]
    updated: tuple[Path, ...]
    server: Path


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the ``scaffold`` subcommand."""
    parser = sub.add_parser(
        "scaffold",
        help="generate a tool: definition, handler stub, schema resource, mock, test",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    kinds = parser.add_subparsers(dest="kind", metavar="KIND", required=True)
    tool = kinds.add_parser("tool", help="a new tool", description=__doc__,
                            formatter_class=argparse.RawDescriptionHelpFormatter)  # fmt: skip
    tool.add_argument("name", nargs="?", metavar="NAME", help=f"{NAME_PATTERN.pattern}")
    tool.add_argument("--base", metavar="SERVICE_ACTION",
                      help="base name; the tool is named CATEGORY_SERVICE_ACTION")  # fmt: skip
    tool.add_argument("--category", help="category key and folder (default: the name's first "
                      f"part when it has three, else {DEFAULT_CATEGORY})")  # fmt: skip
    text = tool.add_argument_group("texts (missing ones are asked for on a terminal)")
    for flag, what in (("--display-name", "title"), ("--display-description", "catalogue line"),
                       ("--function", "what it does and returns"),
                       ("--when-to-use", "the user requests it answers"),
                       ("--when-not-to-use", "similar tools by name, or 없음/none"),
                       ("--io-limits", "input limits and output size")):  # fmt: skip
        text.add_argument(flag, help=what)
    text.add_argument("--example", action="append", default=[], help="a real user request "
                      "(repeat 3-10 times)")  # fmt: skip
    meta = tool.add_argument_group("metadata")
    meta.add_argument("--tag", action="append", default=[], help="search tag (repeatable)")
    meta.add_argument("--owner", help="owner organization (default: MCP_TOOL)")
    meta.add_argument("--legacy-id", help="legacy interface id (MCI/EIMS) the tool wraps")
    meta.add_argument("--env", action="append", default=[], metavar="KEY",
                      help="required environment variable (repeatable)")  # fmt: skip
    meta.add_argument("--version", default="0.1.0", help="tool version (default: 0.1.0)")
    meta.add_argument("--register", action="store_true",
                      help="approved for the central registry (default: a draft)")  # fmt: skip
    hint = tool.add_argument_group("behaviour hints (default: inferred from the name's verb)")
    kind = hint.add_mutually_exclusive_group()
    kind.add_argument("--read-only", action="store_true", help="the tool only reads")
    kind.add_argument("--destructive", action="store_true", help="the tool may destroy data")
    hint.add_argument("--idempotent", action=argparse.BooleanOptionalAction, default=None)
    hint.add_argument("--open-world", action="store_true", help="talks to outside systems")
    fields = tool.add_argument_group("fields")
    fields.add_argument("--param", action="append", default=[], metavar="NAME:TYPE:DESCRIPTION",
                        help="input field; TYPE string|integer|number|boolean|object, TYPE[] "
                        "for arrays, TYPE? optional (repeatable)")  # fmt: skip
    fields.add_argument(
        "--output",
        action="append",
        default=[],
        metavar="NAME:TYPE:DESCRIPTION",
        help="output field (repeatable)",
    )
    tool.add_argument("--no-input", action="store_true", help="never ask, even on a terminal")
    tool.add_argument("--no-check", action="store_true", help="skip the check afterwards")
    tool.add_argument("--dir", default=".", help="project directory (default: .)")
    tool.add_argument("--server", default="server.py", help="server module in the project")
    tool.set_defaults(func=_run)


def _tool_name(name: str | None, base: str | None, category: str | None) -> tuple[str, str]:
    if (name is None) == (base is None):
        raise ScaffoldError("give either NAME or --base SERVICE_ACTION")
    if base is not None:
        if category is None:
            raise ScaffoldError("--base needs --category (the name is CATEGORY_SERVICE_ACTION)")
        name = f"{category}_{base}"
    assert name is not None
    if category is None:
        parts = name.split("_")
        category = parts[0] if len(parts) == 3 and all(parts) else DEFAULT_CATEGORY
    return name, category


def scaffold_tool(inputs: ScaffoldInputs, *, project: str | Path = ".",
                  server_module: str = "server.py") -> ScaffoldResult:  # fmt: skip
    """Generate a tool's definition, handler stub, schema resource, mock, wiring and test.

    Args:
        inputs: the standard's inputs (missing texts become ``TODO`` placeholders).
        project: the project directory.
        server_module: the server module, relative to ``project``; created when missing, else
            it must contain the ``# air scaffold: imports`` and ``# air scaffold: tools`` markers.

    Returns:
        The files created and updated.

    Raises:
        ScaffoldError: bad name or category, both hints, a file that already exists, or a
            server module without the markers. Nothing is written in that case.
    """
    name, category = inputs.name, inputs.category
    if not NAME_PATTERN.fullmatch(name):
        raise ScaffoldError(f"tool name {name!r} must match {NAME_PATTERN.pattern}")
    if not CATEGORY_PATTERN.fullmatch(category):
        raise ScaffoldError(f"category {category!r} must match {CATEGORY_PATTERN.pattern}")
    if inputs.read_only and inputs.destructive:
        raise ScaffoldError("a tool cannot be both read-only and destructive")
    root = Path(project)
    schema_path = Path("schemas") / f"{name}.output.json"
    files = {
        root / DEFAULT_DEFINITIONS_DIR / category / f"{name}.yml": definition_yaml(
            inputs, schema_resource=schema_path.as_posix()
        ),
        root / "tools" / f"{name}.py": None,
        root / schema_path: _json(output_schema(inputs.outputs)),
        root / "mocks" / f"{name}.json": _json(mock_response(inputs.outputs)),
        root / "tests" / f"test_{name}.py": None,
    }
    for path in files:
        if path.exists():
            raise ScaffoldError(f"{path} already exists; nothing was written")
    existing = list((root / DEFAULT_DEFINITIONS_DIR).rglob(f"{name}.yml"))
    if existing:
        raise ScaffoldError(f"a definition for {name!r} already exists: {existing[0]}")
    server = root / server_module
    server_text = _wire(server, name) if server.exists() else None

    params = inputs.params or (Field("query", "string", "-"),)
    arguments = {f.name: f.example() for f in params if not f.optional}
    values = templates.values(name=name, category=category, server_module=server_module,
                              arguments=py_literal(arguments))  # fmt: skip
    files[root / "tools" / f"{name}.py"] = templates.HANDLER.format(**values)
    files[root / "tests" / f"test_{name}.py"] = templates.TEST.format(**values)
    created: list[Path] = []
    updated: list[Path] = []
    package = root / "tools" / "__init__.py"
    if not package.exists():
        _write(package, templates.PACKAGE, created)
    for path, text in files.items():
        assert text is not None
        _write(path, text, created)
    if server_text is None:
        _write(server, templates.SERVER.format(**values), created)
        server.write_text(_wire(server, name), encoding="utf-8")
    else:
        server.write_text(server_text, encoding="utf-8")
        updated.append(server)
    return ScaffoldResult(name=name, created=tuple(created), updated=tuple(updated), server=server)


def _json(value: object) -> str:
    return json.dumps(value, ensure_ascii=False, indent=2) + "\n"


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


def run_check(server: Path, *, project: Path) -> tuple[int, list[str]]:
    """Run ``air check`` on a scaffolded server in a fresh interpreter (the project's modules
    must not be cached in this one). Returns the exit code and the problem lines."""
    run = subprocess.run(
        [sys.executable, "-m", "aircli", "check", str(server.resolve())],
        cwd=project, capture_output=True, text=True, timeout=CHECK_TIMEOUT_S, check=False,
    )  # fmt: skip
    lines = [line for line in run.stdout.splitlines() if line and not line.startswith("air ")]
    return run.returncode, lines + [line for line in run.stderr.splitlines() if line]


def _inputs(args: argparse.Namespace) -> ScaffoldInputs:
    name, category = _tool_name(args.name, args.base, args.category)
    try:
        params = tuple(parse_field(p) for p in args.param)
        outputs = tuple(parse_field(p) for p in args.output)
    except ValueError as exc:
        raise ScaffoldError(str(exc)) from exc
    return ScaffoldInputs(
        name=name, category=category, display_name=args.display_name,
        display_description=args.display_description, function=args.function,
        when_to_use=args.when_to_use, when_not_to_use=args.when_not_to_use,
        io_limits=args.io_limits, examples=tuple(args.example), tags=tuple(args.tag),
        owner=args.owner, legacy_id=args.legacy_id, env_keys=tuple(args.env),
        read_only=args.read_only or None, destructive=args.destructive or None,
        idempotent=args.idempotent, open_world=args.open_world, register=args.register,
        version=args.version, params=params, outputs=outputs,
    )  # fmt: skip


def _run(args: argparse.Namespace) -> int:
    try:
        inputs = _inputs(args)
        if not args.no_input and sys.stdin.isatty():
            try:
                inputs = ask_missing(inputs, input)
            except EOFError:  # Ctrl+D at a question
                print("\nair scaffold: input ended; nothing written", file=sys.stderr)
                return 2
            except KeyboardInterrupt:  # Ctrl+C at a question
                print("\nair scaffold: interrupted; nothing written", file=sys.stderr)
                return INTERRUPTED_EXIT
        result = scaffold_tool(inputs, project=args.dir, server_module=args.server)
    except ScaffoldError as exc:
        print(f"air scaffold: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:  # e.g. --dir under a file, or a read-only place
        print(f"air scaffold: cannot write {args.dir}: {exc.strerror or exc} ({exc.filename})",
              file=sys.stderr)  # fmt: skip
        return 1
    for path in result.created:
        print(f"created {path}")
    for path in result.updated:
        print(f"updated {path}")
    read_only, destructive, idempotent, inferred = inputs.hints()
    if args.read_only or args.destructive:
        source = "from the flags"
    elif inferred.verb is None:
        source = "cautious: no known verb in the name"
    else:
        source = f"inferred from {inferred.verb!r}"
    print(f"hints ({source}): read_only={read_only} destructive={destructive} "
          f"idempotent={idempotent}")  # fmt: skip
    if args.no_check:
        return 0
    code, lines = run_check(result.server, project=Path(args.dir))
    if code == 0:
        print(f"air check: ok; {result.name} is a draft (register: false) until approved"
              if not inputs.register else "air check: ok")  # fmt: skip
        return 0
    print(f"left to fill ({len(lines)}):")
    for line in lines:
        print(f"  {line}")
    print(f"then run `air check {result.server}` again")
    return 0
