"""Reading KV snapshots (formats 1 to 3, and the seed's plain object) and format-1 journals.

Format-2 and format-3 journals are read by ``_kvspace`` record by record; the format-1 journal
(``[seq, "s", key, value, exp]`` / ``[seq, "d", key]`` lines, no header) is only ever read, to
load a directory written by an earlier release before a writer moves it to this format.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import orjson

from airstore._format import check_version

__all__ = ["LegacyOp", "Snapshot", "parse_snapshot", "replay_v1"]

LegacyOp = tuple[str, str, Any, Any]  # ("s", key, value, exp) | ("d", key, None, None)


@dataclass
class Snapshot:
    """A parsed snapshot: ``pos`` (format 2) or ``seq`` (format 1) and its items."""

    format: int
    position: int  # format 2: journal position covered; format 1: the last seq it holds
    items: dict[str, tuple[Any, float | None]] = field(default_factory=dict)
    bad: list[str] = field(default_factory=list)  # keys whose item is not [value, expiry]


def is_expiry(exp: object) -> bool:
    """Whether a stored expiry is one: ``None`` or an epoch-seconds number (not a bool)."""
    return exp is None or type(exp) is float or type(exp) is int


def parse_snapshot(data: bytes, path: str) -> Snapshot:
    """Parse a snapshot file.

    Raises:
        UnsupportedFormatError: a format this release does not read.
        ValueError: the file is not a snapshot (the caller sets it aside).
    """
    try:
        doc = orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        raise ValueError(str(exc)) from exc
    if not isinstance(doc, dict):
        raise ValueError("snapshot is not a JSON object")
    if "format" in doc and "items" in doc:
        version = check_version(doc["format"], path)
        raw = doc["items"]
        if version >= 3:
            items, bad = _items_v3(raw)
        elif isinstance(raw, dict):
            items, bad = _items_v2(raw)
        else:
            raise ValueError("snapshot items are not an object")
        key = "pos" if version >= 2 else "seq"
        position = doc.get(key, 0)
        if type(position) is not int:
            raise ValueError(f"snapshot {key} is not an int")
        return Snapshot(version, position, items, bad)
    # the seed's plain {key: value} file
    return Snapshot(1, 0, {k: (v, None) for k, v in doc.items()})


def _items_v2(raw: dict[str, Any]) -> tuple[dict[str, tuple[Any, float | None]], list[str]]:
    """Formats 1 and 2: ``{key: [value, exp]}``."""
    items: dict[str, tuple[Any, float | None]] = {}
    bad: list[str] = []
    for k, v in raw.items():
        if type(v) is list and len(v) == 2 and is_expiry(v[1]):
            items[k] = (v[0], v[1])
        else:  # one damaged item costs that key, not the whole snapshot
            bad.append(k)
    return items, bad


def _items_v3(raw: object) -> tuple[dict[str, tuple[Any, float | None]], list[str]]:
    """Format 3: ``[[key, value], [key, value, exp], …]``, the journal's set records."""
    if type(raw) is not list:
        raise ValueError("snapshot items are not an array")
    items: dict[str, tuple[Any, float | None]] = {}
    bad: list[str] = []
    for rec in raw:
        size = len(rec) if type(rec) is list else 0
        key = rec[0] if size else None
        if type(key) is str and size == 2:
            items[key] = (rec[1], None)
        elif type(key) is str and size == 3 and is_expiry(rec[2]):
            items[key] = (rec[1], rec[2])
        else:  # one damaged item costs that key, not the whole snapshot
            bad.append(key if type(key) is str else repr(rec)[:80])
    return items, bad


def replay_v1(data: bytes, snap_seq: int) -> tuple[list[LegacyOp], list[tuple[int, str]]] | None:
    """The operations of a format-1 journal after ``snap_seq``, and its corrupt lines
    ``(line number, reason)``; ``None`` when a gap says the snapshot was replaced under us."""
    ops: list[LegacyOp] = []
    corrupt: list[tuple[int, str]] = []
    body = data[: data.rfind(b"\n") + 1]
    first = True
    for number, line in enumerate(body.split(b"\n")[:-1], 1):
        if not line:
            continue
        try:
            rec = orjson.loads(line)
            seq, op, key = rec[0], rec[1], rec[2]
            if type(seq) is not int or type(key) is not str or op not in ("s", "d"):
                raise ValueError("not a journal record")
            value, exp = (rec[3], rec[4]) if op == "s" else (None, None)
        except (orjson.JSONDecodeError, ValueError, TypeError, IndexError, KeyError) as exc:
            corrupt.append((number, str(exc)))
            continue
        if seq <= snap_seq:
            continue
        if first and snap_seq >= 0 and seq > snap_seq + 1:
            return None
        first = False
        ops.append((op, key, value, exp))
    return ops, corrupt
