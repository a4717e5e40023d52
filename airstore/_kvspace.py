"""The keys of one FileStore namespace: memory, snapshot and the shared journal.

Memory holds what this process has read from the journal plus its own writes of the current
turn (``journal.pending``). A commit, under the journal's lock, first applies the records other
writers appended since the last look — skipping keys this process has written meanwhile, whose
records land after theirs — then appends the pending records in one ``write``. So every process
ends with the journal's order: the last committed write of a key wins. Reads pick up other
writers' records at most once per event-loop turn (one ``stat``).
"""

from __future__ import annotations

import contextlib
import heapq
import logging
import os
import time
from typing import Any

import orjson

from airstore import _platform
from airstore._aread import read_file, read_whole
from airstore._atomic import temp_path, write_file
from airstore._compaction import Compaction
from airstore._filenames import journal_path, snapshot_path
from airstore._format import FORMAT
from airstore._journal import DAMAGED_HEADER, Journal
from airstore._kvfiles import LineFinder, Snapshot, journal_line, parse_snapshot, replay_v1
from airstore._recovery import Finding, missing_snapshot, next_line_number
from airstore.errors import CorruptDataError
from airstore.types import Clock

__all__ = ["MISSING", "KVSpace"]

logger = logging.getLogger(__name__)

MISSING: Any = object()
LOAD_ATTEMPTS = 5  # unlocked tries of a loader racing other writers' compactions, then locked

_dumps = orjson.dumps


def _sig(path: str) -> tuple[int, int, int] | None:
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return None
    return (st.st_ino, st.st_size, st.st_mtime_ns)


class KVSpace(Compaction):
    """Keys of one namespace.

    Args:
        root: the data directory.
        ns: the namespace.
        read_only: never change a file (no lock, no writes).
        clock: seconds since the epoch.
        findings: where recovery problems are reported.
    """

    def __init__(
        self, root: str, ns: str, *, read_only: bool, clock: Clock, findings: list[Finding]
    ) -> None:
        self.ns = ns
        self._root = root
        # Values sit in ``items`` directly and expiries in ``expires`` (only keys that have one):
        # a long-lived (value, expiry) tuple per key is one more object for the garbage
        # collector to track and scan, which halved set throughput.
        self.items: dict[str, Any] = {}
        self.expires: dict[str, float] = {}
        # The journal record of each key, ``{"key":[value,exp]}\n``: the very bytes set()
        # appended to the journal (built from the JSON validated there, so a snapshot can
        # neither fail nor differ from the journal if a caller later mutates the object it
        # stored), taken from journal lines, or encoded at the first snapshot for keys loaded
        # from one. A snapshot is then joins of these (see ``Compaction``).
        self.entries: dict[str, bytes] = {}
        self.expiry: list[tuple[float, str]] = []
        self.snapshot_path = snapshot_path(root, ns)
        self.journal = Journal(root, ns, writer=not read_only)
        self.read_only = read_only
        self.fresh = False  # True until the end of the loop turn in which we last looked
        self.snapshot_size = 0
        self._snapshot_pos = 0
        self._needs_migration = False
        self._legacy_sig: object = None
        self._clock = clock
        self._findings = findings

    # -- loading -----------------------------------------------------------------------------
    def load(self) -> None:
        """Read snapshot then journal into memory (synchronously: refreshes, under the lock)."""
        if self.read_only:
            self._follow_moved_names()
        for _attempt in range(LOAD_ATTEMPTS - 1):
            sig = _sig(self.snapshot_path)
            data = read_whole(self.snapshot_path)
            if self._load_once(data, sig, last=False):
                break
        else:
            self._load_holding_lock()
        if self.journal.pending:  # our own writes not yet committed stay visible
            self._apply_records(bytes(self.journal.pending), own=None, start=None)

    async def load_async(self) -> None:
        """:meth:`load` with the snapshot read off the event loop (aiofiles): the cold path of
        a namespace's first access, which may read megabytes."""
        if self.read_only:
            self._follow_moved_names()
        for _attempt in range(LOAD_ATTEMPTS - 1):
            sig = _sig(self.snapshot_path)
            snap = await read_file(self.snapshot_path)
            if self._load_once(snap, sig, last=False):
                break
        else:
            self._load_holding_lock()
        if self.read_only:
            return
        if self._needs_migration:
            self.migrate()
        elif self.journal.fd is not None and self.journal.torn_bytes():
            self.commit()  # a dead writer's unfinished record: cut under the lock

    def _follow_moved_names(self) -> None:
        """A reader of a directory of format 3 or earlier: a writer may have moved it to format
        4's file names since this namespace was loaded (``_migrate``); look them up again."""
        path = snapshot_path(self._root, self.ns)
        if path != self.snapshot_path:
            self.snapshot_path = path
            self.journal.close()
            self.journal.path = journal_path(self._root, self.ns)

    def _load_holding_lock(self) -> None:
        """The last attempt of a loader that kept losing the race against other writers'
        compactions (several writers in ``snapshot`` mode compact at every flush): under the
        journal's lock no compaction runs between its two reads."""
        with contextlib.ExitStack() as stack:
            # a reader that may not create the lock file tries once more without it
            with contextlib.suppress(OSError):
                stack.enter_context(self.journal.locked())
            self._load_once(read_whole(self.snapshot_path), None, last=True)

    def _load_once(self, data: bytes | None, sig: object, *, last: bool) -> bool:
        """Load from ``data`` (the snapshot as read; ``sig``: its file's signature taken just
        before) and the journal; False when another writer changed the files in between and
        the caller should read again (never when ``last``)."""
        self.items, self.expires, self.entries, self.expiry = {}, {}, {}, []
        self._needs_migration = False
        snap = self._parse_snapshot(data)
        if snap is not None:
            self.snapshot_size = len(data or b"")
            now = self._clock()
            for key, (value, exp) in snap.items.items():
                self._apply_set(key, value, exp, now)
        if not self.journal.open():  # no journal yet: the first commit starts one at P
            self._snapshot_pos = (
                max(snap.position, 0) if snap is not None and snap.format >= 2 else 0
            )
            return True
        if self.journal.legacy:
            return self._load_legacy(snap, last=last)
        if self.journal.header_damaged:  # its records follow the snapshot's position
            self.journal.base = (
                max(snap.position, 0) if snap is not None and snap.format >= 2 else 0
            )
            self._report_once("corrupt_line", self.journal.path, 1, DAMAGED_HEADER)
        if snap is not None and snap.format >= 2:
            # (-1: its position key was damaged; replaying from the journal's start is safe,
            # the records are sets and deletes, the last of each key winning)
            position = snap.position if snap.position >= 0 else self.journal.base
        elif not last and (
            (data is None and self.journal.base > 0) or _sig(self.snapshot_path) != sig
        ):
            # Another writer replaced the snapshot after we read it: a compaction (the journal
            # now starts after records the snapshot we read lacks), or the move of a format-1
            # namespace to a later format (a new journal at 0, the old records in the new snapshot).
            return False
        else:
            position = self.journal.base  # no usable snapshot: everything the journal has
            if data is None and position > 0 and not self._set_aside():
                # deleted, or a dangling link: said, not silent
                detail = missing_snapshot(position)
                self._report_once("corrupt_snapshot", self.snapshot_path, None, detail)
        self._snapshot_pos = position
        data = self.journal.read_from(position)
        if data is None:
            if not last:
                return False  # compacted between our two reads: start over
            raise CorruptDataError(
                f"journal of {self.ns!r} keeps changing under the loader",
                namespace=self.ns,
                path=self.journal.path,
            )
        self._apply_records(data, own=None, start=self.journal.read_start)
        return True

    def _load_legacy(self, snap: Snapshot | None, *, last: bool) -> bool:
        """A format-1 journal: replay it by seq; a writer then moves the namespace to this format
        (a later format's snapshot beside it means that move was cut short: it already holds it)."""
        self._needs_migration = True
        if snap is not None and snap.format >= 2:
            return True
        assert self.journal.fd is not None
        data = _platform.pread(self.journal.fd, os.fstat(self.journal.fd).st_size, 0)
        replayed = replay_v1(data, snap.position if snap is not None else -1)
        if replayed is None:
            return last
        ops, corrupt = replayed
        for number, reason in corrupt:
            self._report("corrupt_line", self.journal.path, number, reason)
        now = self._clock()
        for op, key, value, exp in ops:
            if op == "s":
                self._apply_set(key, value, exp, now)
            else:
                self._apply_delete(key)
        return True

    def migrate(self) -> None:
        """Writer: move a format-1 namespace to this format (see :meth:`migrate_locked`)."""
        with self.journal.locked():
            self.migrate_locked()

    def migrate_locked(self) -> None:
        """Under the lock: write the keys as a snapshot at position 0, then an empty journal,
        both in this format — unless another writer already did (then read its files)."""
        self._needs_migration = False
        if self.journal.open() and not self.journal.legacy:
            self.load()
            return
        tmp = temp_path(self.snapshot_path)
        write_file(tmp, *self.encode_snapshot(0))
        self.journal.start_locked(0, snapshot=tmp)
        self._snapshot_pos = 0

    def _parse_snapshot(self, data: bytes | None) -> Snapshot | None:
        if data is None:
            return None
        try:
            snap = parse_snapshot(data, self.snapshot_path)
        except ValueError as exc:
            self._snapshot_corrupt(str(exc))
            return None
        for detail in snap.bad:
            self._report("corrupt_line", self.snapshot_path, None, detail)
        return snap

    def _snapshot_corrupt(self, reason: str) -> None:
        path = self.snapshot_path
        if self.read_only:
            self._report("corrupt_snapshot", path, None, f"unparseable snapshot ({reason})")
            return
        stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
        aside, n = f"{path}.corrupt-{stamp}", 0
        while os.path.exists(aside):
            n += 1
            aside = f"{path}.corrupt-{stamp}.{n}"
        with contextlib.suppress(FileNotFoundError):  # another writer set it aside first
            _platform.replace(path, aside)
            self._report(
                "corrupt_snapshot", aside, None, f"unparseable snapshot ({reason}); kept as {aside}"
            )

    def _set_aside(self) -> bool:
        """Whether this namespace's snapshot was set aside as unparseable (that finding says
        where its keys are)."""
        return any(f.kind == "corrupt_snapshot" and f.namespace == self.ns for f in self._findings)

    def _report_once(self, kind: Any, path: str, line: int | None, detail: str) -> None:
        """:meth:`_report`, unless this space reported the same already (a reload)."""
        if not any(f.path == path and f.line == line and f.detail == detail
                   for f in self._findings):  # fmt: skip
            self._report(kind, path, line, detail)

    def _report(self, kind: Any, path: str, line: int | None, detail: str) -> None:
        finding = Finding(kind=kind, namespace=self.ns, path=path, line=line, detail=detail)
        self._findings.append(finding)
        where = path if line is None else f"{path} line {line}"
        logger.warning("airstore recovery: %s in %s: %s", kind, where, detail)

    # -- applying records --------------------------------------------------------------------
    def _apply_records(self, data: bytes, own: set[str] | None, start: int | None) -> None:
        """Apply journal records (complete lines: format 3, or format 2 from an earlier
        release's journal) read from byte ``start`` of the journal file (``None``: in no file,
        or not known); keys in ``own`` keep this process's newer writes."""
        now = self._clock()
        items, entries, expires = self.items, self.entries, self.expires
        finder: LineFinder | None = None
        for line in data.split(b"\n"):
            if not line:
                continue
            try:
                key, value, exp, deleted = journal_line(line)
            except ValueError as exc:
                finder = finder or LineFinder(data, self.journal.fd, start)
                self._report("corrupt_line", self.journal.path, finder.of(line), str(exc))
                continue
            # a format-3 set line is a snapshot item as it stands (format 2 starts with "{")
            reusable = line[:1] == b"[" and line[-1:] == b"]"
            if own is not None and key in own:
                continue
            if deleted:
                self._apply_delete(key)
            elif exp is None:  # _apply_set without expiry, inlined (other writers' sets)
                items[key] = value
                if reusable:
                    entries[key] = line + b"\n"
                else:  # whitespace around it (a hand edit) or format 2: encoded at a snapshot
                    entries.pop(key, None)
                if expires:
                    expires.pop(key, None)
            else:
                self._apply_set(key, value, exp, now)
                if reusable and key in items:
                    entries[key] = line + b"\n"

    def _own_pending_keys(self) -> set[str]:
        return {orjson.loads(line)[0] for line in bytes(self.journal.pending).split(b"\n") if line}

    def _apply_set(self, key: str, value: Any, exp: float | None, now: float) -> None:
        if exp is not None and exp <= now:
            self._apply_delete(key)
            return
        self.items[key] = value
        self.entries.pop(key, None)
        if exp is None:
            self.expires.pop(key, None)
        elif self.expires.get(key) != exp:  # replayed incrs of a counter: one heap entry
            self.expires[key] = exp
            heapq.heappush(self.expiry, (exp, key))

    def _apply_delete(self, key: str) -> None:
        self.items.pop(key, None)
        self.expires.pop(key, None)
        self.entries.pop(key, None)

    def refresh(self) -> None:
        """Take in what other writers appended since the last look (no lock)."""
        if self._needs_migration:  # format 1, beside a writer of the previous release
            sig = (_sig(self.snapshot_path), _sig(self.journal.path))
            if sig != self._legacy_sig:
                self._legacy_sig = sig
                self.load()
            return
        data = self.journal.read_new()
        if data is None:
            if self.read_only:
                self._follow_moved_names()
            if self.journal.fd is not None or os.path.exists(self.journal.path):
                self.load()
            return
        if data:
            own = self._own_pending_keys() if self.journal.pending else None
            self._apply_records(data, own, self.journal.read_start)

    def mark_stale(self) -> None:
        """End of the loop turn: the next read looks at the journal again."""
        self.fresh = False

    # -- reads and writes --------------------------------------------------------------------
    def live(self, key: str, now: float) -> Any:
        """The live value of ``key``, or :data:`MISSING`."""
        value = self.items.get(key, MISSING)
        if value is not MISSING and self.expires:
            exp = self.expires.get(key)
            if exp is not None and exp <= now:
                return MISSING
        return value

    def expire_at(self, key: str, exp: float) -> None:
        """Give ``key``, just put (``_kvput.put``), the expiry ``exp``; forget what has expired."""
        if self.expires.get(key) != exp:  # a counter's incr keeps its expiry: no new entry
            self.expires[key] = exp
            heapq.heappush(self.expiry, (exp, key))
        now = self._clock()
        if self.expiry[0][0] <= now:
            self.sweep(now)

    def delete(self, key: str, now: float) -> bool | None:
        """Remove ``key``; True if it was live, False if expired, None if absent."""
        if key not in self.items:
            return None
        exp = self.expires.get(key)
        self._apply_delete(key)
        self.journal.pending += b"[%b]\n" % _dumps(key)
        return exp is None or exp > now

    def sweep(self, now: float) -> None:
        """Forget keys whose expiry has passed (their records say so on every reopen)."""
        heap = self.expiry
        expires = self.expires
        while heap and heap[0][0] <= now:
            exp, key = heapq.heappop(heap)
            if expires.get(key) == exp:  # not overwritten with another expiry since
                self._apply_delete(key)

    # -- committing --------------------------------------------------------------------------
    def commit(self) -> int:
        """Under the lock: take in others' records, cut a dead writer's torn record, append
        ours in one ``write``. Returns the bytes written.

        Other writers' records are first taken in without the lock (as reads do), so the lock
        is held only for what they appended meanwhile: with several writers, the parsing of
        each other's records runs in parallel instead of one process at a time.

        Raises:
            OSError: the write failed; the file is as before and the records stay pending.
        """
        if self.journal.fd is not None and not self._needs_migration:
            self.refresh()
        with self.journal.locked():
            return self.commit_locked()

    def commit_locked(self) -> int:
        """:meth:`commit` for a caller already holding the lock."""
        journal = self.journal
        if self._needs_migration:
            self.migrate_locked()
        if journal.fd is None:
            if not journal.open():
                journal.start_locked(self._snapshot_pos)
            else:  # another writer started it since we looked: read it all
                self.load()
        else:
            self.refresh()
        torn = journal.torn_bytes()
        if torn:
            journal.cut_torn()
            at = next_line_number(journal.path)
            self._report("torn_tail", journal.path, at, f"cut {torn} bytes of an unfinished record")
        return self.append_locked()

    def append_locked(self) -> int:
        """Under the lock: append the pending records in one ``write`` (see
        :meth:`Journal.write_pending_locked`); returns the bytes written.

        Into a journal of an earlier format (2, or an empty file without a header) they go by
        a new journal of this format instead, which holds that journal's records as they are
        and then the pending ones, all at the same logical positions, renamed over it: an
        earlier release then refuses the namespace by its format (it would skip records of the
        new shape as damaged lines), and this release reads both shapes. The snapshot stays as
        it is until the next compaction, so nothing is encoded or written but the journal.

        Raises:
            OSError: the write failed; the files are as before and the records stay pending.
        """
        journal = self.journal
        if journal.format >= FORMAT or not journal.pending:
            return journal.write_pending_locked()
        assert journal.fd is not None
        if journal.read_to > os.fstat(journal.fd).st_size:  # emptied by hand under a snapshot
            base, records = journal.pos, b""
        else:
            base = journal.base
            records = _platform.pread(journal.fd, journal.read_to - journal.hdr, journal.hdr)
        journal.start_locked(base, records + journal.pending)
        written = len(journal.pending)
        del journal.pending[:]
        journal.dirty = True
        return written

    def close(self) -> None:
        """Close the journal's fds."""
        self.journal.release()
