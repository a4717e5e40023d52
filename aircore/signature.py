"""A tool function's signature → its schemas, context parameter and converters (decorator form).

Read once, when the tool is defined. Parameters of plain types (:mod:`aircore.hints`) get their
schema here without pydantic and reach the handler as the JSON gave them (numbers given their
annotated ``int``/``float``); any other parameter
makes the whole signature go through pydantic (:mod:`aircore.typed`), as in the official SDK's
``MCPServer``, and every argument then arrives as its annotated type (an ``Enum`` member, a
model or dataclass instance, a ``datetime`` …). Parameter descriptions come from
``Annotated[…, Field(description=…)]``, a plain string in ``Annotated[…, "…"]``, or, failing
those, from the docstring.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Annotated, Any, get_args, get_origin, get_type_hints

from aircore.docstrings import parse_docstring
from aircore.errors import INTERNAL_ERROR, AirError, DefinitionError
from aircore.hints import is_plain_mapping_hint, number_coercer, plain_default, typed_schema

__all__ = ["Signature", "read_signature"]


@dataclass(slots=True, kw_only=True)
class Signature:
    """What a function's signature says about its tool.

    Attributes:
        input_schema: the ``inputSchema``.
        ctx_param: the parameter that receives the :class:`~aircore.ToolContext`, if any.
        accepts_extra: the function takes ``**kwargs`` (extra arguments pass through).
        convert: validated JSON arguments → the handler's typed keyword arguments (raises
            -32602), or ``None`` when every parameter is plain.
        typed_formats: the input schema came from pydantic, which checks string formats
            (``date-time``, ``uuid`` …) itself while converting.
        output_schema: the ``outputSchema`` from the return annotation, or ``None``.
        structure: handler value → ``structuredContent`` (wraps non-object types as
            ``{"result": …}``; pydantic-checked for non-plain types), or ``None``.
        output_checked: ``structure`` already validates (no JSON Schema check needed).
        output_wrapped: the return type travels as ``{"result": …}``.
        output_text: the return type is exactly ``str`` (a fast path for the common case).
        description: the docstring without its parameter section.
    """

    input_schema: dict[str, Any]
    ctx_param: str | None
    accepts_extra: bool
    convert: Callable[[Mapping[str, Any]], dict[str, Any]] | None
    typed_formats: bool
    output_schema: dict[str, Any] | None
    structure: Callable[[Any], Any] | None
    output_checked: bool
    output_wrapped: bool
    output_text: bool
    description: str | None


def _wrap(value: Any) -> dict[str, Any]:
    return {"result": value}


class _NumberArguments:
    """The converter of a plain signature with numbers in it: JSON ``1`` arrives as ``1.0`` for
    ``float`` and ``5.0`` as ``5`` for ``int`` (as pydantic converts them); every other plain
    value already is its type."""

    __slots__ = ("_fixes", "_floats", "_ints", "_names")

    def __init__(self, names: list[str], hints: dict[str, Any]) -> None:
        self._names = tuple(names)
        # bare int/float parameters are checked inline (the common case); others call a fix
        self._ints = tuple(n for n, h in hints.items() if h is int)
        self._floats = tuple(n for n, h in hints.items() if h is float)
        self._fixes = tuple(
            (n, fix)
            for n, h in hints.items()
            if h is not int and h is not float and (fix := number_coercer(h)) is not None
        )

    def __call__(self, arguments: Mapping[str, Any]) -> dict[str, Any]:
        out = {name: arguments[name] for name in self._names if name in arguments}
        for name in self._ints:
            value = out.get(name)
            if type(value) is float and value.is_integer():
                out[name] = int(value)
        for name in self._floats:
            value = out.get(name)
            if type(value) is int:
                out[name] = float(value)
        for name, fix in self._fixes:
            if name in out:
                out[name] = fix(out[name])
        return out


def _scalar_output(tool: str, hint: Any) -> Callable[[Any], Any] | None:
    """For ``-> str``/``int``/``float``/``bool``: check and wrap in one step (the common case,
    kept off the JSON Schema validator), converting as pydantic does (``1`` → ``1.0``)."""

    def refuse(value: Any) -> AirError:
        return AirError(
            INTERNAL_ERROR,
            f"Output of tool {tool!r} does not match its outputSchema: result: must be "
            f"{_SCALAR_NAMES[hint]}, got {type(value).__name__}",
        )

    if hint is str:

        def text(value: Any) -> Any:
            if type(value) is not str:
                raise refuse(value)
            return {"result": value}

        return text
    if hint is bool:

        def flag(value: Any) -> Any:
            if type(value) is not bool:
                raise refuse(value)
            return {"result": value}

        return flag
    if hint is int:

        def integer(value: Any) -> Any:
            kind = type(value)
            if kind is float and value.is_integer():
                return {"result": int(value)}
            if kind is not int:
                raise refuse(value)
            return {"result": value}

        return integer
    if hint is float:

        def number(value: Any) -> Any:
            kind = type(value)
            if kind is not float and kind is not int:
                raise refuse(value)
            return {"result": float(value)}

        return number
    return None


_SCALAR_NAMES = {str: "string", int: "integer", float: "number", bool: "boolean"}


def _plain_output(hint: Any) -> tuple[dict[str, Any], bool] | None:
    """``(outputSchema, wrapped)`` of a plain return annotation, or ``None`` if not plain."""
    schema = typed_schema(hint)
    if schema is None:
        return None
    if get_origin(hint) is dict:
        return schema, False
    return {"properties": {"result": schema}, "required": ["result"], "type": "object"}, True


def _output(
    tool: str, hints: Mapping[str, Any], structured_output: bool | None
) -> tuple[dict[str, Any] | None, Callable[[Any], Any] | None, bool, bool]:
    """``(schema, structure, checked, wrapped)`` from the return annotation."""
    if structured_output is False or "return" not in hints:
        if structured_output:
            raise DefinitionError(f"tool {tool!r}: structured_output=True needs a return type")
        return None, None, False, False
    hint = hints["return"]
    if is_plain_mapping_hint(hint) or hint is dict:
        found = None
    else:
        plain = _plain_output(hint)
        if plain is not None:
            schema, wrapped = plain
            scalar = _scalar_output(tool, hint)
            if scalar is not None:
                return schema, scalar, True, True
            return schema, (_wrap if wrapped else None), False, wrapped
        from aircore.typed import output_adapter  # pydantic, only for such signatures

        found = output_adapter(tool, hint)
    if found is None:
        if structured_output:
            raise DefinitionError(
                f"tool {tool!r}: return type {hint!r} has no JSON shape for structured output"
            )
        return None, None, False, False
    return found.schema, found.structure, True, found.wrapped


def read_signature(
    func: Callable[..., Any], *, tool: str, structured_output: bool | None = None
) -> Signature:
    """Read a tool function's signature, type hints and docstring.

    A parameter annotated :class:`~aircore.ToolContext` (or named ``ctx``, unless annotated with
    a plain JSON type such as ``str``) receives the context; parameters with defaults are
    optional; ``**kwargs`` accepts extra arguments.

    Args:
        func: the tool function.
        tool: the tool's name (for messages).
        structured_output: ``None`` derives ``outputSchema`` from the return annotation when
            it has a JSON shape; ``False`` never; ``True`` requires one.

    Returns:
        The :class:`Signature`.

    Raises:
        DefinitionError: unresolvable hints, a type with no JSON Schema, or two context
            parameters.
    """
    # in the function: tool.py imports this module, and context.py names Tool (type only);
    # the class itself finds a handler's context parameter
    from aircore.context import ToolContext

    try:
        sig = inspect.signature(func)
        hints = get_type_hints(func, include_extras=True)
    except Exception as exc:  # NameError etc. from unresolvable forward references
        raise DefinitionError(f"tool {tool!r}: cannot resolve type hints: {exc}") from exc
    doc = parse_docstring(inspect.getdoc(func))
    params: list[tuple[str, Any, Any]] = []
    ctx_param: str | None = None
    extra = False
    for pname, p in sig.parameters.items():
        if p.kind is p.VAR_KEYWORD:
            extra = True
        elif p.kind is not p.VAR_POSITIONAL:
            hint = hints.get(pname, Any)
            if (
                hint is ToolContext
                or ToolContext in get_args(hint)
                or _context_by_name(pname, hint)
            ):
                if ctx_param is not None:
                    raise DefinitionError(
                        f"tool {tool!r}: more than one context parameter "
                        f"({ctx_param!r}, {pname!r}); keep one"
                    )
                ctx_param = pname
            else:
                params.append((pname, hint, p.default))
    plain = [_plain_param(hint, default) for _, hint, default in params]
    convert: Callable[[Mapping[str, Any]], dict[str, Any]] | None = None
    typed = not all(s is not None for s in plain)
    if not typed:
        schema = _object_schema(params, plain)
        numeric = {name: hint for name, hint, _ in params if number_coercer(hint) is not None}
        if numeric:
            convert = _NumberArguments([name for name, _, _ in params], numeric)
    else:
        from aircore.typed import ArgumentModel  # pydantic, only for such signatures

        model = ArgumentModel(tool, params)
        schema, convert = model.schema, model.convert
    # a plain string in Annotated[...] describes the parameter (FastMCP's reading); a Field's
    # own description wins, the docstring's comes last
    said = {
        name: texts[0]
        for name, hint, _ in params
        if get_origin(hint) is Annotated
        and (texts := [m for m in hint.__metadata__ if isinstance(m, str)])
    }
    _describe(schema, {**doc.parameters, **said})
    out_schema, structure, checked, wrapped = _output(tool, hints, structured_output)
    return Signature(
        input_schema=schema,
        ctx_param=ctx_param,
        accepts_extra=extra,
        convert=convert,
        typed_formats=typed,
        output_schema=out_schema,
        structure=structure,
        output_checked=checked,
        output_wrapped=wrapped,
        output_text=out_schema is not None and structure is not None and hints.get("return") is str,
        description=doc.description,
    )


def _context_by_name(name: str, hint: Any) -> bool:
    """``ctx`` gets the context unless annotated with a plain JSON type (``ctx: str`` is an
    argument); unannotated, or annotated with another framework's ``Context``, it is ours."""
    return name == "ctx" and (hint is Any or typed_schema(hint) is None)


def _plain_param(hint: Any, default: Any) -> dict[str, Any] | None:
    """The property schema of a plain parameter (default included), or ``None``."""
    schema = typed_schema(hint)
    if schema is None:
        return None
    if default is inspect.Parameter.empty:
        return schema
    if not plain_default(default):
        return None
    return {"default": default, **schema}


def _object_schema(
    params: list[tuple[str, Any, Any]], props: list[dict[str, Any] | None]
) -> dict[str, Any]:
    properties = {name: prop for (name, _, _), prop in zip(params, props, strict=True)}
    required = [name for name, _, default in params if default is inspect.Parameter.empty]
    out: dict[str, Any] = {"type": "object", "properties": properties}
    if required:
        out["required"] = required
    return out


def _describe(schema: dict[str, Any], descriptions: Mapping[str, str]) -> None:
    """Add docstring descriptions to properties that have none of their own."""
    properties = schema.get("properties") or {}
    for name, text in descriptions.items():
        prop = properties.get(name)
        if isinstance(prop, dict) and "description" not in prop:
            prop["description"] = text
