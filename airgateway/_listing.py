"""The aggregated lists (tools, resources, templates, prompts), served a page at a time.

Tools and prompts are what a client's allow list names: each client is listed only those it
may use (:meth:`airgateway.access.Access.visible`), and pages are cut from that list.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Callable, Mapping
from typing import Any

from aircore.errors import INVALID_PARAMS, AirError
from airgateway.access import Access
from airgateway.config import ClientConfig
from airgateway.index import ToolIndex
from airhttp.identity import current_identity

__all__ = ["LIST_METHODS", "PAGE_SIZE", "Lister", "page"]

PAGE_SIZE = 200


class Lister:
    """One list method: where its items come from, the result key, and whether allow lists
    name its items (tools, prompts)."""

    __slots__ = ("allowed", "get", "key")

    def __init__(
        self, key: str, get: Callable[[ToolIndex], list[dict[str, Any]]], *, allowed: bool
    ) -> None:
        self.key = key
        self.get = get
        self.allowed = allowed

    def __call__(
        self,
        index: ToolIndex,
        access: Access | None = None,
        client: ClientConfig | None = None,
        upstream_scopes: Callable[[str], frozenset[str]] | None = None,
        hidden: Callable[[str, Mapping[str, Any]], bool] | None = None,
    ) -> list[dict[str, Any]]:
        """Every item, or (given ``access``) those ``client`` may use; an OAuth caller's tools
        are those its scopes allow (the ``auth:`` globs, and ``upstream_scopes`` of a tool),
        and ``hidden`` leaves out the other items of servers whose scopes it lacks."""
        items = self.get(index)
        if hidden is not None and self.key != "tools":
            items = [item for item in items if not hidden(self.key, item)]
        if not self.allowed:
            return items
        identity = current_identity()  # an OAuth caller sees only the tools it may call
        if (self.key == "tools" and identity is not None and identity.auth == "oauth"
                and (identity.tool_scopes or upstream_scopes is not None)):  # fmt: skip
            items = [item for item in items if identity.may_call(
                name := str(item.get("name", "")),
                upstream_scopes(name) if upstream_scopes is not None else (),
            )]  # fmt: skip
        if access is None:
            return items
        return access.visible(client, items)


LIST_METHODS: dict[str, Lister] = {
    "tools/list": Lister("tools", ToolIndex.tools, allowed=True),
    "resources/list": Lister("resources", ToolIndex.resources, allowed=False),
    "resources/templates/list": Lister("resourceTemplates", ToolIndex.templates, allowed=False),
    "prompts/list": Lister("prompts", ToolIndex.prompts, allowed=True),
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
