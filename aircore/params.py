"""Tool parameters in the seed's forms → JSON Schema.

A params mapping maps each argument name to one of:

- a shorthand string: ``"string"``, ``"number"``, ``"integer"``, ``"boolean"``, ``"object"``,
  ``"array"``, each optionally suffixed with ``?`` (optional);
- the object form ``{"type": "string", "description": "...", "optional": True}``;
- any JSON Schema fragment (``{"type": "string", "format": "email"}``, ``{"enum": [...]}``); it is
  required unless it says ``"optional": True`` or has a ``"default"``;
- a plain Python type (``str``, ``int``, ``float``, ``bool``, ``dict``, ``list``, ``list[str]``,
  ``Literal[...]``, ``X | None``; optional when it admits ``None``, which it then accepts).

A mapping that already is an object schema (``{"type": "object", "properties": {...}}``) is used
as it is. Extra arguments are allowed (``additionalProperties`` is not closed), as in the seed.
"""

from __future__ import annotations

import types
from collections.abc import Mapping
from typing import Any, Union, get_args, get_origin

from aircore.errors import DefinitionError
from aircore.hints import plain_schema

__all__ = ["SHORTHAND_TYPES", "param_to_schema", "params_to_json_schema"]

SHORTHAND_TYPES: dict[str, dict[str, Any]] = {
    "string": {"type": "string"},
    "number": {"type": "number"},
    "integer": {"type": "integer"},
    "boolean": {"type": "boolean"},
    "object": {"type": "object"},
    "array": {"type": "array"},
    "any": {},
}


def _python_type_schema(name: str, tp: Any) -> tuple[dict[str, Any], bool]:
    """Schema for a plain Python annotation and whether it is optional (``X | None``)."""
    schema = {"items": {}, "type": "array"} if tp is tuple else plain_schema(tp)
    if schema is None:
        raise DefinitionError(
            f"parameter {name!r}: unsupported type {tp!r} in a params mapping (plain types: "
            "str, int, float, bool, list, dict, Literal, X | None); declare the tool with "
            "@server.tool for Enum, models, dataclasses and other types"
        )
    optional = get_origin(tp) in (Union, types.UnionType) and type(None) in get_args(tp)
    return schema, optional


def param_to_schema(name: str, spec: Any) -> tuple[dict[str, Any], bool]:
    """Convert one parameter spec to ``(JSON Schema, required)``.

    Args:
        name: the parameter name (for error messages).
        spec: shorthand string, object form, JSON Schema fragment or Python type.

    Returns:
        The property schema and whether the parameter is required.

    Raises:
        DefinitionError: the spec is not one of the accepted forms.
    """
    if isinstance(spec, str):
        optional = spec.endswith("?")
        base = spec[:-1] if optional else spec
        if base not in SHORTHAND_TYPES:
            raise DefinitionError(
                f"parameter {name!r}: unknown shorthand {spec!r}; use one of "
                f"{sorted(SHORTHAND_TYPES)} with an optional '?'"
            )
        return dict(SHORTHAND_TYPES[base]), not optional
    if isinstance(spec, Mapping):
        schema = dict(spec)
        optional = schema.pop("optional", False)
        required_flag = schema.pop("required", None)
        if not isinstance(optional, bool):
            raise DefinitionError(f"parameter {name!r}: 'optional' must be a bool")
        kind = schema.get("type")
        if isinstance(kind, str) and kind.endswith("?"):
            kind = kind[:-1]
            optional = True
            schema["type"] = kind
        if isinstance(kind, str) and kind == "any":
            del schema["type"]
        elif kind is not None and not isinstance(kind, (str, list)):
            raise DefinitionError(f"parameter {name!r}: 'type' must be a string")
        if isinstance(required_flag, bool):
            # ``required: False`` in the object form (as in the seed's elicitation schema).
            optional = optional or not required_flag
        elif required_flag is not None:
            schema["required"] = required_flag  # a nested object schema's own required list
        if "default" in schema:
            optional = True
        return schema, not optional
    if isinstance(spec, type) or get_origin(spec) is not None or spec is Any:
        schema, optional = _python_type_schema(name, spec)
        return schema, not optional
    raise DefinitionError(
        f"parameter {name!r}: expected a shorthand string, an object form, a JSON Schema "
        f"fragment or a Python type, got {type(spec).__name__}"
    )


def _is_full_schema(params: Mapping[str, Any]) -> bool:
    return params.get("type") == "object" and isinstance(params.get("properties"), Mapping)


def params_to_json_schema(params: Mapping[str, Any] | None) -> dict[str, Any]:
    """Convert a params mapping (any mix of the accepted forms) to an object JSON Schema.

    Args:
        params: parameter name → spec, a complete object schema, or ``None``.

    Returns:
        ``{"type": "object", "properties": {...}, "required": [...]}``; ``required`` is omitted
        when nothing is required. ``None`` or ``{}`` gives ``{"type": "object", "properties": {}}``.

    Raises:
        DefinitionError: a parameter spec is invalid.
    """
    if params is None:
        return {"type": "object", "properties": {}}
    if not isinstance(params, Mapping):
        raise DefinitionError(f"params must be a mapping, got {type(params).__name__}")
    if _is_full_schema(params):
        return dict(params)
    properties: dict[str, Any] = {}
    required: list[str] = []
    for name, spec in params.items():
        if not isinstance(name, str) or not name:
            raise DefinitionError(f"parameter names must be non-empty strings, got {name!r}")
        schema, is_required = param_to_schema(name, spec)
        properties[name] = schema
        if is_required:
            required.append(name)
    out: dict[str, Any] = {"type": "object", "properties": properties}
    if required:
        out["required"] = required
    return out
