"""``define_resource``: static resources and ``{var}`` URI templates."""

from __future__ import annotations

import base64
import inspect
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from aircore.errors import DefinitionError

__all__ = ["Resource", "define_resource"]

_VAR = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*)\}")


@dataclass(frozen=True, slots=True, kw_only=True)
class Resource:
    """A static resource (``uri``) or a template (``uri`` containing ``{var}``)."""

    uri: str
    name: str
    handler: Callable[..., Any]
    description: str | None = None
    mime_type: str | None = None
    title: str | None = None
    pattern: re.Pattern[str] | None = None
    wants_vars: bool = False
    complete: Callable[[str, str], Any] | None = None

    @property
    def is_template(self) -> bool:
        """Whether the URI has ``{var}`` placeholders."""
        return self.pattern is not None

    def describe(self) -> dict[str, Any]:
        """The ``resources/list`` or ``resources/templates/list`` entry."""
        out: dict[str, Any] = {"uriTemplate" if self.is_template else "uri": self.uri}
        out["name"] = self.name
        if self.title is not None:
            out["title"] = self.title
        if self.description is not None:
            out["description"] = self.description
        if self.mime_type is not None:
            out["mimeType"] = self.mime_type
        return out

    def match(self, uri: str) -> dict[str, str] | None:
        """The template variables if ``uri`` matches, else ``None`` (static: exact match)."""
        if self.pattern is None:
            return {} if uri == self.uri else None
        m = self.pattern.fullmatch(uri)
        return None if m is None else m.groupdict()

    async def read(self, uri: str, variables: dict[str, str]) -> list[dict[str, Any]]:
        """Run the handler and shape its value into ``contents``."""
        value = self.handler(uri, variables) if self.wants_vars else self.handler(uri)
        if inspect.isawaitable(value):
            value = await value
        return _contents(uri, value, self.mime_type)


def _contents(uri: str, value: Any, mime: str | None) -> list[dict[str, Any]]:
    items = value if isinstance(value, list) else [value]
    out: list[dict[str, Any]] = []
    for item in items:
        if isinstance(item, (bytes, bytearray)):
            out.append(
                {
                    "uri": uri,
                    "mimeType": mime or "application/octet-stream",
                    "blob": base64.b64encode(item).decode(),
                }
            )
        elif isinstance(item, Mapping) and ("text" in item or "blob" in item):
            entry = {"uri": uri, **item}
            if mime and "mimeType" not in entry:
                entry["mimeType"] = mime
            out.append(entry)
        else:
            from aircore.results import dumps_pretty

            text = item if isinstance(item, str) else dumps_pretty(item)
            out.append({"uri": uri, "mimeType": mime or "text/plain", "text": text})
    return out


def define_resource(
    uri: str,
    *,
    handler: Callable[..., Any],
    name: str | None = None,
    description: str | None = None,
    mime_type: str | None = None,
    title: str | None = None,
    complete: Callable[[str, str], Any] | None = None,
) -> Resource:
    """Define a resource or a resource template.

    Args:
        uri: a URI (``config://app``) or a template (``users://{user_id}/profile``).
        handler: ``handler(uri)`` or ``handler(uri, variables)``, sync or async; returns
            ``str`` (text), ``bytes`` (blob), ``{"text"|"blob", "mimeType"?}``, any JSON value
            (sent as JSON text), or a list of those.
        name: defaults to the URI.
        description: shown to the client.
        mime_type: the content's MIME type.
        title: a human-readable title.
        complete: ``complete(argument_name, partial_value)`` → suggestions for a template
            variable (``completion/complete``), sync or async.

    Returns:
        The :class:`Resource`.

    Raises:
        DefinitionError: empty URI or a handler that is not callable.
    """
    if not isinstance(uri, str) or not uri:
        raise DefinitionError("resource uri must be a non-empty string")
    if not callable(handler):
        raise DefinitionError(f"resource {uri!r}: handler must be callable")
    pattern = None
    if _VAR.search(uri):
        parts: list[str] = []
        pos = 0
        for m in _VAR.finditer(uri):
            parts.append(re.escape(uri[pos : m.start()]))
            parts.append(f"(?P<{m.group(1)}>[^/]+)")
            pos = m.end()
        parts.append(re.escape(uri[pos:]))
        pattern = re.compile("".join(parts))
    try:
        nparams = len(inspect.signature(handler).parameters)
    except (TypeError, ValueError):
        nparams = 2
    return Resource(
        uri=uri,
        name=name or uri,
        handler=handler,
        description=description,
        mime_type=mime_type,
        title=title,
        pattern=pattern,
        wants_vars=nparams >= 2,
        complete=complete,
    )
