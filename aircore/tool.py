"""``define_tool`` and the ``Tool`` record (one registered tool, its schemas and validators)."""

from __future__ import annotations

import inspect
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, get_origin

from aircore.errors import DefinitionError
from aircore.params import params_to_json_schema
from aircore.signature import read_signature
from aircore.validation import SchemaValidator

__all__ = ["ANNOTATION_KEYS", "Tool", "define_tool", "tool_from_function"]

TOOL_NAME = re.compile(r"^[A-Za-z0-9_.\-]{1,128}$")
ANNOTATION_KEYS = frozenset(
    {"title", "readOnlyHint", "destructiveHint", "idempotentHint", "openWorldHint"}
)


def _parse_layer(layer: Any) -> int | None:
    if layer is None:
        return None
    if isinstance(layer, str) and layer.upper().startswith("L"):
        layer = layer[1:]
    try:
        level = int(layer)
    except (TypeError, ValueError):
        level = 0
    if not 1 <= level <= 7 or isinstance(layer, bool):
        raise DefinitionError(f"layer must be 1..7 or 'L1'..'L7', got {layer!r}")
    return level


@dataclass(slots=True, kw_only=True)
class Tool:
    """One tool: its wire description, validators and handler.

    Plugins' ``on_tool_register`` may change ``description``, ``title``, ``annotations``,
    ``meta``, ``layer`` and ``tags`` (or return a replacement ``Tool``).
    """

    name: str
    handler: Callable[..., Any]
    description: str | None = None
    title: str | None = None
    input_schema: dict[str, Any] = field(default_factory=dict)
    output_schema: dict[str, Any] | None = None
    annotations: dict[str, Any] | None = None
    meta: dict[str, Any] | None = None
    layer: int | None = None
    tags: tuple[str, ...] = ()
    call_style: str = "params"  # "params": handler(params[, ctx]); "kwargs": handler(**params)
    wants_ctx: bool = False
    ctx_param: str | None = None
    accepts_extra: bool = True
    is_async: bool = False
    validator: SchemaValidator | None = None
    output_validator: SchemaValidator | None = None
    # Decorator form, signatures beyond plain types: validated JSON arguments → the handler's
    # annotated types (raises -32602); None when the JSON values already are those types.
    convert: Callable[[Mapping[str, Any]], dict[str, Any]] | None = None
    # The return annotation's step from handler value to structuredContent (wraps non-object
    # types as {"result": …}); None: the value is the structured content as it is.
    structure: Callable[[Any], Any] | None = None
    output_wrapped: bool = False
    output_text: bool = False  # the return annotation is exactly str: {"result": text}
    # Where each schema came from, for the definitions' schema priority: "explicit" (a complete
    # object JSON Schema), "derived" (params shorthand/object forms, type hints) or "none".
    input_origin: str = "none"
    output_origin: str = "none"
    # OAuth scopes a caller needs to see and call this tool over HTTP (checked with the
    # resource server's own; see docs/authorization.md); empty: the server-wide ones only.
    required_scopes: frozenset[str] = frozenset()

    def describe(self) -> dict[str, Any]:
        """The ``tools/list`` entry."""
        out: dict[str, Any] = {"name": self.name}
        if self.title is not None:
            out["title"] = self.title
        if self.description is not None:
            out["description"] = self.description
        out["inputSchema"] = self.input_schema
        if self.output_schema is not None:
            out["outputSchema"] = self.output_schema
        if self.annotations:
            out["annotations"] = self.annotations
        if self.meta:
            out["_meta"] = self.meta
        return out

    async def invoke(self, params: dict[str, Any], ctx: Any) -> Any:
        """Call the handler with ``params`` the way it was declared; await it if async.

        A tool with a converter gets the arguments validation converted for these very
        ``params`` (``ctx.bound_arguments``), or converts them here when a middleware replaced
        them after validation.
        """
        if self.call_style == "kwargs":
            convert = self.convert
            if convert is not None:
                typed = ctx.bound_arguments if ctx.bound_source is params else convert(params)
                kwargs = {**params, **typed} if self.accepts_extra else typed
            elif self.accepts_extra:
                kwargs = params
            else:
                kwargs = {k: v for k, v in params.items() if k in self.input_schema["properties"]}
            if self.ctx_param is not None:
                kwargs = {**kwargs, self.ctx_param: ctx}
            value = self.handler(**kwargs)
        elif self.wants_ctx:
            value = self.handler(params, ctx)
        else:
            value = self.handler(params)
        if self.is_async or hasattr(value, "__await__"):
            value = await value
        return value


def _by_keyword(func: Callable[..., Any]) -> Callable[..., Any]:
    """``func``, or for one with positional-only parameters (``def f(a, /, b)``) a callable
    that takes them by keyword and passes them by position (every call failed with
    "got some positional-only arguments passed as keyword arguments")."""
    try:
        params = list(inspect.signature(func).parameters.values())
    except (TypeError, ValueError):
        return func
    first = [p for p in params if p.kind is p.POSITIONAL_ONLY]
    if not first:
        return func
    names = [p.name for p in first]
    defaults = {p.name: p.default for p in first}

    def call(**kwargs: Any) -> Any:
        given = [i for i, name in enumerate(names) if name in kwargs]
        upto = given[-1] + 1 if given else 0  # a gap before a given one takes its default
        args = [kwargs.pop(name) if name in kwargs else defaults[name] for name in names[:upto]]
        return func(*args, **kwargs)

    if inspect.iscoroutinefunction(func):

        async def acall(**kwargs: Any) -> Any:
            return await call(**kwargs)

        return acall
    return call


def _params_handler_shape(handler: Callable[..., Any]) -> bool:
    """Whether a ``handler(params, ctx)`` style handler takes the context argument."""
    try:
        sig = inspect.signature(handler)
    except (TypeError, ValueError):
        return True
    positional = [
        p for p in sig.parameters.values() if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
    ]
    has_var = any(p.kind is p.VAR_POSITIONAL for p in sig.parameters.values())
    if positional and _typed_argument(positional[0].annotation):
        first = positional[0]
        raise DefinitionError(
            f"a define_tool handler is called as handler(params) or handler(params, ctx), but "
            f"{getattr(handler, '__name__', 'it')}({first.name}: …) takes typed arguments: use "
            "@server.tool (or server.tool(fn)) to derive the parameters from the signature"
        )
    if has_var or len(positional) >= 2:
        return True
    if not positional:
        raise DefinitionError("a tool handler must accept the params argument: handler(params)")
    return False


_TYPED_NAMES = frozenset({"int", "str", "float", "bool", "list", "bytes"})


def _typed_argument(annotation: Any) -> bool:
    """An annotation no ``params`` mapping has (``int``, ``str``, ``list[...]`` …)."""
    if isinstance(annotation, str):
        return annotation.split("[", 1)[0].strip() in _TYPED_NAMES
    return annotation in (int, str, float, bool, list, bytes) or get_origin(annotation) is list


def define_tool(
    name: str,
    *,
    handler: Callable[..., Any],
    description: str | None = None,
    params: Mapping[str, Any] | None = None,
    output_schema: Mapping[str, Any] | None = None,
    annotations: Mapping[str, Any] | None = None,
    title: str | None = None,
    meta: Mapping[str, Any] | None = None,
    layer: int | str | None = None,
    tags: Sequence[str] = (),
    required_scopes: Sequence[str] = (),
) -> Tool:
    """Define a tool.

    Args:
        name: 1-128 characters of ``A-Za-z0-9_-.``.
        handler: ``handler(params)`` or ``handler(params, ctx)``, sync or async.
        description: shown to the model.
        params: argument specs in any mix of the seed's forms (see :mod:`aircore.params`).
        output_schema: same forms; the handler's value becomes ``structuredContent``.
        annotations: ``title``, ``readOnlyHint``, ``destructiveHint``, ``idempotentHint``,
            ``openWorldHint``.
        title: a human-readable title.
        meta: ``_meta`` passed through to ``tools/list``.
        layer: the L1-L7 hint for the meter (``3`` or ``"L3"``).
        tags: free-form tags.
        required_scopes: OAuth scopes a caller needs to list and call this tool over HTTP,
            on top of the server-wide ones (403 ``insufficient_scope`` without them). An HTTP
            server serving such a tool refuses to start without ``--auth-config`` or
            ``--token``; over stdio they do not apply (see docs/authorization.md).

    Returns:
        The :class:`Tool`, with its validators compiled.

    Raises:
        DefinitionError: a bad name, params spec, schema, annotation, layer or scope.
    """
    if not isinstance(name, str) or not TOOL_NAME.fullmatch(name):
        raise DefinitionError(f"tool name {name!r} must be 1-128 characters of A-Za-z0-9_-.")
    if not callable(handler):
        raise DefinitionError(f"tool {name!r}: handler must be callable")
    tool = _build(
        name=name,
        handler=handler,
        description=description,
        input_schema=params_to_json_schema(params),
        output_schema=output_schema,
        annotations=annotations,
        title=title,
        meta=meta,
        layer=layer,
        tags=tags,
        call_style="params",
        wants_ctx=_params_handler_shape(handler),
        required_scopes=required_scopes,
    )
    tool.input_origin = _origin(params)
    return tool


def _origin(spec: Mapping[str, Any] | None) -> str:
    """``"explicit"`` for a complete object schema, ``"none"`` for nothing, else ``"derived"``."""
    if not spec:
        return "none"
    full = spec.get("type") == "object" and isinstance(spec.get("properties"), Mapping)
    return "explicit" if full else "derived"


def _build(
    *,
    name: str,
    handler: Callable[..., Any],
    description: str | None,
    input_schema: dict[str, Any],
    output_schema: Mapping[str, Any] | None,
    annotations: Mapping[str, Any] | None,
    title: str | None,
    meta: Mapping[str, Any] | None,
    layer: int | str | None,
    tags: Sequence[str],
    call_style: str,
    wants_ctx: bool = False,
    ctx_param: str | None = None,
    accepts_extra: bool = True,
    typed_formats: bool = False,
    required_scopes: Sequence[str] = (),
) -> Tool:
    if annotations is not None:
        unknown = set(annotations) - ANNOTATION_KEYS
        if unknown:
            raise DefinitionError(
                f"tool {name!r}: unknown annotation(s) {sorted(unknown)}; "
                f"use {sorted(ANNOTATION_KEYS)}"
            )
    if isinstance(tags, str) or not all(isinstance(t, str) for t in tags):
        raise DefinitionError(f"tool {name!r}: tags must be a list of strings")
    out_schema = None if output_schema is None else params_to_json_schema(output_schema)
    tool = Tool(
        name=name,
        handler=handler,
        description=description,
        title=title,
        input_schema=input_schema,
        output_schema=out_schema,
        annotations=dict(annotations) if annotations else None,
        meta=dict(meta) if meta else None,
        layer=_parse_layer(layer),
        tags=tuple(tags),
        call_style=call_style,
        wants_ctx=wants_ctx,
        ctx_param=ctx_param,
        accepts_extra=accepts_extra,
        is_async=inspect.iscoroutinefunction(handler),
        required_scopes=_scopes(name, required_scopes),
    )
    tool.output_origin = _origin(output_schema)
    tool.validator = SchemaValidator(
        input_schema, what=f"tool {name!r} inputSchema", typed_formats=typed_formats
    )
    if out_schema is not None:
        tool.output_validator = SchemaValidator(out_schema, what=f"tool {name!r} outputSchema")
    return tool


_SCOPE_TOKEN = re.compile(r"^[\x21\x23-\x5B\x5D-\x7E]+$")  # RFC 6749 §3.3 scope-token


def _scopes(name: str, scopes: Sequence[str]) -> frozenset[str]:
    """``required_scopes`` checked: a list of RFC 6749 scope tokens (no spaces, no quotes)."""
    if isinstance(scopes, str) or not all(isinstance(s, str) for s in scopes):
        raise DefinitionError(
            f"tool {name!r}: required_scopes must be a list of scope names, got {scopes!r}"
        )
    bad = [s for s in scopes if not _SCOPE_TOKEN.fullmatch(s)]
    if bad:
        raise DefinitionError(
            f"tool {name!r}: {bad[0]!r} is not a scope name (RFC 6749: printable ASCII "
            "without spaces, quotes or backslashes)"
        )
    return frozenset(scopes)


def tool_from_function(
    func: Callable[..., Any],
    *,
    name: str | None = None,
    description: str | None = None,
    output_schema: Mapping[str, Any] | None = None,
    annotations: Mapping[str, Any] | None = None,
    title: str | None = None,
    meta: Mapping[str, Any] | None = None,
    layer: int | str | None = None,
    tags: Sequence[str] = (),
    structured_output: bool | None = None,
    required_scopes: Sequence[str] = (),
) -> Tool:
    """Build a tool from a function whose parameters are the tool's arguments (decorator form).

    Args:
        func: the tool function; its type hints give the schemas (see :mod:`aircore.signature`).
        name: the tool's name (default: the function's).
        description: default: the docstring without its parameter section.
        output_schema: an explicit ``outputSchema`` (wins over the return annotation).
        annotations, title, meta, layer, tags, required_scopes: as in :func:`define_tool`.
        structured_output: ``None`` derives ``outputSchema`` from the return annotation when
            it has a JSON shape; ``False`` never; ``True`` requires one.

    Returns:
        The :class:`Tool`.

    Raises:
        DefinitionError: a bad name, unresolvable hints, or a type with no JSON Schema.
    """
    tool_name = name or func.__name__
    if not TOOL_NAME.fullmatch(tool_name):
        raise DefinitionError(f"tool name {tool_name!r} must be 1-128 characters of A-Za-z0-9_-.")
    sig = read_signature(
        func, tool=tool_name, structured_output=False if output_schema else structured_output
    )
    tool = _build(
        name=tool_name,
        handler=_by_keyword(func),
        description=description if description is not None else sig.description,
        input_schema=sig.input_schema,
        output_schema=output_schema,
        annotations=annotations,
        title=title,
        meta=meta,
        layer=layer,
        tags=tags,
        call_style="kwargs",
        ctx_param=sig.ctx_param,
        accepts_extra=sig.accepts_extra,
        typed_formats=sig.typed_formats,
        required_scopes=required_scopes,
    )
    tool.input_origin = "derived"
    tool.convert = sig.convert
    if sig.output_schema is not None:
        tool.output_schema = sig.output_schema
        tool.output_origin = "derived"
        tool.structure = sig.structure
        tool.output_wrapped = sig.output_wrapped
        tool.output_text = sig.output_text
        if not sig.output_checked:  # pydantic checks what it structures; plain JSON is checked
            tool.output_validator = SchemaValidator(
                sig.output_schema, what=f"tool {tool_name!r} outputSchema"
            )
    return tool
