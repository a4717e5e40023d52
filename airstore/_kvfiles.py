"""Reading KV snapshots (formats 1 to 3, and the seed's plain object) and journal records.

:func:`journal_line` and :func:`record_fields` are the one definition of a good record: the
loader (``_kvspace``), the snapshot parser and ``air store check`` all judge a record by them, so
a check never passes what a load drops. The format-1 journal (``[seq, "s", key, value, exp]`` /
``[seq, "d", key]`` lines, no header) is only ever read, to load a directory written by an
earlier release before a writer moves it to this format.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import orjson

from airstore import _platform
from airstore._format import check_version

__all__ = [
    "LegacyOp",
    "LineFinder",
    "Record",
    "Snapshot",
    "journal_line",
    "legacy_line",
    "parse_snapshot",
    "record_fields",
    "replay_v1",
]

LegacyOp = tuple[str, str, Any, Any]  # ("s", key, value, exp) | ("d", key, None, None)
Record = tuple[str, Any, Any, bool]  # (key, value, expiry, deleted)


@dataclass
class Snapshot:
    """A parsed snapshot: ``pos`` (format 2) or ``seq`` (format 1) and its items."""

    format: int
    position: int  # format 2: journal position covered; format 1: the last seq it holds
    items: dict[str, tuple[Any, float | None]] = field(default_factory=dict)
    bad: list[str] = field(default_factory=list)  # what is wrong with each item it dropped


def is_expiry(exp: object) -> bool:
    """Whether a stored expiry is one: ``None`` or an epoch-seconds number (not a bool)."""
    return exp is None or type(exp) is float or type(exp) is int


def record_fields(rec: object) -> Record:
    """``(key, value, expiry, deleted)`` of one decoded journal record: ``[key, value]``,
    ``[key, value, expiry]`` or ``[key]`` (a delete), or an earlier release's ``{key: [value,
    expiry]}`` / ``{key: null}`` (format 2, which such a writer may still append beside us).

    Raises:
        ValueError: ``rec`` is no record (the message says why).
    """
    if type(rec) is list:
        size = len(rec)
        if not 0 < size < 4 or type(rec[0]) is not str:
            raise ValueError("a record is not [key], [key, value] or [key, value, expiry]")
        if size < 3:
            return rec[0], rec[1] if size == 2 else None, None, size == 1
        if not is_expiry(rec[2]):
            raise ValueError("a record's expiry is not a number")
        return rec[0], rec[1], rec[2], False
    if type(rec) is dict and len(rec) == 1:
        ((key, val),) = rec.items()
        if val is None:
            return key, None, None, True
        if type(val) is list and len(val) == 2 and is_expiry(val[1]):
            return key, val[0], val[1], False
    raise ValueError("a record is not [key, value, expiry] (nor an earlier {key: [value, expiry]})")


def journal_line(line: bytes) -> Record:
    """:func:`record_fields` of one journal line (without its newline).

    Raises:
        ValueError: the line is not JSON, or not a record; the message quotes the line.
    """
    try:
        return record_fields(orjson.loads(line))
    except ValueError as exc:  # orjson.JSONDecodeError is one
        raise ValueError(f"{exc}: {line[:80]!r}") from None


class LineFinder:
    """1-based line numbers, in the journal file, of bad lines found in ``data``: the bytes read
    from offset ``start`` of the file open as ``fd`` (``None``: this process's own records, in no
    file yet). Only the rare path of a bad line counts newlines."""

    def __init__(self, data: bytes, fd: int | None, start: int | None) -> None:
        self._data = data
        self._at = 0  # offset in data of the last line found …
        self._number: int | None = None  # … and its line number in the file
        self._search = 0
        if fd is not None and start is not None and start >= 0:
            self._number = _newlines_before(fd, start) + 1

    def of(self, line: bytes) -> int | None:
        """The line number of the next whole line equal to ``line`` (lines are asked for in
        the order they appear in ``data``)."""
        data, i = self._data, self._search
        while (i := data.find(line, i)) >= 0:
            end = i + len(line)
            if (i == 0 or data[i - 1] == 10) and data[end : end + 1] in (b"\n", b""):
                break
            i += 1
        else:
            return None
        self._search = i + len(line)
        if self._number is None:
            return None
        self._number += data.count(b"\n", self._at, i)
        self._at = i
        return self._number


def _newlines_before(fd: int, end: int) -> int:
    count, at = 0, 0
    while at < end and (block := _platform.pread(fd, min(1 << 20, end - at), at)):
        count += block.count(b"\n")
        at += len(block)
    return count


_OURS = ("items", "pos", "seq", "airstore", "base")  # beside "format": a file air wrote


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
    bad_key = _damaged_key(doc)
    if bad_key is not None:
        return _damaged(doc, bad_key, path)
    if "format" in doc and any(k in doc for k in _OURS):
        # ours (a later format may drop "items"): never read as the seed's plain object
        version = check_version(doc["format"], path)
        if "items" not in doc:
            raise ValueError("snapshot has no items")
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


def _damaged_key(doc: dict[str, Any]) -> str | None:
    """The one key of a snapshot of format 2 or later that a changed byte made unknown (its
    ``"format"`` or ``"pos"``), else ``None``: the document is ``format``, ``pos`` and
    ``items`` with one of the first two missing and one unknown key holding an int."""
    if len(doc) != 3 or "items" not in doc or ("format" in doc) == ("pos" in doc):
        return None
    (unknown,) = (k for k in doc if k not in ("format", "pos", "items"))
    if unknown in _OURS or type(doc[unknown]) is not int:  # format 1's "seq": intact
        return None
    return unknown


def _damaged(doc: dict[str, Any], unknown: str, path: str) -> Snapshot:
    """A snapshot whose ``format`` or ``pos`` key was damaged: its items are read by their shape
    (an array: format 3 and later; an object: format 2), and a lost ``pos`` is taken from the
    journal (position -1: replaying records the snapshot already holds leaves the same keys).
    The damage is reported as a corrupt line; nothing is dropped.

    Raises:
        UnsupportedFormatError: an intact format key names a newer format.
        ValueError: the items are neither shape.
    """
    raw = doc["items"]
    if "format" in doc:
        version = check_version(doc["format"], path)
        position, what = -1, "position (pos)"
    else:
        version, position, what = (3 if isinstance(raw, list) else 2), doc["pos"], "format"
    if version >= 3:
        items, bad = _items_v3(raw)
    elif isinstance(raw, dict):
        items, bad = _items_v2(raw)
    else:
        raise ValueError("snapshot items are not an object")
    detail = f"the snapshot's {what} key is damaged ({unknown!r}); its items are read"
    return Snapshot(version, position, items, [detail, *bad])


def _items_v2(raw: dict[str, Any]) -> tuple[dict[str, tuple[Any, float | None]], list[str]]:
    """Formats 1 and 2: ``{key: [value, exp]}``."""
    items: dict[str, tuple[Any, float | None]] = {}
    bad: list[str] = []
    for k, v in raw.items():
        if type(v) is list and len(v) == 2 and is_expiry(v[1]):
            items[k] = (v[0], v[1])
        else:  # one damaged item costs that key, not the whole snapshot
            bad.append(f"item {k!r} is not [value, expiry]")
    return items, bad


def _items_v3(raw: object) -> tuple[dict[str, tuple[Any, float | None]], list[str]]:
    """Format 3: ``[[key, value], [key, value, exp], …]``, the journal's set records."""
    if type(raw) is not list:
        raise ValueError("snapshot items are not an array")
    items: dict[str, tuple[Any, float | None]] = {}
    bad: list[str] = []
    for number, rec in enumerate(raw, 1):
        try:
            key, value, exp, deleted = record_fields(rec)
            if deleted or type(rec) is not list:
                raise ValueError("an item is not [key, value] or [key, value, expiry]")
        except ValueError as exc:  # one damaged item costs that key, not the whole snapshot
            bad.append(f"item {number}: {exc}: {orjson.dumps(rec)[:80]!r}")
            continue
        items[key] = (value, exp)
    return items, bad


def legacy_line(line: bytes) -> tuple[int, str, str, Any, Any]:
    """``(seq, op, key, value, expiry)`` of one format-1 journal line.

    Raises:
        ValueError: the line is not JSON, or not a format-1 record.
    """
    try:
        rec = orjson.loads(line)
        seq, op, key = rec[0], rec[1], rec[2]
        if type(seq) is not int or type(key) is not str or op not in ("s", "d"):
            raise ValueError("not a format-1 journal record")
        value, exp = (rec[3], rec[4]) if op == "s" else (None, None)
    except (ValueError, TypeError, IndexError, KeyError) as exc:
        raise ValueError(f"{exc}: {line[:80]!r}") from None
    return seq, op, key, value, exp


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
            seq, op, key, value, exp = legacy_line(line)
        except ValueError as exc:
            corrupt.append((number, str(exc)))
            continue
        if seq <= snap_seq:
            continue
        if first and snap_seq >= 0 and seq > snap_seq + 1:
            return None
        first = False
        ops.append((op, key, value, exp))
    return ops, corrupt
