"""Bounded text fields: every string a record carries is cut to a size in encoded JSON bytes.

A record never carries a payload: an error message, an identifier a client chose or a captured
value is cut so that its JSON form (escapes included) fits the cap, and the original size is
kept beside it. So no call-log line can exceed :data:`MAX_LINE_BYTES`, whatever a client sends.
"""

from __future__ import annotations

from typing import Final

import orjson

__all__ = [
    "DEFAULT_MAX_FIELD_BYTES",
    "ELLIPSIS",
    "MAX_FIELD_BYTES_LIMIT",
    "MAX_ID_BYTES",
    "MAX_LINE_BYTES",
    "cut_id",
    "cut_text",
    "utf8_size",
]

DEFAULT_MAX_FIELD_BYTES: Final = 4096
"""Default cap of an error message and of each captured value, in encoded JSON bytes."""
MAX_FIELD_BYTES_LIMIT: Final = 16 * 1024
"""The largest ``max_field_bytes`` a meter accepts (three such fields stay under a line cap)."""
MAX_ID_BYTES: Final = 256
"""Cap of identifiers and names (request and session ids, client, tool, server, version)."""
MAX_LINE_BYTES: Final = 64 * 1024
"""No call-log line is longer than this."""

ELLIPSIS: Final = "…"
"""Ends a cut text."""
_WORST_ESCAPE: Final = 6  # a control character encodes as \\u00XX


def utf8_size(text: str) -> int:
    """Bytes of ``text`` in UTF-8 (lone surrogates count as the 3 bytes they would take)."""
    if text.isascii():
        return len(text)
    return len(text.encode("utf-8", "surrogatepass"))


def _encoded_size(text: str) -> int:
    try:
        return len(orjson.dumps(text)) - 2
    except orjson.JSONEncodeError:  # lone surrogates: not encodable as they are
        return len(orjson.dumps(text.encode("utf-8", "replace").decode("utf-8"))) - 2


def _clean(text: str) -> str:
    """``text`` with lone surrogates replaced, so that any JSON encoder takes it."""
    try:
        orjson.dumps(text)
    except orjson.JSONEncodeError:
        return text.encode("utf-8", "replace").decode("utf-8")
    return text


def cut_text(text: str, limit: int) -> tuple[str, int | None]:
    """``text`` cut so that its JSON encoding (without quotes) is at most ``limit`` bytes.

    Args:
        text: any string (lone surrogates are replaced).
        limit: the cap in encoded bytes.

    Returns:
        ``(text, None)`` when it fits, else ``(prefix + "…", original UTF-8 size)``.
    """
    if len(text) * _WORST_ESCAPE <= limit:
        return _clean(text), None
    if _encoded_size(text) <= limit:
        return _clean(text), None
    original = utf8_size(text)
    room = limit - len(ELLIPSIS.encode())
    lo, hi = 0, min(len(text), room)
    while lo < hi:  # the longest prefix whose encoding fits
        mid = (lo + hi + 1) // 2
        if _encoded_size(text[:mid]) <= room:
            lo = mid
        else:
            hi = mid - 1
    return _clean(text[:lo]) + ELLIPSIS, original


def cut_id(text: str | None) -> str | None:
    """An identifier cut to :data:`MAX_ID_BYTES` (``None`` stays ``None``)."""
    if text is None or (len(text) * _WORST_ESCAPE <= MAX_ID_BYTES and text.isascii()):
        return text  # short ASCII fits whatever it escapes, and holds no surrogate
    return cut_text(text, MAX_ID_BYTES)[0]
