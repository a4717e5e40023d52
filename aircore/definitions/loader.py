"""Read definition files from a directory and build :class:`ToolDefinition` objects from them.

Reading never stops at the first bad file: every file becomes a :class:`DefinitionFile` (its
decoded mapping, or the reason it could not be read), the gate's rules run over all of them, and
:func:`load_definitions` raises one :class:`ToolDefinitionError` listing every problem.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml

from aircore.definitions.config import CONFIG_FILE_NAME, GateConfig, load_gate_config
from aircore.definitions.errors import ToolDefinitionError
from aircore.definitions.model import ToolDefinition, ToolDescription
from aircore.definitions.renames import RENAMES_FILE_NAME
from aircore.definitions.rules import check_files
from aircore.definitions.types import DefinitionFile, Problem
from airmeter.layers import parse_layer

__all__ = [
    "DEFAULT_DEFINITIONS_DIR",
    "DefinitionFile",
    "build_definition",
    "load_definitions",
    "read_definition_files",
]

DEFAULT_DEFINITIONS_DIR = "tool-definitions"
"""Where definitions live when no directory is named (relative to the working directory)."""

_SUFFIXES = (".yml", ".yaml")
# libyaml's loader parses ~10x faster than the pure-Python one; same safe subset of YAML.
_LOADER: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def read_definition_files(directory: str | Path) -> list[DefinitionFile]:
    """Read every ``*.yml``/``*.yaml`` under ``directory`` (recursively, sorted by path).

    Hidden directories and the root ``air-check.yml`` (gate configuration) are skipped.

    Args:
        directory: the definitions directory.

    Returns:
        One :class:`DefinitionFile` per file; unreadable or non-mapping files carry ``error``.

    Raises:
        ToolDefinitionError: ``directory`` does not exist or is not a directory.
    """
    root = Path(directory)
    if not root.is_dir():
        raise ToolDefinitionError(
            [
                Problem(
                    file=str(root),
                    field="-",
                    message="definitions directory not found",
                    rule="directory",
                )
            ]
        )
    files: list[DefinitionFile] = []
    for path in sorted(p for p in root.rglob("*") if p.suffix in _SUFFIXES and p.is_file()):
        rel = path.relative_to(root)
        if any(part.startswith(".") for part in rel.parts):
            continue
        if rel in (Path(CONFIG_FILE_NAME), Path(RENAMES_FILE_NAME)):
            continue
        folder = "" if rel.parent == Path(".") else rel.parent.as_posix()
        files.append(_read_one(path, folder))
    return files


def _read_one(path: Path, folder: str) -> DefinitionFile:
    def fail(error: str) -> DefinitionFile:
        return DefinitionFile(path=path, data=None, error=error, folder=folder)

    try:
        data = yaml.load(path.read_text(encoding="utf-8"), Loader=_LOADER)
    except OSError as exc:
        return fail(f"cannot read file: {exc.strerror}")
    except UnicodeDecodeError:
        return fail("file is not UTF-8 text")
    except yaml.YAMLError as exc:
        where = getattr(exc, "problem_mark", None)
        at = f" (line {where.line + 1}, column {where.column + 1})" if where else ""
        reason = getattr(exc, "problem", None) or str(exc)
        return fail(f"invalid YAML{at}: {reason}")
    if not isinstance(data, Mapping):
        kind = "empty" if data is None else f"a {type(data).__name__}"
        return fail(f"must be a YAML mapping, found {kind}")
    return DefinitionFile(path=path, data=data, folder=folder)


def build_definition(file: DefinitionFile) -> ToolDefinition:
    """Build the typed definition from a file that passed the gate's per-file rules.

    Args:
        file: a file for which :func:`aircore.definitions.rules.check_file` found no problem.

    Returns:
        The frozen :class:`ToolDefinition`.

    Raises:
        ToolDefinitionError: the file has no data (it could not be read).
    """
    data = file.data
    if data is None:
        raise ToolDefinitionError(
            [Problem(file=file.label, field="-", message=file.error or "unreadable", rule="yaml")]
        )
    desc = data["description"]
    layer = data.get("layer")
    return ToolDefinition(
        name=data["name"],
        display_name=data["display_name"].strip(),
        version=str(data["version"]),
        category_key=data["category_key"],
        description=ToolDescription(
            function=desc["function"].strip(),
            when_to_use=desc["when_to_use"].strip(),
            when_not_to_use=desc["when_not_to_use"].strip(),
            io_limits=desc["io_limits"].strip(),
        ),
        display_description=data["display_description"].strip(),
        example_queries=tuple(q.strip() for q in data["example_queries"]),
        read_only=data["read_only"],
        destructive=data["destructive"],
        idempotent=data["idempotent"],
        parameters_schema=_copy(data["parameters_schema"]),
        output_schema=_copy(data.get("output_schema")),
        tags=tuple(data.get("tags") or ()),
        legacy_interface_id=_legacy_interface_id(data),
        required_env_keys=tuple(data.get("required_env_keys") or ()),
        required_scopes=tuple(data.get("required_scopes") or ()),
        owner_org=data.get("owner_org"),
        open_world=bool(data.get("open_world", False)),
        layer=None if layer is None else parse_layer(layer),
        timeout_ms=data.get("timeout_ms"),
        enabled=bool(data.get("enabled", True)),
        register=bool(data.get("register", True)),
        source=file.path,
    )


def _legacy_interface_id(data: Mapping[str, Any]) -> str | None:
    """``legacy_interface_id``, else the standard's older ``mci_service_id`` (kept for
    compatibility, exposed as ``_meta.legacyInterfaceId`` like the new name)."""
    value = data.get("legacy_interface_id")
    return data.get("mci_service_id") if value is None else value


def _copy(value: Any) -> Any:
    """A deep plain-JSON copy, so a definition never shares mutable state with the YAML."""
    if isinstance(value, Mapping):
        return {str(k): _copy(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_copy(v) for v in value]
    return value


def load_definitions(
    directory: str | Path = DEFAULT_DEFINITIONS_DIR, *, config: GateConfig | None = None
) -> dict[str, ToolDefinition]:
    """Read, check and build every definition in a directory, keyed by tool name.

    Args:
        directory: the definitions directory (default ``tool-definitions``).
        config: the gate configuration; read from the directory's ``air-check.yml`` when omitted.

    Returns:
        ``{name: ToolDefinition}`` sorted by name.

    Raises:
        ToolDefinitionError: the directory is missing or a file breaks a rule (see ``problems``).
    """

    root = Path(directory)
    gate = config if config is not None else load_gate_config(root)
    files = read_definition_files(root)
    problems = check_files(files, config=gate)
    if problems:
        raise ToolDefinitionError(
            problems, summary=f"tool definitions in {root} break the standard"
        )
    built = (build_definition(f) for f in files)
    return {d.name: d for d in sorted(built, key=lambda d: d.name)}
