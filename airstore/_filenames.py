"""File layout of a FileStore data directory.

For a namespace ``ns``::

    ns.json                  KV snapshot {"format": 1, "seq": N, "items": {key: [value, exp]}}
    ns.journal.jsonl         KV journal  [seq, "s", key, value, exp] / [seq, "d", key]
    ns.log.jsonl             active append log, one JSON object per line
    ns.log.00000001.jsonl    rotated log segments (higher number = newer)
    ns.json.corrupt-<time>   an unparseable snapshot kept aside by recovery
    .lock                    the writer lock (pid inside)

``exp`` (expiry) is absolute (seconds since the epoch) so an expired key stays expired after a
reopen; ``seq`` orders journal records against the snapshot.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field

__all__ = [
    "NamespaceFiles",
    "discover",
    "journal_path",
    "log_path",
    "segment_path",
    "segments",
    "snapshot_path",
]

_SEGMENT_RE = re.compile(r"^(?P<ns>.+)\.log\.(?P<n>\d{8})\.jsonl$")
_CORRUPT_RE = re.compile(r"^(?P<ns>.+)\.json\.corrupt-[0-9TZ.-]+$")


def snapshot_path(root: str, ns: str) -> str:
    """Path of the KV snapshot of ``ns``."""
    return os.path.join(root, ns + ".json")


def journal_path(root: str, ns: str) -> str:
    """Path of the KV journal of ``ns``."""
    return os.path.join(root, ns + ".journal.jsonl")


def log_path(root: str, ns: str) -> str:
    """Path of the active append log of ``ns``."""
    return os.path.join(root, ns + ".log.jsonl")


def segment_path(root: str, ns: str, number: int) -> str:
    """Path of rotated log segment ``number`` of ``ns``."""
    return os.path.join(root, f"{ns}.log.{number:08d}.jsonl")


def segments(root: str, ns: str) -> list[tuple[int, str]]:
    """Rotated segments of ``ns`` as ``(number, path)``, oldest first."""
    found: list[tuple[int, str]] = []
    prefix = ns + ".log."
    try:
        names = os.listdir(root)
    except FileNotFoundError:
        return found
    for name in names:
        if not name.startswith(prefix):
            continue
        match = _SEGMENT_RE.match(name)
        if match and match["ns"] == ns:
            found.append((int(match["n"]), os.path.join(root, name)))
    found.sort()
    return found


@dataclass
class NamespaceFiles:
    """Every file that belongs to one namespace."""

    snapshot: str | None = None
    journal: str | None = None
    log: str | None = None
    segments: list[str] = field(default_factory=list)
    corrupt: list[str] = field(default_factory=list)

    def all(self) -> list[str]:
        """Every existing path, snapshot first."""
        paths = [p for p in (self.snapshot, self.journal) if p]
        paths += self.segments
        if self.log:
            paths.append(self.log)
        return paths + self.corrupt


def discover(root: str) -> dict[str, NamespaceFiles]:
    """Map each namespace found in ``root`` to its files (sorted by namespace)."""
    found: dict[str, NamespaceFiles] = {}
    try:
        names = sorted(os.listdir(root))
    except FileNotFoundError:
        return found

    def files(ns: str) -> NamespaceFiles:
        return found.setdefault(ns, NamespaceFiles())

    for name in names:
        path = os.path.join(root, name)
        if name.startswith("."):
            continue
        if name.endswith(".journal.jsonl"):
            files(name[: -len(".journal.jsonl")]).journal = path
        elif name.endswith(".log.jsonl"):
            files(name[: -len(".log.jsonl")]).log = path
        elif (match := _SEGMENT_RE.match(name)) is not None:
            files(match["ns"]).segments.append(path)
        elif (match := _CORRUPT_RE.match(name)) is not None:
            files(match["ns"]).corrupt.append(path)
        elif name.endswith(".json"):
            files(name[: -len(".json")]).snapshot = path
    return dict(sorted(found.items()))
