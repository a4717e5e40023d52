"""Is this a JSON Schema? A draft-07 meta-schema, compiled once, checks it in microseconds.

Compiling every tool's schema just to see whether it is valid costs milliseconds each
(fastjsonschema generates and ``exec``\\ s code); validating the schema *as data* against the
meta-schema costs microseconds. The meta-schema below follows draft-07's keyword table (types,
ranges, sub-schema positions, ``format: regex`` for ``pattern``), which is what the tools'
validators are compiled with.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import cache
from typing import Any

import fastjsonschema

__all__ = ["META_SCHEMA", "meta_schema_errors"]

_SUB: dict[str, Any] = {"$ref": "#"}
_SUBS = {"type": "object", "additionalProperties": _SUB}
_NON_NEGATIVE = {"type": "integer", "minimum": 0}
_SIMPLE_TYPES = {"enum": ["array", "boolean", "integer", "null", "number", "object", "string"]}
_STRINGS = {"type": "array", "items": {"type": "string"}, "uniqueItems": True}
_SCHEMA_ARRAY = {"type": "array", "minItems": 1, "items": _SUB}

_KEYWORDS: tuple[tuple[tuple[str, ...], dict[str, Any]], ...] = (
    (("$id", "$ref", "$comment", "$schema", "title", "description", "format",
      "contentMediaType", "contentEncoding"), {"type": "string"}),
    (("maximum", "minimum", "exclusiveMaximum", "exclusiveMinimum"), {"type": "number"}),
    (("maxLength", "minLength", "maxItems", "minItems", "maxProperties", "minProperties"),
     _NON_NEGATIVE),
    (("additionalItems", "contains", "additionalProperties", "propertyNames", "if", "then",
      "else", "not"), _SUB),
    (("definitions", "$defs", "properties", "patternProperties"), _SUBS),
    (("allOf", "anyOf", "oneOf"), _SCHEMA_ARRAY),
    (("uniqueItems", "readOnly", "writeOnly"), {"type": "boolean"}),
    (("examples", "enum"), {"type": "array"}),
    (("multipleOf",), {"type": "number", "exclusiveMinimum": 0}),
    (("pattern",), {"type": "string", "format": "regex"}),
    (("items",), {"anyOf": [_SUB, _SCHEMA_ARRAY]}),
    (("required",), _STRINGS),
    (("type",), {"anyOf": [_SIMPLE_TYPES, {"type": "array", "items": _SIMPLE_TYPES,
                                           "minItems": 1, "uniqueItems": True}]}),
    (("dependencies",), {"type": "object",
                         "additionalProperties": {"anyOf": [_SUB, _STRINGS]}}),
)  # fmt: skip

META_SCHEMA: dict[str, Any] = {
    "$schema": "http://json-schema.org/draft-07/schema#",
    "type": ["object", "boolean"],
    "properties": {key: schema for keys, schema in _KEYWORDS for key in keys},
}
"""The draft-07 meta-schema (its keyword table; ``default``/``const`` accept anything)."""


@cache
def _validator() -> Callable[[Any], Any]:
    return fastjsonschema.compile(META_SCHEMA)


def meta_schema_errors(schema: Any) -> str | None:
    """Why ``schema`` is not a draft-07 JSON Schema, or ``None`` when it is one.

    Args:
        schema: a decoded JSON value.

    Returns:
        The first violation, naming the keyword path (``data.properties.q.type …``), or ``None``.
    """
    try:
        _validator()(schema)
    except fastjsonschema.JsonSchemaValueException as exc:
        return str(exc.message)
    return None
