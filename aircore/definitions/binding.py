"""Bind a server's registered tools to their definitions: pairing, schema priority, rendering.

This is the part of the standard that needs the server: which tools it registers, which schemas
they bring themselves (explicit or derived from the handler). It is independent of the server
class: a server describes each tool with a :class:`ToolSpec`, and gets back a
:class:`BoundTool` per tool (the MCP metadata to publish) or one :class:`ToolDefinitionError`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from aircore.definitions.config import GateConfig, load_gate_config
from aircore.definitions.errors import DefinitionNotFoundError, ToolDefinitionError
from aircore.definitions.loader import build_definition, read_definition_files
from aircore.definitions.model import ToolDefinition
from aircore.definitions.quality_rules import check_schema_texts
from aircore.definitions.render import render_tool
from aircore.definitions.rules import check_files, check_pairing
from aircore.definitions.schema_rules import check_input_schema, check_output_schema
from aircore.definitions.types import JSONObject, Problem

__all__ = ["BoundTool", "SchemaSource", "ToolSpec", "bind_tools", "check_tools"]

SchemaSource = Literal["explicit", "definition", "derived", "none"]
"""Where a tool's effective schema came from, in priority order."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolSpec:
    """What a registered tool brings itself, before its definition is applied.

    ``input_schema``/``output_schema`` are schemas given explicitly on the tool (they win over
    the definition); ``derived_*`` are schemas derived from the handler (used only when neither
    the tool nor the definition has one).
    """

    name: str
    input_schema: JSONObject | None = None
    derived_input_schema: JSONObject | None = None
    output_schema: JSONObject | None = None
    derived_output_schema: JSONObject | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class BoundTool:
    """A registered tool with its definition applied."""

    definition: ToolDefinition
    tool: JSONObject
    input_source: SchemaSource
    output_source: SchemaSource


def _pick(
    explicit: JSONObject | None, defined: JSONObject | None, derived: JSONObject | None
) -> tuple[JSONObject | None, SchemaSource]:
    if explicit is not None:
        return explicit, "explicit"
    if defined is not None:
        return defined, "definition"
    if derived is not None:
        return derived, "derived"
    return None, "none"


def _closed(schema: JSONObject | None) -> JSONObject | None:
    """A derived input schema, closed: the standard allows no undeclared arguments."""
    if schema is None or "additionalProperties" in schema:
        return schema
    return {**schema, "additionalProperties": False}


def _check_effective(
    input_schema: JSONObject | None,
    output_schema: JSONObject | None,
    source: SchemaSource,
    *,
    file: str,
    config: GateConfig,
) -> list[Problem]:
    """The schema rules on schemas that do not come from the definition file."""
    problems: list[Problem] = []
    if input_schema is not None:
        field = f"inputSchema ({source} on the tool)"
        problems += check_input_schema(input_schema, file=file, field=field, config=config)
        problems += check_schema_texts(input_schema, file=file, field=field, config=config)
    if output_schema is not None:
        field = f"outputSchema ({source} on the tool)"
        problems += check_output_schema(output_schema, file=file, field=field, config=config)
        problems += check_schema_texts(output_schema, file=file, field=field, config=config)
    return problems


def check_tools(
    specs: Sequence[ToolSpec],
    directory: str | Path,
    *,
    target: str,
    config: GateConfig | None = None,
) -> tuple[int, list[Problem], dict[str, BoundTool]]:
    """Run every rule on a server's tools and definitions, pairing included.

    Args:
        specs: one per registered tool.
        directory: the server's definitions directory.
        target: how the server is named in problems.
        config: the gate configuration (default: the directory's ``air-check.yml``).

    Returns:
        ``(definition files checked, problems, bound tools)``; the bound tools are complete only
        when there is no problem.

    Raises:
        ToolDefinitionError: the directory is missing or its ``air-check.yml`` is invalid.
    """
    root = Path(directory)
    gate = config if config is not None else load_gate_config(root)
    files = read_definition_files(root)
    problems = check_files(files, config=gate, paired=True)
    problems += check_pairing([s.name for s in specs], files, target=target)
    bad_files = {p.file for p in problems}
    by_stem = {f.stem: f for f in files}
    bound: dict[str, BoundTool] = {}
    for spec in specs:
        file = by_stem.get(spec.name)
        if file is None:
            continue
        # explicit schemas win whatever the file says: check them even when the file is bad,
        # so one run lists everything left to fix
        problems += _check_effective(spec.input_schema, spec.output_schema, "explicit",
                                     file=file.label, config=gate)  # fmt: skip
        if file.label in bad_files:
            continue
        definition = build_definition(file)
        schema, in_src = _pick(
            spec.input_schema, definition.parameters_schema, _closed(spec.derived_input_schema)
        )
        out, out_src = _pick(
            spec.output_schema, definition.output_schema, spec.derived_output_schema
        )
        if schema is None:
            problems.append(
                Problem(file=file.label, field="parameters_schema", rule="input-schema",
                        message="null, and the tool has no explicit or derived input schema")
            )  # fmt: skip
            continue
        problems += _check_effective(schema if in_src == "derived" else None,
                                     out if out_src == "derived" else None, "derived",
                                     file=file.label, config=gate)  # fmt: skip
        tool = render_tool(definition, input_schema=schema, output_schema=out)
        bound[spec.name] = BoundTool(
            definition=definition, tool=tool, input_source=in_src, output_source=out_src
        )
    return len(files), problems, bound


def bind_tools(
    specs: Sequence[ToolSpec],
    directory: str | Path,
    *,
    target: str,
    config: GateConfig | None = None,
) -> dict[str, BoundTool]:
    """Apply definitions to a server's tools at start, or refuse to start.

    Args:
        specs: one per registered tool.
        directory: the server's definitions directory.
        target: how the server is named in problems (its name).
        config: the gate configuration (default: the directory's ``air-check.yml``).

    Returns:
        ``{tool name: BoundTool}``.

    Raises:
        DefinitionNotFoundError: a registered tool has no definition file (and nothing else is
            wrong).
        ToolDefinitionError: any other rule is broken (all problems listed), e.g. a handler/
            definition name mismatch or a definition no tool uses.
    """
    _, problems, bound = check_tools(specs, directory, target=target, config=config)
    if problems:
        summary = f"server {target!r} cannot start: its tool definitions break the standard"
        if all(p.rule == "missing-definition" for p in problems):
            raise DefinitionNotFoundError(problems, summary=summary)
        raise ToolDefinitionError(problems, summary=summary)
    return bound
