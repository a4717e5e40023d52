"""Compiled argument and output validation (fastjsonschema, built once per tool).

The whole-schema validator runs on every call; only when it fails are the per-property
validators run, so the error names every bad field, not only the first one.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import fastjsonschema

from aircore.errors import DefinitionError

__all__ = ["SchemaValidator"]

_Check = Callable[[Any], Any]


# String formats fastjsonschema checks. A schema that pydantic wrote is checked for them by
# pydantic itself while converting (with its own, laxer rules: a date-time without an offset),
# so its validator accepts any string there instead of refusing what pydantic accepts.
_FORMATS = ("date", "date-time", "email", "hostname", "idn-email", "idn-hostname", "ipv4",
            "ipv6", "iri", "iri-reference", "json-pointer", "regex", "relative-json-pointer",
            "time", "uri", "uri-reference", "uri-template")  # fmt: skip
_ANY_STRING: dict[str, Any] = dict.fromkeys(_FORMATS, "")


def _compile(schema: Mapping[str, Any], what: str, *, typed_formats: bool = False) -> _Check:
    try:
        check: _Check = fastjsonschema.compile(
            dict(schema), formats=_ANY_STRING if typed_formats else {}
        )
        return check
    except fastjsonschema.JsonSchemaDefinitionException as exc:
        raise DefinitionError(f"{what}: invalid JSON Schema: {exc}") from exc


def _describe(exc: fastjsonschema.JsonSchemaValueException) -> str:
    message = str(exc.message)
    return message.removeprefix("data ").removeprefix("data.")


def _describe_field(field: str, exc: fastjsonschema.JsonSchemaValueException) -> str:
    """``field[0].qty: must be …``: the place inside the field, under the field's own name
    (fastjsonschema calls the value it checks ``data``, a name the client never sent)."""
    place, message = str(exc.name), str(exc.message)
    if not message.startswith(place):
        return f"{field}: {_describe(exc)}"
    return f"{field}{place.removeprefix('data')}: {message[len(place) :].lstrip()}"


class SchemaValidator:
    """Validate values against an object schema; compiled once.

    Args:
        schema: an object JSON Schema (``type: object``).
        what: a label for definition errors (``"tool 'search' inputSchema"``).
        typed_formats: string ``format``s are left to the pydantic conversion that follows.

    Raises:
        DefinitionError: the schema itself is invalid.
    """

    __slots__ = ("_check", "_properties", "_required", "schema")

    _properties: dict[str, _Check]

    def __init__(
        self, schema: Mapping[str, Any], *, what: str, typed_formats: bool = False
    ) -> None:
        self.schema = dict(schema)
        self._check = _compile(self.schema, what, typed_formats=typed_formats)
        props = self.schema.get("properties") or {}
        # per-property validators name every bad field; they share the root's definitions so
        # local "$ref"s resolve, and a property that still cannot stand alone is skipped
        shared: dict[str, Any] = {
            k: self.schema[k] for k in ("$defs", "definitions") if k in self.schema
        }
        self._properties = {}
        for name, sub in props.items():
            if isinstance(sub, Mapping):
                try:
                    self._properties[name] = _compile(
                        {**shared, **sub}, what, typed_formats=typed_formats
                    )
                except DefinitionError:
                    continue
        req = self.schema.get("required") or []
        self._required = [r for r in req if isinstance(r, str)]

    def errors(self, value: Any) -> list[str]:
        """Every problem with ``value``, one readable string per bad field; ``[]`` if valid."""
        try:
            self._check(value)
        except fastjsonschema.JsonSchemaValueException as exc:
            first = _describe(exc)
        else:
            return []
        if not isinstance(value, Mapping):
            return [f"arguments must be an object, got {type(value).__name__}"]
        problems = [
            f"{name}: required field is missing" for name in self._required if name not in value
        ]
        for name, check in self._properties.items():
            if name in value:
                try:
                    check(value[name])
                except fastjsonschema.JsonSchemaValueException as exc:
                    problems.append(_describe_field(name, exc))
        return problems or [first]

    def validate(self, value: Any) -> Any:
        """Return ``value`` (with schema defaults filled) or raise ``ValueError`` naming fields."""
        try:
            return self._check(value)
        except fastjsonschema.JsonSchemaValueException:
            raise ValueError("; ".join(self.errors(value))) from None
