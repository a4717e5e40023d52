"""Gate rules about the input and output JSON Schemas of a tool."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from aircore.definitions.config import GateConfig, normalize_field_name
from aircore.definitions.metaschema import meta_schema_errors
from aircore.definitions.types import Problem

__all__ = ["check_input_schema", "check_output_schema", "schema_error"]


def schema_error(schema: object) -> str | None:
    """Why ``schema`` is not a usable JSON Schema with an object root, or ``None`` if it is."""
    if not isinstance(schema, Mapping):
        return f"must be a JSON Schema object (a mapping), found {type(schema).__name__}"
    if schema.get("type") != "object":
        return 'the root must declare "type": "object"'
    error = meta_schema_errors(schema)
    if error is not None:
        return f"not a valid JSON Schema: {error}"
    return None


def check_input_schema(
    schema: object, *, file: str, field: str, config: GateConfig
) -> list[Problem]:
    """The rules for an input schema.

    Valid object schema; ``additionalProperties: false`` at the root; a ``description`` on every
    property (nested object properties included); no platform-injected field names anywhere.

    Args:
        schema: the input schema to check.
        file: the file named in problems.
        field: the dotted field path of the schema (``parameters_schema`` or ``inputSchema``).
        config: the gate configuration (injected field names).

    Returns:
        The problems found, in document order.
    """
    error = schema_error(schema)
    if error is not None:
        return [Problem(file=file, field=field, message=error, rule="input-schema")]
    assert isinstance(schema, Mapping)
    problems: list[Problem] = []
    if schema.get("additionalProperties") is not False:
        problems.append(
            Problem(
                file=file,
                field=f"{field}.additionalProperties",
                message="must be false on the input schema",
                rule="additional-properties",
            )
        )
    injected = config.injected_names()
    for path, name, prop in _properties(schema, field):
        if normalize_field_name(name) in injected:
            problems.append(
                Problem(
                    file=file,
                    field=path,
                    message=f"{name!r} is injected by the platform, never a tool input",
                    rule="injected-field",
                )
            )
        if not isinstance(prop, Mapping) or not _text(prop.get("description")):
            problems.append(
                Problem(
                    file=file,
                    field=f"{path}.description",
                    message="every input property needs a non-empty description",
                    rule="input-description",
                )
            )
    return problems


def check_output_schema(
    schema: object, *, file: str, field: str, config: GateConfig
) -> list[Problem]:
    """The rule for a declared output schema: a valid JSON Schema object with an object root.

    Args:
        schema: the declared output schema (``None`` means none declared and is fine).
        file: the file named in problems.
        field: the dotted field path of the schema.
        config: the gate configuration (unused today; kept for symmetry).

    Returns:
        At most one problem.
    """
    del config
    if schema is None:
        return []
    error = schema_error(schema)
    if error is None:
        return []
    return [Problem(file=file, field=field, message=error, rule="output-schema")]


def _properties(schema: Mapping[str, Any], field: str) -> Iterator[tuple[str, str, Any]]:
    """Every ``(dotted path, name, property schema)`` under ``properties``, recursively.

    Follows nested objects' ``properties`` and arrays' ``items``.
    """
    props = schema.get("properties")
    if isinstance(props, Mapping):
        for name, prop in props.items():
            path = f"{field}.properties.{name}"
            yield path, str(name), prop
            if isinstance(prop, Mapping):
                yield from _properties(prop, path)
    items = schema.get("items")
    if isinstance(items, Mapping):
        yield from _properties(items, f"{field}.items")


def _text(value: object) -> bool:
    return isinstance(value, str) and bool(value.strip())
