"""``Mcp-Param-*`` headers (2026-07-28 Streamable HTTP): tool arguments mirrored into headers.

A tool marks an argument with ``"x-mcp-header": "Region"`` in its ``inputSchema``; clients then
send ``Mcp-Param-Region: <value>`` with every call that carries that argument, so proxies can
route on it. The server checks each such header against the body: a value in the body needs
its header, a header needs its value, and the two must agree (``=?base64?…?=`` decoded first;
integers compared as numbers). Any failure is -32020 (HeaderMismatch), HTTP 400.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from typing import Any

from aircore.errors import HEADER_MISMATCH, AirError, DefinitionError
from aircore.protocol.modern import decode_header, header_value

__all__ = ["HEADER_KEY", "ParamHeader", "check_param_headers", "param_headers"]

HEADER_KEY = "x-mcp-header"
_TOKEN = re.compile(r"^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$")
_KINDS = frozenset({"string", "integer", "boolean"})
_SAFE_INT = 2**53 - 1
_NAME_MAPS = frozenset({"properties", "patternProperties", "$defs", "definitions"})
_MISSING = object()


@dataclass(frozen=True, slots=True)
class ParamHeader:
    """One mirrored argument: its path of property names, header name (lower case), type."""

    path: tuple[str, ...]
    header: str
    kind: str


def _annotations(node: Any, in_names: bool = False) -> Iterator[Any]:
    """Every ``x-mcp-header`` value anywhere in a schema (property names excluded)."""
    if isinstance(node, Mapping):
        for key, value in node.items():
            if not in_names and key == HEADER_KEY:
                yield value
            yield from _annotations(value, not in_names and key in _NAME_MAPS)
    elif isinstance(node, list):
        for item in node:
            yield from _annotations(item)


def _reachable(
    schema: Mapping[str, Any], path: tuple[str, ...]
) -> Iterator[tuple[tuple[str, ...], Mapping[str, Any]]]:
    props = schema.get("properties")
    if not isinstance(props, Mapping):
        return
    for name, sub in props.items():
        if isinstance(sub, Mapping):
            here = (*path, str(name))
            yield here, sub
            yield from _reachable(sub, here)


def param_headers(schema: Mapping[str, Any], *, tool: str) -> tuple[ParamHeader, ...]:
    """The mirrored arguments an ``inputSchema`` declares.

    Raises:
        DefinitionError: an ``x-mcp-header`` that is empty, not an HTTP token, repeated (case
            insensitively), on a type other than string/integer/boolean, or not reachable from
            the root through ``properties`` alone.
    """
    found: list[ParamHeader] = []
    seen: set[str] = set()
    for path, sub in _reachable(schema, ()):
        name = sub.get(HEADER_KEY)
        if name is None:
            continue
        where = f"tool {tool!r}: {HEADER_KEY} of {'.'.join(path)}"
        if not isinstance(name, str) or not _TOKEN.fullmatch(name):
            raise DefinitionError(f"{where} must be a non-empty HTTP token, got {name!r}")
        if name.lower() in seen:
            raise DefinitionError(f"{where}: {name!r} is used twice")
        kind = sub.get("type")
        if kind not in _KINDS:
            raise DefinitionError(f"{where}: only string, integer and boolean may be mirrored")
        seen.add(name.lower())
        found.append(ParamHeader(path, f"mcp-param-{name.lower()}", str(kind)))
    if sum(1 for _ in _annotations(schema)) != len(found):
        raise DefinitionError(
            f"tool {tool!r}: {HEADER_KEY} may only mark properties reachable through "
            "'properties' from the schema root"
        )
    return tuple(found)


def _at(arguments: Any, path: tuple[str, ...]) -> Any:
    node = arguments
    for name in path:
        if not isinstance(node, Mapping) or name not in node:
            return _MISSING
        node = node[name]
    return node


def _agrees(text: str, value: Any) -> bool:
    if isinstance(value, bool):
        return text == ("true" if value else "false")
    if isinstance(value, (int, float)):
        try:
            number = Decimal(text)
        except InvalidOperation:
            return False
        return number.is_finite() and number == Decimal(value) and abs(value) <= _SAFE_INT
    return isinstance(value, str) and text == value


def check_param_headers(
    specs: tuple[ParamHeader, ...], arguments: Any, headers: Mapping[str, str]
) -> None:
    """Check each mirrored argument against its ``Mcp-Param-*`` header.

    Raises:
        AirError: -32020 naming the header that is missing, unexpected, badly encoded or
            different from the body.
    """
    for spec in specs:
        value = _at(arguments, spec.path)
        raw = header_value(headers, spec.header)
        title = spec.header.title()
        if value is _MISSING or value is None:
            if raw is not None:
                raise AirError(
                    HEADER_MISMATCH,
                    f"Header mismatch: {title} is set but the arguments carry no "
                    f"{'.'.join(spec.path)}",
                )
            continue
        if raw is None:
            raise AirError(
                HEADER_MISMATCH,
                f"Header mismatch: {title} is required when the arguments carry "
                f"{'.'.join(spec.path)}",
            )
        text = decode_header(raw)
        if text is None:
            raise AirError(
                HEADER_MISMATCH, f"Header mismatch: {title} holds invalid characters or Base64"
            )
        if not _agrees(text, value):
            raise AirError(
                HEADER_MISMATCH,
                f"Header mismatch: {title} does not match the body value of {'.'.join(spec.path)}",
            )
