"""``normalize_result``: a handler's return value → MCP content blocks (the seed's table).

Values that are not JSON are converted the documented way, never through ``repr()``:

==============================================  ==========================================
value                                           JSON
==============================================  ==========================================
``datetime``, ``date``, ``time``                ISO 8601 string (``"2024-05-01T12:00:00"``)
``timedelta``                                   ISO 8601 duration in seconds (``"PT90.5S"``)
``set``, ``frozenset``                          list (sorted when the items compare)
``tuple``                                       list
``Decimal``                                     string (keeps every digit)
``UUID``, ``pathlib`` paths                     string
``bytes``, ``bytearray``                        base64 string
``Enum`` member                                 its value
dataclass instance, pydantic model              object of its fields
==============================================  ==========================================

Anything else (an arbitrary object) is refused with :class:`~aircore.errors.ResultError`,
which names the type and where it sits: the client gets an ``isError`` result.
"""

from __future__ import annotations

import base64
import dataclasses
import datetime
import math
import sys
from collections.abc import Mapping
from decimal import Decimal
from pathlib import PurePath
from typing import Any

import orjson

from aircore import wide_json
from aircore.errors import ResultError
from airstore import has_non_finite

__all__ = ["dumps_pretty", "normalize_result", "structured_result", "to_call_result", "to_jsonable"]

_COMPACT = orjson.OPT_NON_STR_KEYS | orjson.OPT_SERIALIZE_NUMPY
_INDENT = orjson.OPT_INDENT_2
_PRETTY = _INDENT | _COMPACT


class _NotJSONError(TypeError):
    """Raised inside orjson's ``default`` for a value with no documented conversion."""


def _default(value: Any) -> Any:
    if isinstance(value, (set, frozenset)):
        try:
            return sorted(value)
        except TypeError:  # items that do not compare: iteration order
            return list(value)
    if isinstance(value, Decimal):
        return str(value)
    if isinstance(value, datetime.timedelta):
        return f"PT{value.total_seconds():g}S"
    if isinstance(value, (bytes, bytearray, memoryview)):
        return base64.b64encode(value).decode("ascii")
    if isinstance(value, PurePath):
        return str(value)
    pydantic = sys.modules.get("pydantic")  # a model can only exist if pydantic is loaded
    if pydantic is not None and isinstance(value, pydantic.BaseModel):
        return value.model_dump(mode="json")
    raise _NotJSONError(type(value).__qualname__)


_WHERE_DEPTH = 8  # the error message names at most this many levels (a cycle has no end)


def _where(value: Any, path: str = "result", depth: int = 0) -> tuple[str, Any] | None:
    """``(path, value)`` of the first value that cannot be encoded (for the error message)."""
    try:
        orjson.dumps(value, default=_default, option=_COMPACT)
    except (orjson.JSONEncodeError, RecursionError):
        try:
            wide_json.dumps(value, default=_default)
        except (ValueError, _NotJSONError):
            pass
        else:
            return None
    else:
        return None
    if isinstance(value, Mapping):
        items: Any = ((f"{path}[{k!r}]", v) for k, v in value.items())
    elif isinstance(value, (list, tuple, set, frozenset)):
        items = ((f"{path}[{i}]", v) for i, v in enumerate(value))
    elif dataclasses.is_dataclass(value) and not isinstance(value, type):
        items = ((f"{path}.{f.name}", getattr(value, f.name)) for f in dataclasses.fields(value))
    else:
        return path, value
    if depth >= _WHERE_DEPTH:
        return path, value
    for sub_path, sub in items:
        found = _where(sub, sub_path, depth + 1)
        if found is not None:
            return found
    return path, value


def dumps_pretty(value: Any) -> str:
    """JSON with two-space indentation (``JSON.stringify(v, null, 2)``).

    Raises:
        ResultError: a value with no JSON conversion (see the module's table).
    """
    return _dumps(value, _PRETTY).decode()


def _dumps(value: Any, option: int) -> bytes:
    try:
        return orjson.dumps(value, default=_default, option=option)
    except orjson.JSONEncodeError as exc:
        not_json = isinstance(exc.__cause__, _NotJSONError)
        if not not_json:  # a big integer, a lone surrogate …: the slow path writes them
            try:
                return wide_json.dumps(value, default=_default, indent=bool(option & _INDENT))
            except _NotJSONError:
                not_json = True
            except ValueError:
                pass  # a circular reference
        where, bad = _where(value) or ("result", value)
        kind = type(bad).__qualname__
        if not_json:
            message = (
                f"the tool returned a value that is not JSON: {where} is {_a(kind)}; return JSON "
                "values, dataclasses or pydantic models (datetime, set, Decimal, UUID and paths "
                "are converted)"
            )
        else:  # an integer beyond 64 bits, a circular reference …
            message = f"the tool returned a value that cannot be JSON-encoded at {where}: {exc}"
        raise ResultError(message, type_name=kind, path=where) from None


def _a(word: str) -> str:
    return f"an {word}" if word[:1].lower() in "aeiou" else f"a {word}"


def to_jsonable(value: Any) -> Any:
    """The plain JSON value (dicts, lists, scalars) of ``value``, converted as in the table.

    Raises:
        ResultError: a value with no JSON conversion.
    """
    data = _dumps(value, _COMPACT)
    return wide_json.loads(data) if wide_json.may_round(data) else orjson.loads(data)


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

    Raises:
        ResultError: the value is not JSON and has no documented conversion.
    """
    if isinstance(value, str):
        return _text(value)
    if value is None:
        return _text("")
    if isinstance(value, bool):
        return _text("true" if value else "false")
    if isinstance(value, (int, float)):
        if isinstance(value, float) and not math.isfinite(value):
            _refuse_non_finite(value, "null")  # str() would write "nan" / "inf"
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
    body = dumps_pretty(value)
    _refuse_non_finite(value, body)
    return _text(body)


def _non_finite(value: Any, path: str = "result") -> tuple[str, float] | None:
    """The place and value of the first NaN or infinity in the JSON value ``value``."""
    if isinstance(value, float):  # numpy.float64 too: orjson writes its NaN as null as well
        return None if math.isfinite(value) else (path, value)
    if isinstance(value, dict):
        for key, item in value.items():
            found = _non_finite(item, f"{path}[{key!r}]")
            if found is not None:
                return found
    elif isinstance(value, list | tuple):
        for i, item in enumerate(value):
            found = _non_finite(item, f"{path}[{i}]")
            if found is not None:
                return found
    elif dataclasses.is_dataclass(value) and not isinstance(value, type):
        for f in dataclasses.fields(value):
            found = _non_finite(getattr(value, f.name), f"{path}.{f.name}")
            if found is not None:
                return found
    return None


def _refuse_non_finite(value: Any, text: str) -> None:
    """Raise when ``value`` holds a NaN or an infinity, which its JSON ``text`` shows as
    ``null`` (orjson): JSON has neither, and a client would get a changed value. Only a text
    holding ``null`` is walked, and the place is looked for only when there is one."""
    if "null" in text and has_non_finite(value):
        found = _non_finite(value)
        place, number = found if found is not None else ("result", math.nan)
        raise ResultError(
            f"the tool returned a value that is not JSON: {place} is {number}"
            " (JSON has no NaN or Infinity; return None or a string instead)",
            type_name="float",
            path=place,
        )


def structured_result(structured: Any, *, wrapped: bool = False) -> dict[str, Any]:
    """The ``CallToolResult`` of a tool with an ``outputSchema``.

    Args:
        structured: the ``structuredContent`` (JSON).
        wrapped: ``structured`` is ``{"result": value}`` around a non-object return type; the
            text block then shows the value itself (a string stays a string), as the SDK does.

    Returns:
        ``{"content": [...], "structuredContent": structured}``.

    Raises:
        ResultError: the value is not JSON.
    """
    value = structured["result"] if wrapped else structured
    content = normalize_result(value) if wrapped else _text(dumps_pretty(value))
    # JSON has no NaN or infinity: written as null, they break the outputSchema on the client
    # ("None is not of type 'number'"); a float overflow names its place here instead
    text = content[0].get("text") if len(content) == 1 else ""
    if not wrapped and isinstance(text, str):  # a wrapped value: normalize_result checked it
        _refuse_non_finite(value, text)
    return {"content": content, "structuredContent": structured}


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
        return structured_result(value)
    return {"content": normalize_result(value)}
