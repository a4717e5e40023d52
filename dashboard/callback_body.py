"""The shape of a Dash callback request (``POST /_dash-update-component``), checked before Dash
dispatches it.

Dash indexes the body without checking it (``body["output"]``, ``callback_map[output]``, the
inputs by position), so a body that is JSON but not a callback request from the page made Dash
raise, the dashboard answer 500 and log a traceback: a client's mistake reported as the server's.
:func:`callback_body_problem` says what is wrong with such a body, so it is answered 400.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["callback_body_problem"]


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
