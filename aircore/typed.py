"""Type hints that need pydantic: argument models, argument conversion, return serialization.

Imported only when a tool's signature needs more than plain types (see :mod:`aircore.hints`),
so a server of plain tools never loads pydantic. Everything here is built once, when the tool
is defined; per call there is one compiled pydantic-core validation (arguments) and one
validation + JSON dump (a structured return value).

The schemas are pydantic's, as the official SDK's ``MCPServer`` publishes them, minus the
titles pydantic makes up from parameter names.
"""

from __future__ import annotations

import inspect
import sys
import types
import typing
from collections.abc import Mapping, Sequence
from typing import Annotated, Any, get_args, get_origin, get_type_hints

import typing_extensions
from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError, create_model
from pydantic.errors import PydanticUserError
from pydantic.json_schema import GenerateJsonSchema, JsonSchemaWarningKind
from pydantic_core import SchemaError
from typing_extensions import is_typeddict  # typing's misses typing_extensions' on 3.11

from aircore.errors import INTERNAL_ERROR, AirError, DefinitionError, InvalidParamsError
from aircore.hints import is_plain_mapping_hint

__all__ = ["ArgumentModel", "OutputAdapter", "output_adapter", "validation_problems"]

_REFUSED = (PydanticUserError, SchemaError, TypeError, ValueError, NameError)
_ARG_CONFIG = ConfigDict(protected_namespaces=(), arbitrary_types_allowed=False)


class _StrictSchema(GenerateJsonSchema):
    """Raise instead of warning: a hint with no JSON Schema cannot be a tool parameter."""

    def emit_warning(self, kind: JsonSchemaWarningKind, detail: str) -> None:
        raise ValueError(f"{kind}: {detail}")


def validation_problems(exc: ValidationError) -> str:
    """``"field.sub: message; …"`` for every error of a pydantic ``ValidationError``."""
    parts = []
    for err in exc.errors(include_url=False):
        loc = ".".join(str(p) for p in err["loc"]) or "value"
        parts.append(f"{loc}: {err['msg']}")
    return "; ".join(parts)


def _strip_auto_titles(schema: dict[str, Any], user_titles: Mapping[str, bool]) -> None:
    schema.pop("title", None)
    for name, prop in (schema.get("properties") or {}).items():
        if isinstance(prop, dict) and not user_titles.get(name, False):
            prop.pop("title", None)


def portable_hint(hint: Any) -> Any:
    """``hint`` with every ``typing.TypedDict`` in it (nested too) rebuilt as the equivalent
    ``typing_extensions.TypedDict`` on Python < 3.12, where pydantic refuses the former
    ("Please use typing_extensions.TypedDict"); the schema is then the one 3.12 gives. On 3.12
    and later, ``hint`` itself."""
    if sys.version_info >= (3, 12):
        return hint
    return _portable(hint, {})


def _portable(hint: Any, done: dict[type, Any]) -> Any:
    if isinstance(hint, type) and is_typeddict(hint) and type(hint).__module__ == "typing":
        return _typing_extensions_typeddict(hint, done)
    origin = get_origin(hint)
    if origin is None or origin is typing.Literal:
        return hint
    if origin is Annotated:
        inner = _portable(hint.__origin__, done)
        return hint if inner is hint.__origin__ else Annotated[inner, *hint.__metadata__]
    args = get_args(hint)
    new = tuple(_portable(a, done) for a in args)
    if all(n is a for n, a in zip(new, args, strict=True)):
        return hint
    if origin is types.UnionType or origin is typing.Union:
        return typing.Union[new]  # noqa: UP007 (a tuple of members, built at run time)
    if isinstance(hint, types.GenericAlias):
        return types.GenericAlias(origin, new)
    return hint.copy_with(new)


def _typing_extensions_typeddict(cls: type, done: dict[type, Any]) -> Any:
    """The ``typing_extensions.TypedDict`` with ``cls``'s name, docstring, fields and
    required keys (a recursive one is left as it is: pydantic names it)."""
    if cls in done:
        return done[cls] if done[cls] is not None else cls
    done[cls] = None
    required: frozenset[str] = getattr(cls, "__required_keys__", frozenset())
    fields: dict[str, Any] = {}
    for name, field_hint in get_type_hints(cls).items():
        inner = _portable(field_hint, done)
        marker = typing_extensions.Required if name in required else typing_extensions.NotRequired
        fields[name] = marker[inner]
    rebuilt: Any = typing_extensions.TypedDict(cls.__name__, fields)  # type: ignore[misc]  # built at run time
    rebuilt.__doc__ = cls.__doc__
    rebuilt.__module__ = cls.__module__
    rebuilt.__qualname__ = cls.__qualname__
    done[cls] = rebuilt
    return rebuilt


class ArgumentModel:
    """The arguments of one tool as a pydantic model: its JSON Schema and a converter.

    Args:
        tool: the tool's name (for messages and the model's name).
        params: ``(name, hint, default)`` per parameter; ``inspect.Parameter.empty`` when
            there is no default (a ``Field(...)`` default is honoured, as in pydantic).

    Raises:
        DefinitionError: a parameter's type has no JSON Schema (an arbitrary class, a callable).
    """

    __slots__ = ("_fields", "_validate", "schema", "tool")

    def __init__(self, tool: str, params: Sequence[tuple[str, Any, Any]]) -> None:
        self.tool = tool
        fields: dict[str, Any] = {}
        # Synthetic field names (the parameter name is the alias): parameter names that pydantic
        # reserves (model_*, schema, json, _private) need no special case.
        self._fields = [(f"p{i}", name) for i, (name, _, _) in enumerate(params)]
        for (field, _), (name, hint, default) in zip(self._fields, params, strict=True):
            annotated = Annotated[portable_hint(hint), Field(alias=name)]  # type: ignore[valid-type]
            fields[field] = (annotated, ... if default is inspect.Parameter.empty else default)
        try:
            model = create_model(f"{tool}Arguments", __config__=_ARG_CONFIG, **fields)
            schema = model.model_json_schema(by_alias=True, schema_generator=_StrictSchema)
        except _REFUSED as exc:
            raise DefinitionError(_unsupported(tool, params, exc)) from exc
        user_titles = {
            name: model.model_fields[field].title is not None for field, name in self._fields
        }
        _strip_auto_titles(schema, user_titles)
        self.schema: dict[str, Any] = schema
        self._validate = model.__pydantic_validator__.validate_python

    def convert(self, arguments: Mapping[str, Any]) -> dict[str, Any]:
        """The declared parameters as their annotated types (missing ones get defaults).

        Raises:
            InvalidParamsError: -32602 naming every bad field.
        """
        try:
            values = self._validate(arguments).__dict__
        except ValidationError as exc:
            message = f"Invalid arguments for tool {self.tool!r}: {validation_problems(exc)}"
            raise InvalidParamsError(message) from None
        return {name: values[field] for field, name in self._fields}


def _unsupported(tool: str, params: Sequence[tuple[str, Any, Any]], exc: Exception) -> str:
    """Name the first parameter whose type pydantic refuses."""
    for name, hint, _ in params:
        try:
            TypeAdapter(hint).json_schema(schema_generator=_StrictSchema)
        except _REFUSED as err:
            return f"tool {tool!r}: parameter {name!r}: unsupported type {hint!r}: {err}"
    return f"tool {tool!r}: cannot build the arguments schema: {exc}"


class OutputAdapter:
    """A return annotation → ``outputSchema`` and the value → ``structuredContent`` step.

    Attributes:
        schema: the ``outputSchema`` (an object schema).
        wrapped: non-object return types travel as ``{"result": value}``, as in the SDK.
    """

    __slots__ = ("_adapter", "_tool", "schema", "wrapped")

    def __init__(self, tool: str, hint: Any, model: Any, *, wrapped: bool) -> None:
        self._tool = tool
        self.wrapped = wrapped
        self._adapter: TypeAdapter[Any] = TypeAdapter(model)
        schema = self._adapter.json_schema(schema_generator=_StrictSchema)
        if wrapped:
            defs = schema.pop("$defs", None)
            schema = {"properties": {"result": schema}, "required": ["result"], "type": "object"}
            if defs is not None:
                schema["$defs"] = defs
        else:
            schema = _inline_root_ref(schema)
        self.schema: dict[str, Any] = schema

    def structure(self, value: Any) -> Any:
        """The JSON ``structuredContent`` of a handler's value (wrapped when needed).

        Raises:
            AirError: -32603, the value does not match the return annotation.
        """
        try:
            validated = self._adapter.validate_python(value)
            if isinstance(validated, BaseModel):  # a subclass keeps its own fields
                data = validated.model_dump(mode="json", by_alias=True)
            else:
                data = self._adapter.dump_python(validated, mode="json", by_alias=True)
        except ValidationError as exc:
            message = (
                f"Output of tool {self._tool!r} does not match its return annotation: "
                f"{validation_problems(exc)}"
            )
            raise AirError(INTERNAL_ERROR, message) from None
        return {"result": data} if self.wrapped else data


def _inline_root_ref(schema: dict[str, Any]) -> dict[str, Any]:
    """A schema whose root is ``{"$ref": "#/$defs/X"}`` gets X's body at the root."""
    ref = schema.get("$ref")
    prefix = "#/$defs/"
    if not isinstance(ref, str) or not ref.startswith(prefix):
        return schema
    body = schema["$defs"][ref.removeprefix(prefix)]
    return {**body, **{k: v for k, v in schema.items() if k != "$ref"}}


def _class_model(cls: type) -> Any:
    """A model of an annotated class (a dataclass, a plain class), read from its attributes."""
    fields: dict[str, Any] = {}
    for name, hint in get_type_hints(cls).items():
        if name.startswith("_"):
            continue
        default = getattr(cls, name, inspect.Parameter.empty)
        fields[name] = hint if default is inspect.Parameter.empty else (hint, default)
    config = ConfigDict(from_attributes=True)
    return create_model(cls.__name__, __config__=config, **fields)


def output_adapter(tool: str, hint: Any) -> OutputAdapter | None:
    """The output adapter of a return annotation, or ``None`` (no ``outputSchema``).

    Follows the SDK: models, ``TypedDict`` and ``dict[str, X]`` are objects as they are;
    annotated classes (dataclasses) become models read from attributes; scalars, lists,
    tuples, unions and ``None`` are wrapped as ``{"result": …}``. ``Any``, ``dict`` and
    ``dict[str, Any]`` give none (aircore's seed return shapes: ``{"image": …}``, ``{"content":
    […]}``), nor do classes without annotations (``Enum``, ``datetime``).

    Raises:
        DefinitionError: the annotation cannot be serialized to JSON.
    """
    if is_plain_mapping_hint(hint):
        return None
    hint = portable_hint(hint)
    bare = get_args(hint)[0] if get_origin(hint) is Annotated else hint
    origin = get_origin(bare)
    try:
        if bare is None or bare is type(None):
            return OutputAdapter(tool, hint, hint, wrapped=True)
        if origin is dict and get_args(bare)[:1] == (str,):
            return OutputAdapter(tool, hint, hint, wrapped=False)
        if origin is not None:
            return OutputAdapter(tool, hint, hint, wrapped=True)
        if isinstance(bare, type):
            if issubclass(bare, BaseModel) or is_typeddict(bare):
                return OutputAdapter(tool, hint, bare, wrapped=False)
            if bare in (str, int, float, bool, bytes):
                return OutputAdapter(tool, hint, hint, wrapped=True)
            if get_type_hints(bare):
                return OutputAdapter(tool, hint, _class_model(bare), wrapped=False)
            return None
        return OutputAdapter(tool, hint, hint, wrapped=True)
    except _REFUSED as exc:
        raise DefinitionError(
            f"tool {tool!r}: return annotation {hint!r} cannot become an outputSchema: {exc}"
        ) from exc
