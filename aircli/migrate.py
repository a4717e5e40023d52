"""``air migrate SERVER [--out DIR]``: write definition drafts for an existing server's tools.

``air migrate --rename [--out DIR]`` adopts the standard's names later (:mod:`aircli._rename`).

Reads what each tool already says about itself (``define_tool``/``@server.tool``: name, title,
description, schemas, annotations, tags, layer) — of an air server, or of a server built on the
official SDK's ``MCPServer`` or on FastMCP (their ``@tool`` decorators' metadata) — and writes
``DIR/{category}/{name}.yml`` (``DIR`` defaults to the project's definitions directory,
``./tool-definitions``). Where the source says nothing, the standard's conservative defaults:
``owner_org: MCP_TOOL``, ``when_not_to_use`` saying no similar tool is known (``None`` — or
``없음`` for a tool described in Korean: placeholders follow the description's language),
hints from the name's verb (read-only for lookups, destructive for registering/sending/
processing), and ``register: false`` — a draft, never published to a central registry by the
migration. ``open_world`` is ``true`` when the tool evidently reaches the network (a URL
parameter, a fetch/http/webhook verb: layer L5), else left out with a TODO comment for the
author, never guessed. The version is the server's (``0.1.0`` when it has none: a library's
own version is not the server's). Vendor keys (``x-fastmcp-…``) stay out of the schemas.
Texts nobody wrote yet stay ``TODO`` so the gate lists them. An existing file is never
overwritten.
"""

from __future__ import annotations

import argparse
import copy
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from aircli._foreign import ForeignServer, ListedTool
from aircli._project import find_project
from aircli.check import CheckReport, check_directory, print_report
from aircore.definitions import ToolDefinitionError
from aircore.definitions.naming import infer_hints
from aircore.tool import Tool

__all__ = ["DRAFT_OWNER", "MigrationResult", "draft_definition", "migrate_server", "register"]


DRAFT_OWNER = "MCP_TOOL"
"""``owner_org`` of a draft whose owner the source does not say (the seed's default)."""
NO_SIMILAR_TOOL = "없음"
"""``when_not_to_use`` of a draft described in Korean: no similar tool known (the seed's
default)."""
NO_SIMILAR_TOOL_EN = "None"
"""The same, for a tool described in any other language (or not described)."""
OPEN_WORLD_TODO = (
    "# TODO open_world: true if the tool reaches the network or other systems outside this\n"
    "# server (the gate reads a missing open_world as false)\n"
)
DEFAULT_CATEGORY = "general"

_HEADER = """\
# Draft written by `air migrate` from {target}.
# Taken from the tool's own metadata: name, title, description, schemas, hints, tags, layer.
# Conservative defaults where the source says nothing: owner_org {owner}, when_not_to_use
# {none} (name similar tools if there are any), hints from the name's verb; open_world only
# when network use is evident. register: false keeps it a draft until approved. Fill every
# TODO, then run `air check`.
"""


@dataclass(frozen=True, slots=True, kw_only=True)
class MigrationResult:
    """What one migration wrote and what it left alone."""

    written: tuple[Path, ...]
    kept: tuple[Path, ...]
    """Files that already existed (never overwritten)."""


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the ``migrate`` subcommand."""
    parser = sub.add_parser(
        "migrate",
        help="write definition drafts (register: false) for an existing server's tools",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("server", metavar="SERVER", nargs="?",
                        help="file.py[:server] or package.module[:server] (not with "
                        "--rename)")  # fmt: skip
    parser.add_argument("--out", metavar="DIR",
                        help="definitions directory (default: ./tool-definitions, or "
                        "[tool.air] definitions)")  # fmt: skip
    parser.add_argument("--rename", action="store_true",
                        help="adopt the standard's names: rename each definition whose name "
                        "breaks a naming rule and write the old -> new map to renames.yml; the "
                        "server and air gateway keep each old name as a deprecated alias for "
                        "one release")  # fmt: skip
    parser.set_defaults(func=_run)


def _category(tool: Tool | ListedTool) -> str:
    if tool.tags:
        tag = tool.tags[0].strip().lower().replace("-", "_").replace(" ", "_")
        if tag.isidentifier() and tag.isascii():
            return tag
    parts = tool.name.split("_")
    return parts[0] if len(parts) == 3 and all(parts) else DEFAULT_CATEGORY


def _closed_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """The input schema as the standard wants it: closed, every property described."""
    out: dict[str, Any] = copy.deepcopy(schema) if schema else {"type": "object", "properties": {}}
    out.setdefault("type", "object")
    out.setdefault("properties", {})
    out["additionalProperties"] = False
    for name, prop in out["properties"].items():
        if isinstance(prop, dict) and not str(prop.get("description") or "").strip():
            prop["description"] = f"TODO: what {name} is"
    return out


def _first_sentence(text: str) -> str:
    head = text.strip().split("\n", 1)[0]
    for end in (". ", "다. ", "! ", "? "):
        if end in head:
            return head.split(end, 1)[0] + end.strip()
    return head


def _is_korean(text: str) -> bool:
    return any("\uac00" <= ch <= "\ud7a3" for ch in text)


def _no_vendor_keys(value: Any) -> Any:
    """A copy of a schema without vendor keys (``x-…``, e.g. FastMCP's
    ``x-fastmcp-wrap-result``): they are the library's, not the tool's contract."""
    if isinstance(value, dict):
        return {
            k: _no_vendor_keys(v)
            for k, v in value.items()
            if not (isinstance(k, str) and k.startswith("x-"))
        }
    if isinstance(value, list):
        return [_no_vendor_keys(v) for v in value]
    return value


def _open_world(tool: Tool | ListedTool, annotations: dict[str, Any]) -> bool | None:
    """``openWorldHint`` when the source says it; ``True`` when the tool evidently reaches the
    network (the meter's classifier puts it in L5: a URL parameter or a network verb);
    otherwise ``None``: unknown, left to the author."""
    said = annotations.get("openWorldHint")
    if isinstance(said, bool):
        return said
    from airmeter.classify import classify
    from airmeter.layers import Layer

    found = classify(tool.name, tool.input_schema or None)
    return True if found.layer == Layer.L5 else None


def draft_definition(tool: Tool | ListedTool, *, version: str) -> dict[str, Any]:
    """The definition draft for one registered tool (see the module for the defaults).

    Args:
        tool: the tool as registered, before any definition was applied (or as another
            library's server lists it).
        version: the version to record (the server's).

    Returns:
        The draft as a mapping in the standard's field order.
    """
    annotations = tool.annotations or {}
    inferred = infer_hints(tool.name)
    read_only = annotations.get("readOnlyHint", inferred.read_only)
    destructive = annotations.get("destructiveHint", False if read_only else inferred.destructive)
    idempotent = annotations.get("idempotentHint", inferred.idempotent if not read_only else True)
    description = (tool.description or "").strip()
    title = tool.title or annotations.get("title") or tool.name.replace("_", " ").capitalize()
    korean = _is_korean(f"{description} {title}")
    draft: dict[str, Any] = {
        "name": tool.name,
        "display_name": title,
        "version": version,
        "category_key": _category(tool),
        "description": {
            "function": description or "TODO: what the tool does and returns",
            "when_to_use": "TODO: the user requests it answers",
            "when_not_to_use": NO_SIMILAR_TOOL if korean else NO_SIMILAR_TOOL_EN,
            "io_limits": "TODO: input limits and output size",
        },
        "display_description": _first_sentence(description) or "TODO: a line for the catalogue",
        "example_queries": [f"TODO: a real user request, example {i}" for i in ("one", "two",
                                                                               "three")],
        "read_only": bool(read_only),
        "destructive": bool(destructive),
        "idempotent": bool(idempotent),
        "parameters_schema": _closed_schema(_no_vendor_keys(tool.input_schema)),
    }  # fmt: skip
    open_world = _open_world(tool, annotations)
    if open_world is not None:
        draft["open_world"] = open_world
    if tool.output_schema is not None:
        draft["output_schema"] = _no_vendor_keys(tool.output_schema)
    if tool.tags:
        draft["tags"] = list(tool.tags)
    if tool.layer is not None:
        draft["layer"] = f"L{tool.layer}"
    draft["owner_org"] = DRAFT_OWNER
    draft["register"] = False
    return draft


def _source_tools(target: str) -> tuple[str | None, dict[str, Tool | ListedTool]]:
    """The version and the tools (as their source declares them) of an air or foreign server."""
    from aircli._server_check import load_any_server, registered_tools

    server = load_any_server(target)
    if isinstance(server, ForeignServer):
        return server.version, {tool.name: tool for tool in server.tools}
    return server.version, dict(registered_tools(server))


def migrate_server(target: str, out: str | Path) -> MigrationResult:
    """Write a draft for every tool of a server that has no definition file in ``out`` yet.

    Args:
        target: ``file.py[:server]`` or ``package.module[:server]``.
        out: the definitions directory to write into (created when missing).

    Returns:
        The files written and the ones kept because they existed.

    Raises:
        ToolDefinitionError: the target cannot be loaded.
    """
    version, tools = _source_tools(target)
    root = Path(out)
    existing = {p.stem: p for p in root.rglob("*.y*ml")} if root.is_dir() else {}
    written: list[Path] = []
    kept: list[Path] = []
    head = _HEADER.format(target=target, owner=DRAFT_OWNER, none="None (없음)")
    for name in sorted(tools):
        if name in existing:
            kept.append(existing[name])
            continue
        draft = draft_definition(tools[name], version=version or "0.1.0")
        path = root / draft["category_key"] / f"{name}.yml"
        path.parent.mkdir(parents=True, exist_ok=True)
        body = yaml.safe_dump(draft, allow_unicode=True, sort_keys=False, width=96)
        if "open_world" not in draft:
            body = body.replace(
                "\nparameters_schema:", "\n" + OPEN_WORLD_TODO + "parameters_schema:", 1
            )
        try:
            with path.open("x", encoding="utf-8") as f:  # "x": never overwrite
                f.write(head + body)
        except FileExistsError:
            kept.append(path)
            continue
        written.append(path)
    return MigrationResult(written=tuple(written), kept=tuple(kept))


def _rename(out: Path) -> int:
    from aircli._rename import rename_definitions

    try:
        result = rename_definitions(out)
    except ToolDefinitionError as exc:
        print(f"air migrate --rename: {exc}", file=sys.stderr)
        return 1
    except OSError as exc:
        print(f"air migrate --rename: cannot write {out}: {exc.strerror or exc} "
              f"({exc.filename})", file=sys.stderr)  # fmt: skip
        return 1
    for old, new in result.renamed.items():
        print(f"renamed {old} -> {new}")
    for why in result.skipped:
        print(f"skipped {why}")
    if result.map_file is None:
        print("air migrate --rename: no definition breaks a naming rule; nothing renamed")
        return 0
    print(f"air migrate --rename: {len(result.renamed)} renamed; map in {result.map_file}. "
          "Review the names (edit the definition and the map together). Servers with "
          "definitions= serve the new names now and keep each old one as a deprecated alias "
          "(so does air gateway); rename the handlers when you like, and delete the map's "
          "entries in the next release.")  # fmt: skip
    print("Configuration naming tools: scope globs in auth.tools (air serve --auth-config, "
          "air gateway) still protect a renamed tool by its old name too, while the alias "
          "lasts: add the new names before deleting the map's entries. Allow lists (air "
          "gateway clients:) name the new one now.")  # fmt: skip
    return 0


def _run(args: argparse.Namespace) -> int:
    if args.rename == (args.server is not None):
        print("air migrate: give a SERVER to draft definitions from, or --rename (not both)",
              file=sys.stderr)  # fmt: skip
        return 2
    if args.rename:
        return _rename(Path(args.out) if args.out else find_project(".").definitions)
    try:
        out = Path(args.out) if args.out else find_project(".").definitions
        find_project(".").import_paths()
        result = migrate_server(args.server, out)
    except ToolDefinitionError as exc:
        print(f"air migrate: {exc}", file=sys.stderr)
        return 1
    except OSError as exc:  # e.g. --out under a file, or a read-only place
        print(f"air migrate: cannot write {out}: {exc.strerror or exc} ({exc.filename})",
              file=sys.stderr)  # fmt: skip
        return 1
    for path in result.written:
        print(f"wrote {path}")
    for path in result.kept:
        print(f"kept {path} (exists; not overwritten)")
    report: CheckReport = check_directory(out)
    print_report(report)
    print(f"air migrate: {len(result.written)} draft(s) written, {len(result.kept)} kept; "
          "drafts stay register: false until approved")  # fmt: skip
    return 0
