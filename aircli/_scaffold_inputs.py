"""What ``air scaffold tool`` collects (the standard's inputs), and what it renders from them:
the definition YAML, the output JSON Schema resource and the mock response.

Anything not given stays a ``TODO:`` placeholder, which the gate rejects, so the check that
runs right after the scaffold lists exactly what is left to fill.
"""

from __future__ import annotations

import dataclasses
import json
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import yaml

from aircore.definitions.naming import Hints, infer_hints

__all__ = [
    "FIELD_TYPES",
    "Field",
    "ScaffoldInputs",
    "ask_missing",
    "definition_yaml",
    "mock_response",
    "output_schema",
    "parse_field",
    "py_literal",
]

FIELD_TYPES = ("string", "integer", "number", "boolean", "object")
"""Types of ``--param``/``--output`` fields (see :func:`parse_field` for constraints, arrays and
optional fields)."""

_MOCK_VALUES: dict[str, Any] = {
    "string": "example",
    "integer": 1,
    "number": 1.5,
    "boolean": True,
    "object": {},
}
_FIELD_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,63}$")


@dataclass(frozen=True, slots=True)
class Field:
    """One input or output field: ``NAME:TYPE:DESCRIPTION``."""

    name: str
    type: str
    description: str
    array: bool = False
    optional: bool = False
    constraints: tuple[tuple[str, Any], ...] = ()
    """JSON Schema keywords of the value (of each item, for an array): ranges, lengths, enum."""

    def schema(self) -> dict[str, Any]:
        """The field's JSON Schema."""
        item: dict[str, Any] = {"type": self.type, **dict(self.constraints)}
        if self.array:
            return {"type": "array", "items": item, "description": self.description}
        return {**item, "description": self.description}

    def example(self) -> Any:
        """A value of the field's type and constraints (for the mock and the generated test)."""
        rules = dict(self.constraints)
        value: Any = _MOCK_VALUES[self.type]
        if "enum" in rules:
            value = rules["enum"][0]
        elif self.type == "string":
            value = value[: rules.get("maxLength", len(value))]
            value += "x" * max(0, rules.get("minLength", 0) - len(value))
        elif self.type in ("integer", "number"):
            low, high = rules.get("minimum"), rules.get("maximum")
            if low is not None and value < low:
                value = low
            if high is not None and value > high:
                value = high
        return [value] if self.array else value


_TYPE = re.compile(r"^(?P<base>[a-z]+)(?:\((?P<rule>[^()]*)\))?(?P<array>\[\])?(?P<optional>\?)?$")


def _number(text: str, kind: str) -> int | float:
    value: int | float = int(text) if kind == "integer" else float(text)
    if value != value or value in (float("inf"), float("-inf")):
        raise ValueError(f"{text!r} is not a finite number")
    return value


def _constraints(kind: str, rule: str | None) -> tuple[tuple[str, Any], ...]:
    """``lo..hi`` (a range: lengths for strings, values for numbers) or ``a|b|c`` (an enum)."""
    if rule is None:
        return ()
    rule = rule.strip()
    if kind in ("boolean", "object") or not rule:
        raise ValueError(f"{kind} takes no constraint ({rule!r})")
    if ".." in rule:
        low_text, high_text = (part.strip() for part in rule.split("..", 1))
        low: int | float | None
        high: int | float | None
        if kind == "string":
            low = int(low_text) if low_text else None
            high = int(high_text) if high_text else None
            keys = ("minLength", "maxLength")
            if (low is not None and low < 0) or (high is not None and high < 0):
                raise ValueError("string lengths cannot be negative")
        else:
            low = _number(low_text, kind) if low_text else None
            high = _number(high_text, kind) if high_text else None
            keys = ("minimum", "maximum")
        if low is not None and high is not None and low > high:
            raise ValueError(f"empty range {rule!r}")
        return tuple((k, v) for k, v in zip(keys, (low, high), strict=True) if v is not None)
    values = [v.strip() for v in rule.split("|")]
    if not all(values):
        raise ValueError(f"empty value in {rule!r}")
    typed = values if kind == "string" else [_number(v, kind) for v in values]
    return (("enum", typed),)


def parse_field(spec: str) -> Field:
    """Parse ``NAME:TYPE:DESCRIPTION``.

    ``TYPE`` is one of :data:`FIELD_TYPES`, optionally followed by a constraint in parentheses —
    ``lo..hi`` (lengths of a string, values of a number; either end may be left out) or
    ``a|b|c`` (the allowed values) — then ``[]`` for an array of such values and ``?`` for an
    optional field: ``unit:string(km|mi):the unit``, ``limit:integer(1..50)?:how many``. The
    description may contain colons.

    Raises:
        ValueError: a malformed spec, an unknown type, a bad constraint or an invalid field name.
    """
    parts = spec.split(":", 2)
    if len(parts) != 3 or not parts[2].strip():
        raise ValueError(f"{spec!r}: expected NAME:TYPE:DESCRIPTION")
    name, kind, description = (p.strip() for p in parts)
    if not _FIELD_NAME.fullmatch(name):
        raise ValueError(f"{spec!r}: field name {name!r} is not an identifier")
    found = _TYPE.match(kind)
    if found is None or found["base"] not in FIELD_TYPES:
        raise ValueError(
            f"{spec!r}: type must be one of {', '.join(FIELD_TYPES)} (TYPE(lo..hi), "
            "TYPE(a|b), TYPE[], TYPE?)"
        )
    try:
        constraints = _constraints(found["base"], found["rule"])
    except ValueError as exc:
        raise ValueError(f"{spec!r}: {exc}") from None
    return Field(name, found["base"], description, array=bool(found["array"]),
                 optional=bool(found["optional"]), constraints=constraints)  # fmt: skip


def py_literal(value: Any) -> str:
    """A Python literal of a JSON-like value, strings in double quotes (as ruff formats them)."""
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, list):
        return "[" + ", ".join(py_literal(v) for v in value) + "]"
    if isinstance(value, dict):
        items = (f"{py_literal(k)}: {py_literal(v)}" for k, v in value.items())
        return "{" + ", ".join(items) + "}"
    return repr(value)


@dataclass(frozen=True, slots=True, kw_only=True)
class ScaffoldInputs:
    """The standard's inputs for one tool (``None``/empty: not given, a placeholder is written)."""

    name: str
    category: str
    display_name: str | None = None
    display_description: str | None = None
    function: str | None = None
    when_to_use: str | None = None
    when_not_to_use: str | None = None
    io_limits: str | None = None
    examples: tuple[str, ...] = ()
    tags: tuple[str, ...] = ()
    owner: str | None = None
    legacy_id: str | None = None
    env_keys: tuple[str, ...] = ()
    read_only: bool | None = None
    destructive: bool | None = None
    idempotent: bool | None = None
    open_world: bool = False
    register: bool = False
    version: str = "0.1.0"
    params: tuple[Field, ...] = ()
    outputs: tuple[Field, ...] = ()

    def hints(self) -> tuple[bool, bool, bool, Hints]:
        """``(read_only, destructive, idempotent, inferred)``: the flags given win over the hints
        inferred from the name's verb."""
        inferred = infer_hints(self.name)
        read_only, destructive = inferred.read_only, inferred.destructive
        if self.read_only:
            read_only, destructive = True, False
        elif self.destructive:
            read_only, destructive = False, True
        idempotent = read_only if self.read_only or self.destructive else inferred.idempotent
        if self.idempotent is not None:
            idempotent = self.idempotent
        return read_only, destructive, idempotent, inferred


_PROMPTS: tuple[tuple[str, str], ...] = (
    ("display_name", "Display name (title)"),
    ("display_description", "Short description for the catalogue"),
    ("function", "What it does and returns"),
    ("when_to_use", "When to use it (the user's requests)"),
    ("when_not_to_use", "When not to use it: similar tools by name, or 없음/none"),
    ("io_limits", "Input limits and output size"),
)


def ask_missing(inputs: ScaffoldInputs, ask: Callable[[str], str]) -> ScaffoldInputs:
    """Ask for every input not given (an empty answer keeps the placeholder).

    Args:
        inputs: what the flags gave.
        ask: asks one question and returns the answer (``input`` on a terminal).

    Returns:
        The inputs with the answers filled in.
    """
    changes: dict[str, Any] = {}
    for key, question in _PROMPTS:
        if getattr(inputs, key) is None:
            answer = ask(f"{question}: ").strip()
            if answer:
                changes[key] = answer
    if not inputs.examples:
        examples = []
        for i in range(1, 11):
            answer = ask(f"Example user request {i} (empty to stop): ").strip()
            if not answer:
                break
            examples.append(answer)
        changes["examples"] = tuple(examples)
    for key, what in (("params", "Input field"), ("outputs", "Output field")):
        if getattr(inputs, key):
            continue
        fields: list[Field] = []
        while True:
            answer = ask(f"{what} NAME:TYPE:DESCRIPTION (empty to stop): ").strip()
            if not answer:
                break
            try:
                fields.append(parse_field(answer))
            except ValueError as exc:
                ask(f"  {exc}; press Enter to go on ")
        changes[key] = tuple(fields)
    return dataclasses.replace(inputs, **changes)


def _todo(value: str | None, hint: str) -> str:
    return value if value else f"TODO: {hint}"


def definition_yaml(inputs: ScaffoldInputs, *, schema_resource: str) -> str:
    """The definition file's text: a header comment and the fields in the standard's order."""
    read_only, destructive, idempotent, _ = inputs.hints()
    display = inputs.name.replace("_", " ").capitalize()
    examples = list(inputs.examples) or [
        f"TODO: a real user request, example {i}" for i in ("one", "two", "three")
    ]
    params = inputs.params or (Field("query", "string", "TODO: what this input is"),)
    data: dict[str, Any] = {
        "name": inputs.name,
        "display_name": inputs.display_name or display,
        "version": inputs.version,
        "category_key": inputs.category,
        "description": {
            "function": _todo(inputs.function, "what the tool does and returns"),
            "when_to_use": _todo(inputs.when_to_use, "the user requests it answers"),
            "when_not_to_use": _todo(
                inputs.when_not_to_use, "similar tools by their names, or 없음/none"
            ),
            "io_limits": _todo(inputs.io_limits, "input limits and output size"),
        },
        "display_description": _todo(inputs.display_description, "a line for the catalogue"),
        "example_queries": examples,
        "read_only": read_only,
        "destructive": destructive,
        "idempotent": idempotent,
        "open_world": inputs.open_world,
        "parameters_schema": {
            "type": "object",
            "properties": {f.name: f.schema() for f in params},
            "required": [f.name for f in params if not f.optional],
            "additionalProperties": False,
        },
        "tags": list(inputs.tags) or [inputs.category],
        "owner_org": inputs.owner or "MCP_TOOL",
        "register": inputs.register,
    }
    if inputs.legacy_id:
        data["legacy_interface_id"] = inputs.legacy_id
    if inputs.env_keys:
        data["required_env_keys"] = list(inputs.env_keys)
    head = (
        f"# Definition of the {inputs.name} tool: the one source of its MCP metadata.\n"
        "# Check with `air check`; every TODO must become real text. The output schema is the\n"
        f"# resource {schema_resource} (the handler passes it to define_tool).\n"
        "# register: false keeps the tool a draft that a central registry leaves out.\n"
    )
    body = yaml.safe_dump(data, allow_unicode=True, sort_keys=False, width=96)
    return head + body


def output_schema(outputs: Sequence[Field]) -> dict[str, Any]:
    """The output JSON Schema resource (a placeholder ``result`` field when none was given)."""
    fields = tuple(outputs) or (Field("result", "string", "TODO: what the tool returns"),)
    return {
        "type": "object",
        "properties": {f.name: f.schema() for f in fields},
        "required": [f.name for f in fields if not f.optional],
    }


def mock_response(outputs: Sequence[Field]) -> dict[str, Any]:
    """A response conforming to :func:`output_schema` (the stub answers it until implemented)."""
    fields = tuple(outputs) or (Field("result", "string", "-"),)
    return {f.name: f.example() for f in fields}
