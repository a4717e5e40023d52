"""File layout of a FileStore data directory.

For a namespace ``ns`` whose file-name stem is ``ns`` (``_names``: ``Calls`` → ``+calls``,
``con`` → ``con+_``; most names are their own stem)::

    ns.json                      KV snapshot {"format": 3, "pos": P, "items": [[key, value(, exp)]]}
    ns.journal.jsonl             KV journal: a header line, then [key, value(, exp)] / [key]
    ns.journal.lock              the journal's lock (flock): held by a writer while it appends
    ns.log.jsonl                 active append log of writer slot 0, one JSON object per line
    ns.log.00000001.jsonl        slot 0's rotated segments (higher number = newer; ``.gz`` when
                                 compressed)
    ns.log.s2.jsonl              active log of writer slot 2; ``ns.log.s2.00000001.jsonl`` …
    ns.json.corrupt-<time>       an unparseable snapshot kept aside by recovery
    ns.retention.json            the namespace's log caps (``_retention``)

and for the directory: ``.airstore`` (the format marker), ``.events.jsonl`` (writes lost to a
full disk, for ``air store check``), ``.lock`` (every writer holds a shared
lock on it; a writer of the previous format holds it exclusively) and ``.writer-N.lock`` (the
writer owning slot N holds it exclusively; its pid is inside).

``exp`` (expiry) is absolute (seconds since the epoch) so an expired key stays expired after a
reopen; ``P`` is the journal position the snapshot covers (see ``_journal``).

A directory of format 3 or earlier named files by the namespace itself. A reader of such a
directory (:func:`use_legacy_names`) finds a namespace's file by its old name as long as the
directory has not been moved to format 4 (``_migrate``), and listings understand both layouts
(a name means the same namespace in both where it is valid in both).
"""

from __future__ import annotations

import os
import re
import time
from dataclasses import dataclass, field

from airstore._atomic import is_temp_file
from airstore._format import DATADIR_FILE, FORMAT, read_datadir_marker
from airstore._names import decode, decode_legacy, encode
from airstore.errors import UnsupportedFormatError

__all__ = [
    "NamespaceFiles",
    "SlotFiles",
    "active_logs_by_slot",
    "discover",
    "journal_lock_path",
    "journal_path",
    "listdir_settled",
    "log_path",
    "namespace_of",
    "retention_namespace",
    "retention_path",
    "segment_path",
    "segments",
    "slot_files",
    "snapshot_path",
    "use_legacy_names",
    "writer_lock_path",
    "writer_slots",
]

_LOG_RE = re.compile(
    r"^(?P<ns>.+)\.log(?:\.s(?P<slot>[1-9]\d{0,5}))?(?:\.(?P<n>\d{8}))?\.jsonl(?P<gz>\.gz)?$"
)
_CORRUPT_RE = re.compile(r"^(?P<ns>.+)\.json\.corrupt-[0-9TZ.-]+$")


_legacy_roots: set[str] = set()
"""Roots a store opened while their marker named format 3 or earlier (or a move under way)."""


def use_legacy_names(root: str, legacy: bool) -> None:
    """Say whether ``root`` may still hold files named as before format 4 (a reader of an
    earlier directory, which it leaves as it is)."""
    if legacy:
        _legacy_roots.add(_key(root))
    else:
        _legacy_roots.discard(_key(root))


def _key(root: str) -> str:
    """``root`` as :data:`_legacy_roots` holds it: ``./data`` and ``/abs/data`` are one root."""
    return os.path.normcase(os.path.abspath(root))


def _legacy_marker(root: str) -> bool:
    """Whether ``root``'s marker names an earlier format, or a move under way (or is missing)."""
    try:
        found, moving = read_datadir_marker(os.path.join(root, DATADIR_FILE))
    except UnsupportedFormatError:
        return False  # a newer directory: refused where it is opened, never read by old names
    except OSError:
        return True
    return moving or found is None or found < FORMAT


def _still_legacy(root: str) -> bool:
    """Whether ``root``'s marker still names an earlier format (or a move under way); the root
    stops being looked at once it names this one."""
    if _legacy_marker(root):
        return True
    _legacy_roots.discard(_key(root))
    return False


def _path(root: str, ns: str, suffix: str) -> str:
    """The file of ``ns`` with ``suffix``: named by its stem, or by the namespace itself in a
    directory not yet moved to format 4 where only that file exists. (Only there: on a
    case-insensitive file system ``Calls.json`` would find ``calls.json``, another
    namespace's file.)"""
    stem = encode(ns)
    path = os.path.join(root, stem + suffix)
    if stem == ns or not _legacy_roots or _key(root) not in _legacy_roots or os.path.exists(path):
        return path
    old = os.path.join(root, ns + suffix)
    if os.path.exists(old) and _still_legacy(root):
        return old
    return path


def namespace_of(root: str, stem: str) -> str | None:
    """The namespace whose files are named by ``stem`` in ``root`` (``None``: none)."""
    ns = decode(stem)
    if ns is None and _legacy_roots and _key(root) in _legacy_roots:
        ns = decode_legacy(stem)
    return ns


def snapshot_path(root: str, ns: str) -> str:
    """Path of the KV snapshot of ``ns``."""
    return _path(root, ns, ".json")


def journal_path(root: str, ns: str) -> str:
    """Path of the KV journal of ``ns``."""
    return _path(root, ns, ".journal.jsonl")


def journal_lock_path(root: str, ns: str) -> str:
    """Path of the lock file of the KV journal of ``ns`` (only writers lock it, and they write
    a directory of this format)."""
    return os.path.join(root, encode(ns) + ".journal.lock")


_RETENTION = ".retention.json"


def retention_path(root: str, ns: str) -> str:
    """Path of the log caps of ``ns`` (``_retention``)."""
    return _path(root, ns, _RETENTION)


def retention_namespace(root: str, name: str) -> str | None:
    """The namespace whose caps the file ``name`` holds, or ``None`` if it is no caps file."""
    if not name.endswith(_RETENTION):
        return None
    return namespace_of(root, name[: -len(_RETENTION)])


def writer_lock_path(root: str, slot: int) -> str:
    """Path of the lock file of writer slot ``slot``."""
    return os.path.join(root, f".writer-{slot}.lock")


_WRITER_LOCK_RE = re.compile(r"\.writer-(\d{1,6})\.lock")


def writer_slots(root: str) -> list[int]:
    """The writer slots whose lock file exists in ``root`` (live or left by a dead writer)."""
    return [
        int(match[1])
        for name in os.listdir(root)
        if (match := _WRITER_LOCK_RE.fullmatch(name)) is not None
    ]


def _slot_suffix(slot: int) -> str:
    return ".log" if slot == 0 else f".log.s{slot}"


def log_path(root: str, ns: str, slot: int = 0) -> str:
    """Path of the active append log of ``ns`` for writer slot ``slot``."""
    return _path(root, ns, _slot_suffix(slot) + ".jsonl")


def segment_path(root: str, ns: str, number: int, slot: int = 0, *, gz: bool = False) -> str:
    """Path of rotated log segment ``number`` of ``ns`` for writer slot ``slot``."""
    suffix = f"{_slot_suffix(slot)}.{number:08d}.jsonl" + (".gz" if gz else "")
    return _path(root, ns, suffix)


@dataclass
class SlotFiles:
    """The log files one writer slot has written for a namespace."""

    slot: int
    active: str | None = None
    segments: list[tuple[int, str]] = field(default_factory=list)  # (number, path), oldest first


_SETTLED = 2.0  # seconds a directory must have been unchanged for its listing to be reused
_listings: dict[str, tuple[int, float, list[str]]] = {}  # root -> (mtime_ns, listed at, names)


def listdir_settled(root: str) -> list[str]:
    """``os.listdir(root)``, reused while the directory is unchanged (one ``stat`` instead of a
    listing per query). A listing is reused only when it was taken well after the directory's
    last change, so a change after it always shows as a new modification time.

    Raises:
        FileNotFoundError: no such directory.
    """
    st = os.stat(root)
    hit = _listings.get(root)
    if hit is not None and hit[0] == st.st_mtime_ns and st.st_mtime < hit[1] - _SETTLED:
        return hit[2]
    listed_at = time.time()
    names = os.listdir(root)
    _listings[root] = (st.st_mtime_ns, listed_at, names)
    return names


def _log_names(root: str, ns: str) -> list[tuple[int, int | None, str]]:
    """(slot, segment number or None for the active file, path) of every log file of ``ns``."""
    found: list[tuple[int, int | None, str]] = []
    prefixes = {encode(ns) + ".log."}
    if _legacy_roots and _key(root) in _legacy_roots:
        prefixes.add(ns + ".log.")
    try:
        names = listdir_settled(root)
    except FileNotFoundError:
        return found
    for name in names:
        if not name.startswith(tuple(prefixes)):
            continue
        match = _LOG_RE.match(name)
        if match and namespace_of(root, match["ns"]) == ns:
            number = int(match["n"]) if match["n"] else None
            if number is None and match["gz"]:
                continue  # an active file is never compressed
            found.append((int(match["slot"] or 0), number, os.path.join(root, name)))
    return found


def active_logs_by_slot(root: str) -> dict[int, list[tuple[str, str]]]:
    """Every namespace's active (not rotated) log file, ``(ns, path)``, by writer slot."""
    found: dict[int, list[tuple[str, str]]] = {}
    for name in listdir_settled(root):
        match = _LOG_RE.match(name)
        if match is not None and match["n"] is None and not match["gz"]:
            ns = namespace_of(root, match["ns"])
            if ns is not None:
                slot = int(match["slot"] or 0)
                found.setdefault(slot, []).append((ns, os.path.join(root, name)))
    return found


def slot_files(root: str, ns: str) -> list[SlotFiles]:
    """Every writer slot's log files of ``ns``, by slot; segments oldest first (a segment
    present both plain and compressed — a crash mid-compression — counts once, plain)."""
    slots: dict[int, SlotFiles] = {}
    for slot, number, path in _log_names(root, ns):
        files = slots.setdefault(slot, SlotFiles(slot))
        if number is None:
            files.active = path
        else:
            files.segments.append((number, path))
    for files in slots.values():
        files.segments.sort(key=lambda item: (item[0], item[1].endswith(".gz")))
        unique: list[tuple[int, str]] = []
        for number, path in files.segments:
            if not unique or unique[-1][0] != number:
                unique.append((number, path))
        files.segments = unique
    return [slots[s] for s in sorted(slots)]


def segments(root: str, ns: str, slot: int = 0) -> list[tuple[int, str]]:
    """Rotated segments of ``ns`` of writer slot ``slot`` as ``(number, path)``, oldest first."""
    for files in slot_files(root, ns):
        if files.slot == slot:
            return files.segments
    return []


@dataclass
class NamespaceFiles:
    """Every file that belongs to one namespace."""

    snapshot: str | None = None
    journal: str | None = None
    logs: list[str] = field(default_factory=list)  # active files of every slot
    segments: list[str] = field(default_factory=list)
    corrupt: list[str] = field(default_factory=list)

    @property
    def log(self) -> str | None:
        """The active log of slot 0 (the only one a single writer has)."""
        return next((p for p in self.logs if p.endswith(".log.jsonl")), None)

    def all(self) -> list[str]:
        """Every existing path, snapshot first."""
        paths = [p for p in (self.snapshot, self.journal) if p]
        return paths + self.segments + self.logs + self.corrupt


def discover(root: str) -> dict[str, NamespaceFiles]:
    """Map each namespace found in ``root`` to its files (sorted by namespace). A file named
    by no namespace's stem (``Con.json`` made by hand) belongs to none."""
    found: dict[str, NamespaceFiles] = {}
    try:
        names = sorted(os.listdir(root))
    except FileNotFoundError:
        return found
    use_legacy_names(root, _legacy_marker(root))  # and so for the paths looked at next

    def files(stem: str) -> NamespaceFiles | None:
        ns = namespace_of(root, stem)
        return None if ns is None else found.setdefault(ns, NamespaceFiles())

    for name in names:
        path = os.path.join(root, name)
        if name.startswith(".") or name.endswith((".lock", ".tmp", _RETENTION)):
            continue
        if is_temp_file(name):  # being written (a namespace's name may hold ".tmp-")
            continue
        if name.endswith(".journal.jsonl"):
            if (ns_files := files(name[: -len(".journal.jsonl")])) is not None:
                ns_files.journal = path
        elif (match := _LOG_RE.match(name)) is not None:
            if (ns_files := files(match["ns"])) is None:
                continue
            if match["n"]:
                ns_files.segments.append(path)
            elif not match["gz"]:
                ns_files.logs.append(path)
        elif (match := _CORRUPT_RE.match(name)) is not None:
            if (ns_files := files(match["ns"])) is not None:
                ns_files.corrupt.append(path)
        elif name.endswith(".json") and (ns_files := files(name[: -len(".json")])) is not None:
            ns_files.snapshot = path
    return dict(sorted(found.items()))
