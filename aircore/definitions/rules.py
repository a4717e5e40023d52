"""The quality gate: every rule of the tool-definition standard, each yielding :class:`Problem`s.

Per-file rules run on a decoded YAML mapping (so a missing field is reported, not a crash);
set rules compare files with each other; pairing rules compare definitions with the tools a
server registers (they run only when ``air check`` is given a server, or at server start).
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from aircore.definitions.config import GateConfig
from aircore.definitions.cross_rules import check_similar_tools
from aircore.definitions.model import (
    DESCRIPTION_PARTS,
    NAME_PATTERN,
    OPTIONAL_FIELDS,
    REQUIRED_FIELDS,
)
from aircore.definitions.quality_rules import QUALITY_RULES, rule_category_folder
from aircore.definitions.schema_rules import check_input_schema, check_output_schema
from aircore.definitions.types import DefinitionFile, Problem
from airmeter.layers import parse_layer

__all__ = ["FILE_RULES", "STRUCTURE_RULES", "check_file", "check_files", "check_pairing"]

Data = Mapping[str, Any]
FileRule = Callable[[str, Data, GateConfig], Iterable[Problem]]

_SCOPE_TOKEN = re.compile(r"^[\x21\x23-\x5B\x5D-\x7E]+$")  # RFC 6749 §3.3 scope-token


def _p(file: str, field: str, message: str, rule: str) -> Problem:
    return Problem(file=file, field=field, message=message, rule=rule)


def _text(value: object) -> bool:
    return isinstance(value, str) and bool(value.strip())


def rule_required(file: str, data: Data, config: GateConfig) -> Iterable[Problem]:
    """Every required top-level field is present."""
    for key in REQUIRED_FIELDS:
        if key not in data:
            yield _p(file, key, "required field is missing", "required")


def rule_unknown_fields(file: str, data: Data, config: GateConfig) -> Iterable[Problem]:
    """No key outside the standard (catches typos such as ``read_onyl``)."""
    known = set(REQUIRED_FIELDS) | set(OPTIONAL_FIELDS)
    for key in data:
        if key not in known:
            yield _p(file, str(key), "unknown field (not part of the standard)", "unknown-field")


def rule_name(file: str, data: Data, config: GateConfig) -> Iterable[Problem]:
    """``name`` matches ``^[a-z][a-z0-9_]{2,63}$``."""
    name = data.get("name")
    if "name" in data and (not isinstance(name, str) or not NAME_PATTERN.fullmatch(name)):
        yield _p(file, "name", f"{name!r} must match {NAME_PATTERN.pattern}", "name")


def rule_text_fields(file: str, data: Data, config: GateConfig) -> Iterable[Problem]:
    """``display_name``, ``version``, ``category_key``, ``display_description`` are text."""
    for key in ("display_name", "version", "category_key", "display_description"):
        if key in data and not _text(data[key]):
            hint = ' (quote it: version: "1.0")' if key == "version" else ""
            yield _p(file, key, f"must be non-empty text{hint}", "type")
    for key in ("legacy_interface_id", "mci_service_id", "owner_org"):
        if data.get(key) is not None and not _text(data[key]):
            yield _p(file, key, "must be non-empty text when given", "type")
    new, old = data.get("legacy_interface_id"), data.get("mci_service_id")
    if new is not None and old is not None and new != old:
        message = f"{old!r} differs from legacy_interface_id {new!r}: keep one of the two"
        yield _p(file, "mci_service_id", message, "type")


def rule_description(file: str, data: Data, config: GateConfig) -> Iterable[Problem]:
    """The four description parts exist and are non-empty text."""
    if "description" not in data:
        return
    desc = data["description"]
    if not isinstance(desc, Mapping):
        yield _p(
            file,
            "description",
            "must be a mapping with " + ", ".join(DESCRIPTION_PARTS),
            "description",
        )
        return
    for part in DESCRIPTION_PARTS:
        if part not in desc:
            yield _p(file, f"description.{part}", "description part is missing", "description")
        elif not _text(desc[part]):
            yield _p(file, f"description.{part}", "description part is empty", "description")
    for key in desc:
        if key not in DESCRIPTION_PARTS:
            yield _p(file, f"description.{key}", "unknown description part", "unknown-field")


def rule_examples(file: str, data: Data, config: GateConfig) -> Iterable[Problem]:
    """3-10 example queries, each non-empty text without the tool name."""
    if "example_queries" not in data:
        return
    queries = data["example_queries"]
    if not isinstance(queries, list):
        yield _p(file, "example_queries", "must be a list of user utterances", "examples")
        return
    low, high = config.min_examples, config.max_examples
    if not low <= len(queries) <= high:
        yield _p(
            file,
            "example_queries",
            f"needs {low}-{high} example queries, found {len(queries)}",
            "examples",
        )
    name = data.get("name")
    for i, query in enumerate(queries):
        field = f"example_queries[{i}]"
        if not _text(query):
            yield _p(file, field, "must be non-empty text", "examples")
        elif isinstance(name, str) and name and name.lower() in query.lower():
            yield _p(file, field, f"must not contain the tool name {name!r}", "examples")


def rule_hints(file: str, data: Data, config: GateConfig) -> Iterable[Problem]:
    """The behaviour hints are booleans, and ``read_only`` excludes ``destructive``."""
    for key in ("read_only", "destructive", "idempotent", "open_world", "enabled", "register"):
        if key in data and not isinstance(data[key], bool):
            yield _p(file, key, f"must be true or false, found {data[key]!r}", "type")
    if data.get("read_only") is True and data.get("destructive") is True:
        yield _p(file, "destructive", "a read_only tool cannot be destructive", "hints")


def rule_lists(file: str, data: Data, config: GateConfig) -> Iterable[Problem]:
    """``tags``, ``required_env_keys`` and ``required_scopes`` are lists of text; env keys
    look like env vars, scopes are RFC 6749 scope tokens."""
    for key in ("tags", "required_env_keys", "required_scopes"):
        value = data.get(key)
        if value is None:
            continue
        if not isinstance(value, list) or not all(_text(v) for v in value):
            yield _p(file, key, "must be a list of non-empty strings", "type")
        elif key == "required_env_keys":
            for v in value:
                if not v.replace("_", "").isalnum() or not v.isupper() or v[0].isdigit():
                    yield _p(file, key, f"{v!r} is not an environment variable name", "type")
        elif key == "required_scopes":
            for v in value:
                if not _SCOPE_TOKEN.fullmatch(v):
                    yield _p(file, key, f"{v!r} is not a scope name (RFC 6749: printable "
                             "ASCII without spaces, quotes or backslashes)", "type")  # fmt: skip


def rule_misc(file: str, data: Data, config: GateConfig) -> Iterable[Problem]:
    """``layer`` is L1-L7; ``timeout_ms`` a positive integer."""
    if data.get("layer") is not None:
        try:
            parse_layer(data["layer"])
        except ValueError as exc:
            yield _p(file, "layer", str(exc), "type")
    timeout = data.get("timeout_ms")
    if timeout is not None and (
        not isinstance(timeout, int) or isinstance(timeout, bool) or timeout <= 0
    ):
        yield _p(file, "timeout_ms", "must be a positive integer (milliseconds)", "type")


def rule_schemas(file: str, data: Data, config: GateConfig) -> Iterable[Problem]:
    """The input schema (when not ``null``) and the output schema (when given) pass their rules."""
    if data.get("parameters_schema") is not None:
        yield from check_input_schema(
            data["parameters_schema"], file=file, field="parameters_schema", config=config
        )
    yield from check_output_schema(
        data.get("output_schema"), file=file, field="output_schema", config=config
    )


def rule_file_name(file: str, data: Data, config: GateConfig) -> Iterable[Problem]:
    """The file is named after the tool (``{category}/{name}.yml``), so lookup by name works."""
    name = data.get("name")
    stem = Path(file).stem
    if isinstance(name, str) and name != stem:
        yield _p(
            file,
            "name",
            f"definition name {name!r} differs from its file name {stem!r}",
            "file-name",
        )


STRUCTURE_RULES: tuple[FileRule, ...] = (
    rule_required,
    rule_unknown_fields,
    rule_name,
    rule_file_name,
    rule_text_fields,
    rule_description,
    rule_examples,
    rule_hints,
    rule_lists,
    rule_misc,
    rule_schemas,
)
FILE_RULES: tuple[FileRule, ...] = STRUCTURE_RULES + QUALITY_RULES
"""The per-file rules, in the order their problems are reported: structure, then content."""


def check_file(file: DefinitionFile, *, config: GateConfig) -> list[Problem]:
    """All per-file rules on one file (an unreadable file yields its one read problem).

    Args:
        file: the file as read by :func:`aircore.definitions.loader.read_definition_files`.
        config: the gate configuration.

    Returns:
        The problems, in rule order.
    """
    if file.data is None:
        return [_p(file.label, "-", file.error or "unreadable", "yaml")]
    problems = [p for rule in FILE_RULES for p in rule(file.label, file.data, config)]
    return problems + list(rule_category_folder(file.label, file.data, file.folder))


def check_files(
    files: Sequence[DefinitionFile], *, config: GateConfig, paired: bool = False
) -> list[Problem]:
    """Per-file rules on every file, then duplicate names and file names, then similar tools.

    Args:
        files: every file of a definitions directory.
        config: the gate configuration.
        paired: the pairing rules run too (server mode); the file-name rule then stays quiet,
            because :func:`check_pairing` reports the same fact as a handler/definition mismatch.

    Returns:
        All problems, file by file, then duplicates, then similar-tool references.
    """
    problems = [p for f in files for p in check_file(f, config=config)]
    if paired:
        problems = [p for p in problems if p.rule != "file-name"]
    by_name: dict[str, list[str]] = defaultdict(list)
    by_stem: dict[str, list[str]] = defaultdict(list)
    for f in files:
        name = f.data.get("name") if f.data is not None else None
        if isinstance(name, str):
            by_name[name].append(f.label)
        by_stem[f.stem].append(f.label)
    for name, labels in sorted(by_name.items()):
        for label in labels[1:]:
            problems.append(
                _p(
                    label,
                    "name",
                    f"duplicate tool name {name!r} (also in {labels[0]})",
                    "duplicate",
                )
            )
    for stem, labels in sorted(by_stem.items()):
        for label in labels[1:]:
            problems.append(
                _p(
                    label,
                    "-",
                    f"duplicate definition file name {stem!r} (also {labels[0]})",
                    "duplicate",
                )
            )
    return problems + check_similar_tools(files, config=config)


def check_pairing(
    tool_names: Iterable[str], files: Sequence[DefinitionFile], *, target: str
) -> list[Problem]:
    """Rules that pair a server's registered tools with the definition files.

    A registered tool needs a file named after it; that file's ``name`` must be the tool's name
    (handler/definition mismatch); every file must be used by a registered tool.

    Args:
        tool_names: the names the server registers.
        files: every file of the server's definitions directory.
        target: how the server is named in problems (``server.py:server``).

    Returns:
        The pairing problems.
    """
    by_stem = {f.stem: f for f in files}
    names = sorted(set(tool_names))
    problems: list[Problem] = []
    for tool in names:
        file = by_stem.get(tool)
        if file is None:
            problems.append(
                _p(
                    target,
                    tool,
                    f"registered tool {tool!r} has no definition file "
                    f"(expected {{category}}/{tool}.yml)",
                    "missing-definition",
                )
            )
            continue
        declared = file.data.get("name") if file.data is not None else None
        if isinstance(declared, str) and declared != tool:
            problems.append(
                _p(
                    file.label,
                    "name",
                    f"handler registers {tool!r} but the definition is named {declared!r}",
                    "name-mismatch",
                )
            )
    used = set(names)
    for f in files:
        if f.stem not in used:
            problems.append(
                _p(
                    f.label,
                    "-",
                    f"no registered tool uses this definition ({f.stem!r})",
                    "unused-definition",
                )
            )
    return problems
