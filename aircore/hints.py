"""Plain Python type hints → JSON Schema, without importing pydantic.

A *plain* hint is one whose JSON value already is the Python value the handler expects: ``str``,
``int``, ``float``, ``bool``, ``None``, ``Any``, bare ``list``/``dict``, ``list[X]``,
``dict[str, X]``, ``Literal`` of one scalar type, and unions of those. For them this module
writes exactly the schema pydantic would (so a server of plain tools starts without importing
pydantic, ~100-200 ms), and arguments need no conversion. Every other hint (``Enum``, models,
dataclasses, ``TypedDict``, ``Annotated[…, Field(…)]``, ``datetime`` …) goes through pydantic
(:mod:`aircore.typed`), and so does a tool parameter or result whose hint holds a union of
``Any`` with a member that converts numbers (:func:`typed_schema`; pydantic's own rules decide
there). A test compares both paths with the official SDK's schemas.
"""

from __future__ import annotations

import types
from collections.abc import Callable, Mapping
from typing import Any, Literal, Union, get_args, get_origin

__all__ = [
    "is_plain_mapping_hint",
    "number_coercer",
    "plain_default",
    "plain_schema",
    "typed_schema",
]

Coerce = Callable[[Any], Any]

_SCALARS: dict[Any, str] = {
    str: "string",
    int: "integer",
    float: "number",
    bool: "boolean",
    type(None): "null",
}
_LITERAL_TYPES: dict[type, str] = {str: "string", int: "integer", float: "number", bool: "boolean"}


def _literal(values: tuple[Any, ...]) -> dict[str, Any] | None:
    kinds = {type(v) for v in values}
    if len(kinds) != 1:
        return None  # mixed or None values: pydantic's rules are subtler, let it decide
    kind = _LITERAL_TYPES.get(kinds.pop())
    if kind is None:
        return None
    if len(values) == 1:
        return {"const": values[0], "type": kind}
    return {"enum": list(values), "type": kind}


def plain_schema(hint: Any) -> dict[str, Any] | None:
    """The JSON Schema of a plain hint, or ``None`` when the hint needs pydantic.

    Args:
        hint: a resolved type hint.

    Returns:
        A fresh schema dict (``{}`` for ``Any``), or ``None``.
    """
    if hint is Any:
        return {}
    kind = _SCALARS.get(hint)
    if kind is not None:
        return {"type": kind}
    if hint is list:
        return {"items": {}, "type": "array"}
    if hint is dict:
        return {"additionalProperties": True, "type": "object"}
    origin = get_origin(hint)
    args = get_args(hint)
    if origin is list and len(args) == 1:
        items = plain_schema(args[0])
        return None if items is None else {"items": items, "type": "array"}
    if origin is dict and len(args) == 2 and args[0] is str:
        values = True if args[1] is Any else plain_schema(args[1])
        return None if values is None else {"additionalProperties": values, "type": "object"}
    if origin is Literal:
        return _literal(args)
    if origin is Union or origin is types.UnionType:
        members = [a for a in args if a is not type(None)]
        if any(_numeric_literal(a) for a in members) or _ambiguous(members):
            return None  # pydantic's smart union chooses among them: its rules, its conversion
        schemas = [plain_schema(a) for a in members]
        if any(s is None for s in schemas):
            return None
        if len(members) != len(args):
            schemas.append({"type": "null"})  # pydantic puts null last, wherever None was
        return {"anyOf": schemas}
    return None


def typed_schema(hint: Any) -> dict[str, Any] | None:
    """:func:`plain_schema` for a hint whose values the tool receives converted: ``None`` also
    where :func:`number_coercer` would not convert as pydantic does (left to pydantic)."""
    return None if _converts_beside_any(hint) else plain_schema(hint)


def _converts_beside_any(hint: Any) -> bool:
    """A union of ``Any`` with a member that converts numbers, anywhere in ``hint``: pydantic
    tries the members strictly first (5.0 is no int), then ``Any`` takes the value as it is
    (``int | Any`` keeps 5.0, ``list[float] | Any`` turns [1] into [1.0])."""
    args = get_args(hint)
    origin = get_origin(hint)
    union = origin is Union or origin is types.UnionType
    if union and Any in args and any(number_coercer(a) is not None for a in args):
        return True
    return any(_converts_beside_any(a) for a in args if a is not Any)


def plain_default(value: Any) -> bool:
    """Whether a default is plain JSON (written into the schema as it is, as pydantic does)."""
    if value is None or isinstance(value, (str, bool, int)):
        return True
    if isinstance(value, float):
        return value == value and value not in (float("inf"), float("-inf"))
    if type(value) is list:
        return all(plain_default(v) for v in value)
    if type(value) is dict:
        return all(isinstance(k, str) and plain_default(v) for k, v in value.items())
    return False


def is_plain_mapping_hint(hint: Any) -> bool:
    """``dict``, ``dict[str, Any]``, ``Mapping[str, Any]`` or ``Any``: a shape that says nothing."""
    if hint is Any or hint is dict or hint is Mapping:
        return True
    origin = get_origin(hint)
    args = get_args(hint)
    return origin in (dict, Mapping) and args[:1] == (str,) and args[1:] == (Any,)


def _to_float(value: Any) -> Any:
    return float(value) if type(value) is int else value


def _to_int(value: Any) -> Any:
    # JSON Schema counts 5.0 as an integer; pydantic hands the function 5
    return int(value) if type(value) is float and value.is_integer() else value


def _apply(fixes: list[Coerce], value: Any) -> Any:
    for fix in fixes:
        value = fix(value)
    return value


def _ambiguous(members: list[Any]) -> bool:
    """Members whose JSON kinds overlap in pydantic's lax union: two arrays, two objects
    (``list[int] | list[float]``), or bool beside a number (``bool | int`` makes 0.0 False)."""
    arrays = sum(1 for a in members if a is list or get_origin(a) is list)
    objects = sum(1 for a in members if a is dict or get_origin(a) is dict)
    numbers = int in members or float in members
    return arrays > 1 or objects > 1 or (bool in members and numbers)


def _numeric_literal(hint: Any) -> bool:
    """A ``Literal`` with numbers or booleans (pydantic matches 0.0 to ``Literal[False]``)."""
    return get_origin(hint) is Literal and any(
        type(v) in (int, float, bool) for v in get_args(hint)
    )


def number_coercer(hint: Any) -> Coerce | None:
    """For a plain hint with ``float`` or ``int`` in it, a function that gives JSON numbers
    there the annotated type, as pydantic does (``1`` → ``1.0`` for ``float``, ``5.0`` → ``5``
    for ``int``); ``None`` when nothing needs it.

    A union that admits both ``int`` and ``float`` (or a numeric ``Literal``) keeps numbers as
    they are, as pydantic's exact-type match does.
    """
    if hint is float:
        return _to_float
    if hint is int:
        return _to_int
    origin = get_origin(hint)
    args = get_args(hint)
    if origin is Literal and _numeric_literal(hint):
        table = {v: v for v in args if type(v) in (int, float)}  # 1.0 matches Literal[1]: 1
        return lambda v: v if type(v) is bool else table.get(v, v)
    if origin is list and len(args) == 1:
        item = number_coercer(args[0])
        if item is None:
            return None
        return lambda v: [item(x) for x in v] if type(v) is list else v
    if origin is dict and len(args) == 2:
        value = number_coercer(args[1])
        if value is None:
            return None
        return lambda v: {k: value(x) for k, x in v.items()} if type(v) is dict else v
    if origin is Union or origin is types.UnionType:
        # plain unions have at most one array and one object member (see plain_schema), so
        # the members' fixes touch disjoint JSON kinds; int | float keeps numbers exact
        both = int in args and float in args
        fixes = [
            f
            for a in args
            if not (both and a in (int, float)) and (f := number_coercer(a)) is not None
        ]
        if len(fixes) <= 1:
            return fixes[0] if fixes else None
        return lambda v: _apply(fixes, v)
    return None
