"""``normalize_result``: a handler's return value → MCP content blocks (the seed's table)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import orjson

__all__ = ["dumps_pretty", "normalize_result", "to_call_result"]

_PRETTY = orjson.OPT_INDENT_2 | orjson.OPT_NON_STR_KEYS | orjson.OPT_SERIALIZE_NUMPY


def _default(value: Any) -> Any:
    if isinstance(value, (set, frozenset, tuple)):
        return list(value)
    return str(value)


def dumps_pretty(value: Any) -> str:
    """JSON with two-space indentation (``JSON.stringify(v, null, 2)``); unknown types via str."""
    return orjson.dumps(value, default=_default, option=_PRETTY).decode()


def _text(text: str) -> list[dict[str, Any]]:
    return [{"type": "text", "text": text}]


def normalize_result(value: Any) -> list[dict[str, Any]]:
    """Convert a handler's return value to a list of MCP content blocks.

    =========================================  ===========================================
    value                                      content
    =========================================  ===========================================
    ``"hello"``                                ``[{type: text, text: "hello"}]``
    ``42`` / ``1.5``                           ``[{type: text, text: "42"}]``
    ``True`` / ``False``                       ``[{type: text, text: "true"}]``
    ``None``                                   ``[{type: text, text: ""}]``
    ``[1, 2, 3]``                              text: the list as 2-space indented JSON
    ``{"name": "A"}``                          text: the dict as 2-space indented JSON
    ``{"text": "hi"}``                         ``[{type: text, text: "hi"}]``
    ``{"image": b64, "mimeType": m}``          ``[{type: image, data: b64, mimeType: m}]``
    ``{"resource": {uri, name?, ...}}``        ``[{type: resource_link, uri, name?, ...}]``
    ``{"content": [...]}``                     the list as it is
    =========================================  ===========================================

    Args:
        value: whatever the handler returned.

    Returns:
        The content blocks.
    """
    if isinstance(value, str):
        return _text(value)
    if value is None:
        return _text("")
    if isinstance(value, bool):
        return _text("true" if value else "false")
    if isinstance(value, (int, float)):
        return _text(str(value))
    if isinstance(value, dict) or isinstance(value, Mapping):  # noqa: SIM101 - dict first: fast
        content = value.get("content")
        if isinstance(content, list):
            return content
        text = value.get("text")
        if isinstance(text, str) and len(value) == 1:
            return _text(text)
        image = value.get("image")
        if isinstance(image, str) and isinstance(value.get("mimeType"), str):
            return [{"type": "image", "data": image, "mimeType": value["mimeType"]}]
        resource = value.get("resource")
        if isinstance(resource, Mapping) and isinstance(resource.get("uri"), str):
            return [{"type": "resource_link", **resource}]
    return _text(dumps_pretty(value))


def to_call_result(value: Any, *, structured: bool = False) -> dict[str, Any]:
    """Build a ``CallToolResult`` from a handler value.

    Args:
        value: the handler's (or middleware's) value.
        structured: the tool has an output schema: ``value`` becomes ``structuredContent`` and
            its JSON also goes in a text block.

    Returns:
        ``{"content": [...], "structuredContent"?: ..., "isError"?: ...}``.
    """
    if value.__class__ is str and not structured:  # the common case, kept cheap
        return {"content": [{"type": "text", "text": value}]}
    if (isinstance(value, dict) or isinstance(value, Mapping)) and isinstance(  # noqa: SIM101
        value.get("content"), list
    ):
        return dict(value)
    if structured:
        return {"content": _text(dumps_pretty(value)), "structuredContent": value}
    return {"content": normalize_result(value)}
