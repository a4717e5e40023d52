"""``define_prompt``: named prompt templates with arguments."""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from aircore.errors import DefinitionError, InvalidParamsError

__all__ = ["Prompt", "define_prompt"]


@dataclass(frozen=True, slots=True, kw_only=True)
class Prompt:
    """A prompt: its arguments and the handler that renders its messages."""

    name: str
    handler: Callable[..., Any]
    description: str | None = None
    title: str | None = None
    arguments: tuple[dict[str, Any], ...] = ()
    complete: Callable[[str, str], Any] | None = None
    wants_ctx: bool = False

    def describe(self) -> dict[str, Any]:
        """The ``prompts/list`` entry."""
        out: dict[str, Any] = {"name": self.name}
        if self.title is not None:
            out["title"] = self.title
        if self.description is not None:
            out["description"] = self.description
        out["arguments"] = [dict(a) for a in self.arguments]
        return out

    async def render(self, arguments: Mapping[str, Any], ctx: Any = None) -> dict[str, Any]:
        """Check the arguments and run the handler into a ``prompts/get`` result.

        ``ctx`` (a :class:`~aircore.context.RequestContext`) goes to a handler that takes a
        second argument: ``handler(arguments, ctx)`` may ``await ctx.elicit(...)`` etc.

        Raises:
            InvalidParamsError: a required argument is missing or a value is not a string.
        """
        missing = [
            a["name"] for a in self.arguments if a.get("required") and a["name"] not in arguments
        ]
        if missing:
            raise InvalidParamsError(
                f"prompt {self.name!r}: missing required argument(s): {', '.join(missing)}"
            )
        bad = [k for k, v in arguments.items() if not isinstance(v, str)]
        if bad:
            raise InvalidParamsError(
                f"prompt {self.name!r}: argument values must be strings: {', '.join(bad)}"
            )
        value = (
            self.handler(dict(arguments), ctx) if self.wants_ctx else self.handler(dict(arguments))
        )
        if inspect.isawaitable(value):
            value = await value
        return _messages(value, self.description)


def _message(item: Any) -> dict[str, Any]:
    if isinstance(item, str):
        return {"role": "user", "content": {"type": "text", "text": item}}
    if isinstance(item, Mapping) and "role" in item:
        content = item.get("content")
        if isinstance(content, str):
            return {"role": item["role"], "content": {"type": "text", "text": content}}
        return dict(item)
    raise TypeError(f"a prompt message must be a str or a {{role, content}} dict, got {item!r}")


def _messages(value: Any, description: str | None) -> dict[str, Any]:
    if isinstance(value, Mapping) and "messages" in value:
        out = dict(value)
        out["messages"] = [_message(m) for m in value["messages"]]
        return out
    items = value if isinstance(value, list) else [value]
    out = {"messages": [_message(m) for m in items]}
    if description is not None:
        out["description"] = description
    return out


def define_prompt(
    name: str,
    *,
    handler: Callable[..., Any],
    description: str | None = None,
    title: str | None = None,
    arguments: Mapping[str, Any] | Sequence[Mapping[str, Any]] | None = None,
    complete: Callable[[str, str], Any] | None = None,
) -> Prompt:
    """Define a prompt.

    Args:
        name: the prompt's name.
        handler: ``handler(arguments)`` or ``handler(arguments, ctx)`` (a
            :class:`~aircore.context.RequestContext`: ``ctx.elicit`` …), sync or async; returns
            a string (one user message), a list of strings / ``{"role", "content"}`` dicts, or
            ``{"messages": [...]}``.
        description: shown to the client.
        title: a human-readable title.
        arguments: ``{name: "description"}``, ``{name: {"description", "required"}}`` or a
            list of ``{"name", "description", "required"}``. Required unless ``required: False``.
        complete: ``complete(argument_name, partial_value)`` → suggestions
            (``completion/complete``), sync or async.

    Returns:
        The :class:`Prompt`.

    Raises:
        DefinitionError: bad name, handler or arguments.
    """
    if not isinstance(name, str) or not name:
        raise DefinitionError("prompt name must be a non-empty string")
    if not callable(handler):
        raise DefinitionError(f"prompt {name!r}: handler must be callable")
    args: list[dict[str, Any]] = []
    if isinstance(arguments, Mapping):
        for arg_name, spec in arguments.items():
            entry: dict[str, Any] = {"name": arg_name}
            if isinstance(spec, str):
                entry["description"] = spec
                entry["required"] = True
            elif isinstance(spec, Mapping):
                entry.update({k: v for k, v in spec.items() if k in ("description", "title")})
                entry["required"] = bool(spec.get("required", not spec.get("optional", False)))
            else:
                raise DefinitionError(f"prompt {name!r}: bad argument spec for {arg_name!r}")
            args.append(entry)
    elif arguments is not None:
        for spec in arguments:
            if not isinstance(spec, Mapping) or not isinstance(spec.get("name"), str):
                raise DefinitionError(f"prompt {name!r}: each argument needs a 'name'")
            args.append({"required": True, **spec})
    return Prompt(
        name=name,
        handler=handler,
        description=description,
        title=title,
        arguments=tuple(args),
        complete=complete,
        wants_ctx=_takes_two(handler),
    )


def _takes_two(handler: Callable[..., Any]) -> bool:
    """Whether a prompt handler takes the context as a second positional argument."""
    try:
        sig = inspect.signature(handler)
    except (TypeError, ValueError):
        return False
    params = list(sig.parameters.values())
    positional = [p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    return len(positional) >= 2 or any(p.kind is p.VAR_POSITIONAL for p in params)
