"""The key-value side of one FileStore namespace: cache, snapshot load/dump, journal replay.

Every mutation gets a sequence number. The snapshot records the last one it contains, the
journal holds records after it, so replay skips what the snapshot already has and a reader
that catches the writer between "snapshot replaced" and "journal compacted" notices the gap.
"""

from __future__ import annotations

import contextlib
import heapq
import itertools
import logging
import os
import re
import time
from typing import Any

import aiofiles
import orjson

from airstore._appendfile import AppendFile
from airstore._filenames import journal_path, snapshot_path
from airstore._recovery import Finding
from airstore._validate import JSON_OPTS
from airstore.errors import CorruptDataError, InvalidValueError
from airstore.types import Clock

__all__ = ["MISSING", "KVSpace", "remove_stale_temp_files", "write_atomic"]

logger = logging.getLogger(__name__)

_dumps = orjson.dumps

MISSING: Any = object()
_Sig = tuple[int, int, int] | None  # (inode, size, mtime_ns) of a file, None when missing
SNAPSHOT_FORMAT = 1
LOAD_ATTEMPTS = 20  # a reader racing a writer's compactions retries this often, then gives up


def _sig(path: str) -> _Sig:
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return None
    return (st.st_ino, st.st_size, st.st_mtime_ns)


def _read_file(path: str, offset: int = 0) -> bytes | None:
    """The file's bytes from ``offset`` on, or ``None`` when it does not exist."""
    try:
        with open(path, "rb") as fh:
            fh.seek(offset)
            return fh.read()
    except FileNotFoundError:
        return None


async def _aread_file(path: str) -> bytes | None:
    """:func:`_read_file` off the event loop (one aiofiles call per file, never per line)."""
    try:
        async with aiofiles.open(path, "rb") as fh:
            return await fh.read()
    except FileNotFoundError:
        return None


_tmp_counter = itertools.count()
TMP_RE = re.compile(r"\.tmp(-\d+-\d+)?$")


def remove_stale_temp_files(root: str) -> None:
    """Delete temp files a crash left behind mid-snapshot (the writer holds the lock)."""
    for name in os.listdir(root):
        if TMP_RE.search(name):
            with contextlib.suppress(OSError):
                os.unlink(os.path.join(root, name))


def write_atomic(path: str, data: bytes) -> None:
    """Write ``data`` to ``path`` so that a crash leaves either the old or the new file.

    A temp file in the same directory is written and fsynced, renamed over ``path``, and the
    directory is fsynced so the rename itself is durable.
    """
    directory = os.path.dirname(path) or "."
    tmp = f"{path}.tmp-{os.getpid()}-{next(_tmp_counter)}"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o644)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
        os.fsync(fd)
    except BaseException:
        os.close(fd)
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    os.close(fd)
    os.replace(tmp, path)
    dfd = os.open(directory, os.O_RDONLY | os.O_CLOEXEC)
    try:
        os.fsync(dfd)
    finally:
        os.close(dfd)


class KVSpace:
    """Keys of one namespace.

    Args:
        root: the data directory.
        ns: the namespace.
        journaled: keep a journal (durability ``journal`` and ``sync``).
        read_only: never change a file; re-read them when they change.
        clock: seconds since the epoch.
        findings: where recovery problems are reported.
    """

    def __init__(
        self,
        root: str,
        ns: str,
        *,
        journaled: bool,
        read_only: bool,
        clock: Clock,
        findings: list[Finding],
    ) -> None:
        self.ns = ns
        # Values sit in ``items`` directly and expiries in ``expires`` (only keys that have one):
        # a long-lived (value, expiry) tuple per key is one more object for the garbage
        # collector to track and scan, which halved set throughput.
        self.items: dict[str, Any] = {}
        self.expires: dict[str, float] = {}
        # The snapshot's bytes of each key, ``"key":[value,exp]``, built once at set() from
        # the JSON validated there (so a snapshot can neither fail nor differ from the journal
        # if a caller later mutates the object it stored) or at the first snapshot for keys
        # loaded from disk. A snapshot is then one join of these.
        self.entries: dict[str, bytes] = {}
        self.expiry: list[tuple[float, str]] = []
        self.seq = 0
        self.dirty = False
        self.snapshot_path = snapshot_path(root, ns)
        self.journal: AppendFile | None = (
            AppendFile(journal_path(root, ns)) if journaled and not read_only else None
        )
        self._journal_path = journal_path(root, ns)
        self._read_only = read_only
        self._clock = clock
        self._findings = findings
        self._snap_sig: _Sig = None
        self._journal_sig: _Sig = None
        self._journal_offset = 0

    # -- loading -----------------------------------------------------------------------------
    def load(self) -> None:
        """Read snapshot then journal into memory (writer: repairing; reader: only looking)."""
        for _attempt in range(LOAD_ATTEMPTS):
            self._snap_sig = _sig(self.snapshot_path)
            snap = _read_file(self.snapshot_path)
            self._journal_sig = _sig(self._journal_path)
            if self._load_once(snap, _read_file(self._journal_path)):
                return
        self._keeps_changing()

    async def load_async(self) -> None:
        """:meth:`load` with the files read off the event loop (aiofiles): the cold path of a
        namespace's first access, which may read megabytes."""
        for _attempt in range(LOAD_ATTEMPTS):
            self._snap_sig = _sig(self.snapshot_path)
            snap = await _aread_file(self.snapshot_path)
            self._journal_sig = _sig(self._journal_path)
            if self._load_once(snap, await _aread_file(self._journal_path)):
                return
        self._keeps_changing()

    def _keeps_changing(self) -> None:
        raise CorruptDataError(
            f"journal of {self.ns!r} keeps changing under the reader",
            namespace=self.ns,
            path=self._journal_path,
        )

    def _load_once(self, snap: bytes | None, journal: bytes | None) -> bool:
        self.items = {}
        self.expires = {}
        self.entries = {}
        self.expiry = []
        snap_seq = self._read_snapshot(snap)
        self.seq = max(snap_seq, 0)
        self._journal_offset = 0
        if not self._replay_journal(snap_seq, journal, from_start=True):
            return False
        if self.journal is not None and self.journal.fd is None:
            self.journal.open()  # cuts the torn tail the replay has just reported
        return True

    def _read_snapshot(self, data: bytes | None) -> int:
        """Load the snapshot; returns its seq (-1 when there is none or it was unreadable)."""
        if data is None:
            return -1
        try:
            doc = orjson.loads(data)
            if not isinstance(doc, dict):
                raise ValueError("snapshot is not a JSON object")
            if "format" in doc and "items" in doc:
                seq = int(doc.get("seq", 0))
                raw: dict[str, Any] = doc["items"]
                items = {k: (v[0], v[1]) for k, v in raw.items()}
            else:  # the seed's plain {key: value} file
                seq, items = 0, {k: (v, None) for k, v in doc.items()}
        except (orjson.JSONDecodeError, ValueError, TypeError, KeyError, IndexError) as exc:
            self._snapshot_corrupt(str(exc))
            return -1
        now = self._clock()
        for key, (value, exp) in items.items():
            self._apply_set(key, value, exp, now)
        return seq

    def _snapshot_corrupt(self, reason: str) -> None:
        path = self.snapshot_path
        if self._read_only:
            self._report("corrupt_snapshot", path, None, f"unparseable snapshot ({reason})")
            return
        aside = f"{path}.corrupt-{time.strftime('%Y%m%dT%H%M%SZ', time.gmtime())}"
        n = 0
        while os.path.exists(aside):
            n += 1
            aside = f"{aside.split('.corrupt-')[0]}.corrupt-{time.strftime('%Y%m%dT%H%M%SZ')}.{n}"
        os.replace(path, aside)
        self._report(
            "corrupt_snapshot", aside, None, f"unparseable snapshot ({reason}); kept as {aside}"
        )

    def _report(self, kind: Any, path: str, line: int | None, detail: str) -> None:
        finding = Finding(kind=kind, namespace=self.ns, path=path, line=line, detail=detail)
        self._findings.append(finding)
        logger.warning("airstore recovery: %s in %s line %s: %s", kind, path, line, detail)

    def _replay_journal(self, snap_seq: int, data: bytes | None, *, from_start: bool) -> bool:
        """Apply journal records after ``snap_seq``; False if a gap says 're-read everything'."""
        if data is None:
            return True
        end = data.rfind(b"\n") + 1
        if from_start and end < len(data) and not self._read_only:
            self._report(
                "torn_tail",
                self._journal_path,
                data.count(b"\n", 0, end) + 1,
                f"cut {len(data) - end} bytes of an unfinished record",
            )
        body = data[:end]
        applied_first = True
        now = self._clock()
        for number, line in enumerate(body.split(b"\n")[:-1], 1):
            if not line:
                continue
            try:
                rec = orjson.loads(line)
                seq, op, key = rec[0], rec[1], rec[2]
                if type(seq) is not int or type(key) is not str or op not in ("s", "d"):
                    raise ValueError("not a journal record")
            except (orjson.JSONDecodeError, ValueError, TypeError, IndexError, KeyError) as exc:
                if not from_start:
                    return False  # read from an offset that is no longer a line start
                if not self._read_only:
                    self._report("corrupt_line", self._journal_path, number, str(exc))
                continue
            if seq <= snap_seq:
                continue
            if applied_first and from_start and snap_seq >= 0 and seq > snap_seq + 1:
                return False  # compacted after we read the snapshot: start over
            if applied_first and not from_start and seq != self.seq + 1:
                return False  # truncated in place and regrown past our offset: start over
            applied_first = False
            if op == "s":
                self._apply_set(key, rec[3], rec[4], now)
            else:
                self._apply_delete(key)
            self.seq = max(self.seq, seq)
        self._journal_offset += end
        return True

    def refresh(self) -> None:
        """Reader only: pick up a new snapshot or journal lines written since the last look."""
        snap = _sig(self.snapshot_path)
        journal = _sig(self._journal_path)
        if snap == self._snap_sig and journal == self._journal_sig:
            return
        if (
            snap == self._snap_sig
            and journal is not None
            and self._journal_sig is not None
            and journal[0] == self._journal_sig[0]
            and journal[1] >= self._journal_offset
        ):
            self._journal_sig = journal
            tail = _read_file(self._journal_path, self._journal_offset)
            if self._replay_journal(self.seq, tail, from_start=False):
                return
        self.load()

    # -- reads and mutations -----------------------------------------------------------------
    def _apply_set(self, key: str, value: Any, exp: float | None, now: float) -> None:
        """Take a stored record into memory (load, replay): a live value or a removal."""
        if exp is not None and exp <= now:
            self._apply_delete(key)
            return
        self.items[key] = value
        self.entries.pop(key, None)
        if exp is None:
            self.expires.pop(key, None)
        else:
            self.expires[key] = exp
            heapq.heappush(self.expiry, (exp, key))

    def _apply_delete(self, key: str) -> None:
        self.items.pop(key, None)
        self.expires.pop(key, None)
        self.entries.pop(key, None)

    def live(self, key: str, now: float) -> Any:
        """The live value of ``key``, or :data:`MISSING`."""
        value = self.items.get(key, MISSING)
        if value is not MISSING and self.expires:
            exp = self.expires.get(key)
            if exp is not None and exp <= now:
                return MISSING
        return value

    def set_plain(self, key: str, value: Any, encoded: bytes) -> None:
        """Set ``key`` without expiry in memory and in the journal buffer (the hot path)."""
        self.items[key] = value
        key_json = _dumps(key)
        self.entries[key] = b"%b:[%b,null]" % (key_json, encoded)
        if self.expires:
            self.expires.pop(key, None)
        self.seq = seq = self.seq + 1
        self.dirty = True
        journal = self.journal
        if journal is not None:
            journal.pending += b'[%d,"s",%b,%b,null]\n' % (seq, key_json, encoded)

    def put(self, key: str, value: Any, encoded: bytes, exp: float | None, now: float) -> None:
        """Set ``key`` (with an expiry or none) in memory and in the journal buffer; sweep
        what has expired."""
        if exp is None:
            self.set_plain(key, value, encoded)
        else:
            self.items[key] = value
            self.expires[key] = exp
            heapq.heappush(self.expiry, (exp, key))
            self.journal_set(key, encoded, exp)
        if self.expiry and self.expiry[0][0] <= now:
            self.sweep(now)

    def delete(self, key: str, now: float) -> bool | None:
        """Remove ``key`` in memory and in the journal; True if it was live, None if absent."""
        if key not in self.items:
            return None
        exp = self.expires.get(key)
        self._apply_delete(key)
        self.journal_delete(key)
        return exp is None or exp > now

    def journal_set(self, key: str, encoded_value: bytes, exp: float | None) -> None:
        """Record a set with an expiry in the journal buffer and the snapshot entries (the
        caller updates ``items``)."""
        self.seq += 1
        self.dirty = True
        key_json = _dumps(key)
        tail = b"null" if exp is None else repr(exp).encode()
        self.entries[key] = b"%b:[%b,%b]" % (key_json, encoded_value, tail)
        if self.journal is not None:
            self.journal.pending += b'[%d,"s",%b,%b,%b]\n' % (
                self.seq,
                key_json,
                encoded_value,
                tail,
            )

    def journal_delete(self, key: str) -> None:
        """Record a delete in the journal buffer."""
        self.seq += 1
        self.dirty = True
        if self.journal is not None:
            self.journal.pending += b'[%d,"d",' % self.seq + orjson.dumps(key) + b"]\n"

    def sweep(self, now: float) -> None:
        """Drop keys whose expiry has passed (the heap keeps this O(expired))."""
        heap = self.expiry
        expires = self.expires
        while heap and heap[0][0] <= now:
            exp, key = heapq.heappop(heap)
            if expires.get(key) == exp:  # not overwritten with another expiry since
                self._apply_delete(key)

    # -- snapshots ---------------------------------------------------------------------------
    def encode_snapshot(self) -> tuple[bytes, int]:
        """Serialize live items; returns ``(data, journal_end)`` and clears ``dirty``."""
        now = self._clock()
        entries = self.entries
        expires = self.expires
        parts = []
        for key, value in self.items.items():
            exp = expires.get(key) if expires else None
            if exp is not None and exp <= now:
                continue
            entry = entries.get(key)
            if entry is None:  # loaded from disk: encoded once, at its first snapshot
                try:
                    body = orjson.dumps(value, option=JSON_OPTS)
                except TypeError as exc:  # a value loaded from disk was mutated through get()
                    raise InvalidValueError(
                        f"a value in namespace {self.ns!r} was mutated after it was stored and "
                        f"is no longer JSON: {exc}",
                        namespace=self.ns,
                        key=key,
                    ) from exc
                tail = b"null" if exp is None else repr(exp).encode()
                entry = entries[key] = b"%b:[%b,%b]" % (_dumps(key), body, tail)
            parts.append(entry)
        data = b'{"format":%d,"seq":%d,"items":{%b}}' % (
            SNAPSHOT_FORMAT,
            self.seq,
            b",".join(parts),
        )
        self.dirty = False
        journal_end = self.journal.end if self.journal is not None else 0
        return data, journal_end

    def compact_journal(self, journal_end: int) -> None:
        """After a durable snapshot: drop the journal bytes it covers (before ``journal_end``)."""
        journal = self.journal
        if journal is None or journal.fd is None:
            return
        journal.write_pending()
        if journal.size == journal_end:
            journal.truncate()
            return
        tail = os.pread(journal.fd, journal.size - journal_end, journal_end)
        journal.replace_with(tail)

    def close(self) -> None:
        """Close the journal fd."""
        if self.journal is not None:
            self.journal.close()
