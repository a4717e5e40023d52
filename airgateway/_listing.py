"""The aggregated lists (tools, resources, templates, prompts), served a page at a time."""

from __future__ import annotations

import base64
import binascii
from collections.abc import Callable, Mapping
from typing import Any

from aircore.errors import INVALID_PARAMS, AirError
from airgateway.index import ToolIndex

__all__ = ["LIST_METHODS", "PAGE_SIZE", "Lister", "page"]

PAGE_SIZE = 200


class Lister:
    """One list method: where its items come from and the result key."""

    __slots__ = ("get", "key")

    def __init__(self, key: str, get: Callable[[ToolIndex], list[dict[str, Any]]]) -> None:
        self.key = key
        self.get = get

    def __call__(self, index: ToolIndex) -> list[dict[str, Any]]:
        return self.get(index)


LIST_METHODS: dict[str, Lister] = {
    "tools/list": Lister("tools", ToolIndex.tools),
    "resources/list": Lister("resources", ToolIndex.resources),
    "resources/templates/list": Lister("resourceTemplates", ToolIndex.templates),
    "prompts/list": Lister("prompts", ToolIndex.prompts),
}


def _cursor(offset: int) -> str:
    return base64.urlsafe_b64encode(f"gw:{offset}".encode()).decode().rstrip("=")


def _offset(cursor: Any) -> int:
    if cursor is None:
        return 0
    try:
        text = base64.urlsafe_b64decode(str(cursor) + "=" * (-len(str(cursor)) % 4)).decode()
        prefix, _, raw = text.partition(":")
        offset = int(raw)
        if prefix != "gw" or offset < 0:
            raise ValueError(text)
    except (ValueError, binascii.Error, UnicodeDecodeError):
        raise AirError(INVALID_PARAMS, f"invalid cursor {cursor!r}") from None
    return offset


def page(items: list[dict[str, Any]], key: str, params: Mapping[str, Any]) -> dict[str, Any]:
    """One page of ``items`` from ``params.cursor``.

    Raises:
        AirError: -32602 for a cursor that is not ours or past the end.
    """
    start = _offset(params.get("cursor"))
    if start > len(items):
        raise AirError(INVALID_PARAMS, f"invalid cursor {params.get('cursor')!r}")
    end = start + PAGE_SIZE
    out: dict[str, Any] = {key: items[start:end]}
    if end < len(items):
        out["nextCursor"] = _cursor(end)
    return out
