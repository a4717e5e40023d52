"""Newest-first reading of JSONL logs: blocks backwards from the end, stopping early.

The first block is 32 KB (a newest-100 query touches only it); later blocks double up to 1 MB
so that long filtered scans make few system calls. A field-equality filter first searches the
raw bytes for the encoded ``"field":value`` and parses only the lines that contain it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import orjson

from airstore import _platform
from airstore._format import HEADER_PREFIX
from airstore._validate import matches, needle
from airstore.types import Entry

__all__ = ["Collector", "is_entry", "iter_chunks", "needle_for"]

FIRST_BLOCK = 32 * 1024
MAX_BLOCK = 1024 * 1024

CorruptHook = Callable[[int], None]
"""Called with the byte offset of a line that does not parse (relative to the chunk's file)."""


def needle_for(flt: dict[str, Any] | None) -> bytes | None:
    """Bytes every matching line must contain, or ``None`` when nothing safe can be derived.

    The first field with a unique encoding (see :func:`needle`) gives ``"field":value``; else
    only ``"field":`` is safe.
    """
    if not flt:
        return None
    best: bytes | None = None
    for field, value in flt.items():
        if type(field) is not str:
            return None
        exact = needle(field, value)
        if exact is not None:
            return exact
        if best is None:
            best = orjson.dumps(field) + b":"
    return best


def iter_chunks(fd: int, end: int) -> Iterator[tuple[int, bytes]]:
    """Yield ``(base_offset, chunk)`` from the end of the file backwards.

    Each chunk holds only complete lines (each ending in ``\\n``); a partial last line (a write
    in flight, or a torn tail not yet repaired) is left out.
    """
    pos = end
    carry = b""
    block = FIRST_BLOCK
    at_tail = True
    while pos > 0:
        start = max(0, pos - block)
        data = _platform.pread(fd, pos - start, start)
        if carry:
            data += carry
            carry = b""
        pos = start
        block = min(block * 2, MAX_BLOCK)
        if at_tail:
            cut = data.rfind(b"\n") + 1
            if cut == 0:
                continue  # the whole block is one unfinished line
            data = data[:cut]
            at_tail = False
        base = start
        if pos > 0:
            nl = data.find(b"\n")
            if nl < 0 or nl == len(data) - 1:
                carry = data
                continue
            carry = data[: nl + 1]
            data = data[nl + 1 :]
            base = start + nl + 1
        yield base, data
    if carry:
        yield 0, carry


def is_entry(doc: object) -> bool:
    """Whether a decoded log line is an entry (an object with an integer ``_ts``): the one
    definition the readers and ``air store check`` share."""
    return type(doc) is dict and type(doc.get("_ts")) is int


class Collector:
    """Accumulates the answer to one query while chunks are fed newest first."""

    __slots__ = ("_flt", "_hi", "_lo", "_needle", "_offset", "done", "limit", "out", "skipped")

    def __init__(
        self,
        *,
        limit: int,
        offset: int,
        lo: int | None,
        hi: int | None,
        flt: dict[str, Any] | None,
    ) -> None:
        self.limit = limit
        self._offset = offset
        self._lo = lo
        self._hi = hi
        self._flt = flt or None
        self._needle = needle_for(self._flt)
        self.out: list[Entry] = []
        self.skipped = 0
        self.done = limit == 0

    def feed(self, chunk: bytes, base: int, on_corrupt: CorruptHook) -> None:
        """Consume one chunk of complete lines (oldest first inside the chunk)."""
        if self.done:
            return
        if self._needle is None:
            self._feed_all(chunk, base, on_corrupt)
        else:
            self._feed_hits(chunk, base, on_corrupt)

    def _take(self, line: bytes, where: int, on_corrupt: CorruptHook) -> None:
        """Judge one line; sets ``done`` when the window or the limit is exhausted."""
        try:
            entry = orjson.loads(line)
        except orjson.JSONDecodeError:
            on_corrupt(where)
            return
        if not is_entry(entry):
            if not line.startswith(HEADER_PREFIX):  # a file's format line is no entry
                on_corrupt(where)
            return
        ts = entry["_ts"]
        if self._hi is not None and ts >= self._hi:
            return
        if self._lo is not None and ts < self._lo:
            self.done = True  # the log is in time order: everything further back is older
            return
        if self._flt is not None and not matches(entry, self._flt):
            return
        if self.skipped < self._offset:
            self.skipped += 1
            return
        self.out.append(entry)
        if len(self.out) >= self.limit:
            self.done = True

    def _feed_all(self, chunk: bytes, base: int, on_corrupt: CorruptHook) -> None:
        lines = chunk.split(b"\n")
        pos = len(chunk) - 1
        take = self._take
        for i in range(len(lines) - 2, -1, -1):
            line = lines[i]
            start = pos - len(line)
            if line:
                take(line, base + start, on_corrupt)
                if self.done:
                    return
            pos = start - 1

    def _feed_hits(self, chunk: bytes, base: int, on_corrupt: CorruptHook) -> None:
        needle = self._needle
        assert needle is not None
        pos = len(chunk)
        while True:
            hit = chunk.rfind(needle, 0, pos)
            if hit < 0:
                break
            start = chunk.rfind(b"\n", 0, hit) + 1
            end = chunk.find(b"\n", hit)
            self._take(chunk[start:end], base + start, on_corrupt)
            if self.done:
                return
            pos = start
        if self._lo is not None:
            # No hit left in this chunk; stop if its oldest line is already before ``since``.
            first = chunk[: chunk.find(b"\n")]
            try:
                ts = orjson.loads(first).get("_ts")
            except (orjson.JSONDecodeError, AttributeError):
                return
            if type(ts) is int and ts < self._lo:
                self.done = True
