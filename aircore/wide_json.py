"""The slow path for JSON that orjson rounds or refuses, so no value is lost to it.

orjson reads an integer beyond 64 bits as a float (``12345678901234567890123`` arrives as
``1.2345678901234568e+22``) and refuses to write one, and refuses to write a ``str`` holding a
lone surrogate (``os.listdir`` gives those for file names that are not UTF-8). JSON has no
limit on integers and the official SDK passes them exactly, so a frame with a long digit run is
read again by the standard library, and a value orjson cannot write is written by it: big
integers exactly, lone surrogates as U+FFFD, non-finite floats as ``null`` (as orjson writes
them). Both are the rare path; the common one stays orjson.
"""

from __future__ import annotations

import dataclasses
import enum
import json
import math
import re
from collections.abc import Callable
from typing import Any

import orjson

__all__ = ["dumps", "dumps_any", "loads", "may_round"]

_LONG_DIGITS = re.compile(rb"[0-9]{19}")  # -2**63 has 19 digits: anything shorter fits 64 bits
_NOT_DIGITS = bytes(b for b in range(256) if not 0x30 <= b <= 0x39)


def may_round(data: bytes | str) -> bool:
    """Whether orjson may have read an integer of ``data`` as a float (a run of 19 digits)."""
    raw = data.encode() if isinstance(data, str) else data
    # counting the digits (one C pass) spares most frames the regex, which costs 4x more
    if len(raw.translate(None, _NOT_DIGITS)) < 19:
        return False
    return _LONG_DIGITS.search(raw) is not None


def loads(data: bytes | str) -> Any:
    """Read JSON that orjson has already accepted, keeping every integer exact.

    Raises:
        ValueError: nesting deeper than the standard library reads (~1000 levels, where orjson
            reads 1024): the frame is refused like any other unreadable one.
    """
    try:
        return json.loads(data)
    except RecursionError:
        raise ValueError("JSON nested too deep") from None


def _text(value: str) -> str:
    try:
        value.encode()
    except UnicodeEncodeError:  # a lone surrogate (a pair written as two chars is joined)
        return value.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
    return value


def _plain(value: Any, default: Callable[[Any], Any]) -> Any:
    if isinstance(value, str):
        return _text(value)
    if isinstance(value, bool) or value is None or isinstance(value, int):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {
            _text(k if isinstance(k, str) else str(k)): _plain(v, default) for k, v in value.items()
        }
    if isinstance(value, (list, tuple)):
        return [_plain(v, default) for v in value]
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        fields = dataclasses.fields(value)
        return {f.name: _plain(getattr(value, f.name), default) for f in fields}
    if isinstance(value, enum.Enum):
        return _plain(value.value, default)
    try:  # what orjson writes natively (datetimes, UUIDs …)
        return orjson.loads(orjson.dumps(value))
    except orjson.JSONEncodeError:
        return _plain(default(value), default)


def dumps(value: Any, *, default: Callable[[Any], Any] = str, indent: bool = False) -> bytes:
    """Write ``value`` as orjson would (``default`` for what it does not know), where orjson
    could not.

    Raises:
        ValueError: ``value`` still cannot be JSON (a circular reference, nesting deeper than
            ~1000 levels).
        Exception: whatever ``default`` raises for a value it refuses.
    """
    try:
        plain = _plain(value, default)
        if indent:
            text = json.dumps(plain, ensure_ascii=False, indent=2, allow_nan=False)
        else:
            text = json.dumps(plain, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    except RecursionError:
        raise ValueError("circular reference or nesting too deep") from None
    return text.encode()


def dumps_any(value: Any, *, default: Callable[[Any], Any] = str, option: int = 0) -> bytes:
    """orjson first (the common, fast path), then :func:`dumps` for what orjson refuses (an
    integer beyond 64 bits, a lone surrogate, nesting over 255 levels).

    Raises:
        ValueError: ``value`` cannot be JSON at all (a circular reference, or ``default``
            failing on a value).
    """
    try:
        return orjson.dumps(value, default=default, option=option)
    except orjson.JSONEncodeError:
        pass
    try:
        return dumps(value, default=default, indent=bool(option & orjson.OPT_INDENT_2))
    except ValueError:
        raise
    except Exception as exc:  # ``default`` refused a value (its own error, or a broken __str__)
        raise ValueError(f"a value cannot be written as JSON: {type(exc).__name__}") from exc
