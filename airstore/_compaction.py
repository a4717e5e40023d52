"""Compaction of one FileStore namespace: a snapshot of its keys and a new journal after it.

Mixed into ``KVSpace``. The snapshot is the per-key journal records built at ``set``, joined in
pieces of :data:`JOIN_RECORDS` (values loaded from a snapshot or an older format's journal are
encoded at their first compaction); it is encoded under the journal's lock, written and
fsynced outside it, then renamed into place together with a new journal holding the records
appended meanwhile (``Journal.start_locked``)."""

from __future__ import annotations

import asyncio
import contextlib
import os
from collections.abc import Iterable, Sequence
from itertools import chain, islice
from typing import Any

import orjson

from airstore import _platform
from airstore._atomic import temp_path, write_file
from airstore._format import FORMAT
from airstore._journal import Journal
from airstore._validate import JSON_OPTS
from airstore.errors import InvalidValueError
from airstore.types import Clock

__all__ = [
    "COMPACT_BYTES",
    "JOIN_RECORDS",
    "REWRITE_RATIO",
    "SMALL_SNAPSHOT",
    "Compaction",
    "set_line",
]

COMPACT_BYTES = 4 << 20
"""A journal is compacted into a snapshot once its records pass this size (and the snapshot's)."""

SMALL_SNAPSHOT = 64 << 10
"""A snapshot up to this size is rewritten at every flush after this process changed its
namespace (the seed's snapshot-per-flush, cheap at this size)."""

REWRITE_RATIO = 8
"""A larger snapshot is rewritten only once the journal since it reaches 1/8 of its size: a
flush then writes at most 8 snapshot bytes per journal byte (it rewrote the whole snapshot
for one changed key: 47 MB at every flush for a namespace of 1 M keys)."""

JOIN_RECORDS = 1024
"""Records per join of a snapshot's body. ``bytes.join`` takes an 80-byte buffer view of every
item first, so one join of 1 M records would touch 80 MB of fresh memory for a 25 MB body;
a piece of 1024 takes 80 KB, which the allocator hands back for the next piece."""
_COMMA_FIRST = (b"",)

_dumps = orjson.dumps


def set_line(record: bytes, exp: float | None) -> bytes:
    """The journal line of a set, from its record ``[key,value]`` (format 3; an expiry goes in
    as a third item). A new bytes object of exact size: orjson's own keeps its whole buffer."""
    if exp is None:
        return record + b"\n"
    return b"%b,%b]\n" % (record[:-1], repr(exp).encode())


class Compaction:
    """Snapshots of a ``KVSpace`` (relies on the attributes it sets)."""

    ns: str
    items: dict[str, Any]
    expires: dict[str, float]
    entries: dict[str, bytes]
    journal: Journal
    snapshot_path: str
    snapshot_size: int
    _snapshot_pos: int
    _clock: Clock

    def commit_locked(self) -> int:
        raise NotImplementedError

    def encode_snapshot(self, position: int) -> list[bytes]:
        """The live items as a snapshot covering the journal up to ``position``, in parts to
        be written one after the other (joining them would copy the body once more)."""
        now = self._clock()
        entries = self.entries
        expires = self.expires
        records: Iterable[bytes]
        if len(entries) == len(self.items) and (not expires or min(expires.values()) > now):
            # Every key has its record (entries' keys are always among the items') and none
            # has expired: the common case, joins in C.
            records = entries.values()
        else:
            records = self._records(now)
        # Each record keeps its journal line's newline: the items are ``[A]\n,[B]\n,…,[Z]\n``,
        # valid JSON (a newline is whitespace) with one record per line, copied once.
        # Every piece after the first starts with its comma (an empty first item), so a piece
        # is empty only when no record is left.
        it = iter(records)
        parts = [
            b'{"format":%d,"pos":%d,"items":[' % (FORMAT, position),
            b",".join(islice(it, JOIN_RECORDS)),
        ]
        while piece := b",".join(chain(_COMMA_FIRST, islice(it, JOIN_RECORDS))):
            parts.append(piece)
        parts.append(b"]}")
        return parts

    def _records(self, now: float) -> list[bytes]:
        """The record of every live key, encoding those loaded from a snapshot or from an
        earlier format's journal.

        Raises:
            InvalidValueError: a value loaded from disk was mutated into something not JSON.
        """
        entries = self.entries
        expires = self.expires
        parts = []
        for key, value in self.items.items():
            exp = expires.get(key) if expires else None
            if exp is not None and exp <= now:
                continue
            entry = entries.get(key)
            if entry is None:  # loaded: encoded once, at its first snapshot
                try:
                    body = _dumps(value, option=JSON_OPTS)
                except TypeError as exc:  # a value loaded from disk was mutated through get()
                    raise InvalidValueError(
                        f"a value in namespace {self.ns!r} was mutated after it was stored and "
                        f"is no longer JSON: {exc}",
                        namespace=self.ns,
                        key=key,
                    ) from exc
                entry = entries[key] = set_line(b"[%b,%b]" % (_dumps(key), body), exp)
            parts.append(entry)
        return parts

    def compaction_due(self) -> bool:
        """True when this process wrote records since its last compaction and the snapshot is
        small (:data:`SMALL_SNAPSHOT`) or the journal since it reached 1/:data:`REWRITE_RATIO`
        of its size; or when the journal (anyone's records) outgrew :data:`COMPACT_BYTES` and
        the snapshot. Records not yet in a snapshot are safe in the journal either way."""
        journal = self.journal
        if journal.fd is None:
            return journal.dirty
        grown = journal.read_to - journal.offset_of(self._snapshot_pos)
        if journal.dirty and (
            self.snapshot_size <= SMALL_SNAPSHOT or grown * REWRITE_RATIO >= self.snapshot_size
        ):
            return True
        return grown > max(COMPACT_BYTES, self.snapshot_size)

    async def compact(self) -> None:
        """Write a snapshot of everything up to now and start a journal after it.

        The snapshot is encoded under the lock and written (fsynced) outside it; then, under
        the lock again, a new journal holding the records appended meanwhile replaces the old
        one, right after the snapshot's rename. Another writer's newer compaction wins.

        Raises:
            OSError: a file could not be written (nothing was replaced).
        """
        with self.journal.locked():
            self.commit_locked()
            position = self.journal.pos
            parts = self.encode_snapshot(position)
        tmp = temp_path(self.snapshot_path)
        try:
            await _write_off_loop(tmp, parts)
            with self.journal.locked():
                self.commit_locked()
                journal = self.journal
                if position < journal.base:
                    return  # another writer compacted further meanwhile
                start = journal.offset_of(position)
                assert journal.fd is not None
                records = _platform.pread(journal.fd, journal.read_to - start, start)
                journal.start_locked(position, records, snapshot=tmp)
                journal.dirty = False
                tmp = ""
                self._snapshot_pos = position
                self.snapshot_size = sum(len(part) for part in parts)
        finally:
            if tmp:
                with contextlib.suppress(OSError):
                    os.unlink(tmp)


async def _write_off_loop(path: str, parts: Sequence[bytes]) -> None:
    """``write_file`` in a worker thread; cancelled, it still waits for the thread to finish
    its file, so the caller's clean-up can remove it (a compaction cancelled by ``close()``
    left a snapshot-sized temp file behind)."""
    work = asyncio.ensure_future(asyncio.to_thread(write_file, path, *parts))
    try:
        await asyncio.shield(work)
    except asyncio.CancelledError:
        await asyncio.wait({work})
        if not work.cancelled():
            work.exception()  # retrieved: a write that failed meanwhile is not logged as lost
        raise
