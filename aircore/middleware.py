"""Middleware: hook objects (``before``/``after``/``on_error``) and plain ``(ctx, call_next)``
callables, composed once into one onion.

A hook object's ``before(ctx)`` may return:

- ``None``: go on;
- ``{"params": {...}}``: replace the arguments, then go on;
- ``{"abort": True, "abort_response": value}``: stop here; ``value`` is the call's result
  (inner middleware and the handler do not run; outer ``after`` hooks still do);
- ``{"meta": {...}}``: merge into ``ctx.meta``, then go on.

``after(ctx, result)`` may return a replacement result (``None`` keeps it). ``on_error(ctx,
error)`` runs innermost first (reverse registration order); a value it returns becomes the
normal result, ``None`` passes the error outwards. Hooks may be sync or async.
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any

from aircore.errors import DefinitionError
from aircore.types import AfterHook, BeforeHook, ErrorHook

__all__ = ["as_middleware", "compose"]

Next = Callable[[Any], Awaitable[Any]]
Fn = Callable[[Any, Next], Awaitable[Any]]


async def _maybe_await(value: Any) -> Any:
    if inspect.isawaitable(value):
        return await value
    return value


def _apply_before(ctx: Any, outcome: Any) -> tuple[bool, Any]:
    """Apply a ``before`` return value; ``(aborted, response)``."""
    if outcome is None:
        return False, None
    if not isinstance(outcome, Mapping):
        raise TypeError(f"before() must return None or a dict, got {type(outcome).__name__}")
    if outcome.get("abort"):
        return True, outcome.get("abort_response", outcome.get("abortResponse"))
    params = outcome.get("params")
    if params is not None:
        if not isinstance(params, Mapping):
            raise TypeError("before() returned 'params' that is not a dict")
        ctx.arguments = dict(params)
    meta = outcome.get("meta")
    if isinstance(meta, Mapping):
        ctx.meta.update(meta)
    return False, None


def _from_hooks(obj: Any) -> Fn:
    before: Callable[..., Any] | None
    after: Callable[..., Any] | None
    on_error: Callable[..., Any] | None
    if isinstance(obj, Mapping):
        before, after = obj.get("before"), obj.get("after")
        on_error = obj.get("on_error", obj.get("onError"))
    else:
        before = obj.before if isinstance(obj, BeforeHook) else None
        after = obj.after if isinstance(obj, AfterHook) else None
        on_error = obj.on_error if isinstance(obj, ErrorHook) else None
    if before is None and after is None and on_error is None:
        raise DefinitionError(
            f"middleware {obj!r} is neither an async (ctx, call_next) callable nor an object "
            "with before/after/on_error hooks"
        )

    async def hooks(ctx: Any, call_next: Next) -> Any:
        if before is not None:
            aborted, response = _apply_before(ctx, await _maybe_await(before(ctx)))
            if aborted:
                return response
        try:
            result = await call_next(ctx)
        except Exception as exc:
            if on_error is None:
                raise
            recovered = await _maybe_await(on_error(ctx, exc))
            if recovered is None:
                raise
            return recovered
        if after is not None:
            replaced = await _maybe_await(after(ctx, result))
            if replaced is not None:
                return replaced
        return result

    hooks.__qualname__ = f"hooks[{type(obj).__name__}]"
    return hooks


def as_middleware(obj: Any) -> Fn:
    """Normalize a middleware: an ``async (ctx, call_next)`` callable or a hook object/dict.

    Raises:
        DefinitionError: ``obj`` is neither.
    """
    if isinstance(obj, Mapping | BeforeHook | AfterHook | ErrorHook):
        return _from_hooks(obj)
    if callable(obj):
        return obj  # type: ignore[no-any-return]
    raise DefinitionError(f"middleware {obj!r} is not callable")


def compose(middleware: Sequence[Fn], inner: Next) -> Next:
    """Compose middleware (outermost first) around ``inner`` into one ``call_next``."""
    chain = inner
    for mw in reversed(middleware):
        chain = _link(mw, chain)
    return chain


def _link(mw: Fn, call_next: Next) -> Next:
    async def step(ctx: Any) -> Any:
        return await mw(ctx, call_next)

    return step
