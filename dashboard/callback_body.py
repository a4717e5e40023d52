"""The shape of a Dash callback request (``POST /_dash-update-component``), checked before Dash
dispatches it.

Dash indexes the body without checking it (``body["output"]``, ``callback_map[output]``, the
inputs by position), so a body that is JSON but not a callback request from the page made Dash
raise, the dashboard answer 500 and log a traceback: a client's mistake reported as the server's.
:func:`callback_body_problem` says what is wrong with such a body, so it is answered 400.
:func:`parse_callback_body` reads the body first without recursion (the standard library's JSON
reader raised ``RecursionError`` on a body nested ~1000 deep: 500 and a traceback per request)
and refuses one nested deeper than :data:`MAX_DEPTH`, so Dash's own reading of it stays safe.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import orjson

__all__ = ["MAX_DEPTH", "callback_body_problem", "parse_callback_body"]

MAX_DEPTH = 64
"""Deepest nesting of a callback body: the page sends a few levels (a figure's state holds
about ten); Dash reads the body with the standard library's recursive JSON reader."""


def _is_prop(item: object) -> bool:
    return isinstance(item, dict) and "id" in item and "property" in item


def _props_problem(name: str, value: object, expected: int | None) -> str | None:
    """``inputs``/``state``/``outputs``: a list of props (or of lists of props: pattern
    matching), as many as the callback declares."""
    if not isinstance(value, list):
        return f"{name} is not a list"
    for item in value:
        group = item if isinstance(item, list) else [item]
        if not all(_is_prop(prop) for prop in group):
            return f"{name} holds an item that is not an {{id, property}} object"
    if expected is not None and len(value) != expected:
        return f"{name} has {len(value)} items, the callback takes {expected}"
    return None


def callback_body_problem(body: object, callback_map: Mapping[str, Any]) -> str | None:
    """Why ``body`` (parsed JSON) is not a callback request Dash can dispatch; ``None`` if it is.

    Args:
        body: the request's parsed JSON body.
        callback_map: the Dash app's ``callback_map`` (output id → callback).

    Returns:
        One readable line, or ``None``.
    """
    if not isinstance(body, dict):
        return "the body is not a JSON object"
    output = body.get("output")
    if not isinstance(output, str):
        return "output is missing or not a string"
    callback = callback_map.get(output)
    if not isinstance(callback, dict):
        return "output names no callback of this dashboard"
    for name in ("inputs", "state"):
        declared = callback.get(name)
        expected = len(declared) if isinstance(declared, list) else None
        problem = _props_problem(name, body.get(name, []), expected)
        if problem is not None:
            return problem
    outputs = body.get("outputs")
    if outputs is not None and not callback.get("no_output"):
        # a multi-output callback's id is "..a.x...b.y..": a list of that many; else one prop
        if output.startswith(".."):
            problem = _props_problem("outputs", outputs, len(output[2:-2].split("...")))
        else:
            problem = None if _is_prop(outputs) else "outputs is not an {id, property} object"
        if problem is not None:
            return problem
    changed = body.get("changedPropIds", [])
    if not isinstance(changed, list) or not all(isinstance(c, str) for c in changed):
        return "changedPropIds is not a list of strings"
    return None


def _too_deep(value: object, limit: int) -> bool:
    """Whether ``value`` nests containers deeper than ``limit`` (walked without recursion)."""
    stack: list[tuple[object, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict):
            children: Any = item.values()
        elif isinstance(item, list):
            children = item
        else:
            continue
        if depth > limit:
            return True
        stack.extend((child, depth + 1) for child in children)
    return False


def parse_callback_body(data: bytes) -> tuple[object, str | None]:
    """Read a callback request's body: ``(parsed, None)``, or ``(None, problem)`` for one
    that is not JSON or is nested deeper than :data:`MAX_DEPTH`.

    Args:
        data: the raw request body.

    Returns:
        The parsed JSON and ``None``, or ``None`` and one readable line.
    """
    try:
        body = orjson.loads(data)  # iterative, and refuses nesting past 1024 levels
    except orjson.JSONDecodeError as exc:
        reason = "nested too deep" if "depth" in str(exc) else "not JSON"
        return None, f"the body is {reason}"
    if _too_deep(body, MAX_DEPTH):
        return None, f"the body is nested deeper than {MAX_DEPTH} levels"
    return body, None
