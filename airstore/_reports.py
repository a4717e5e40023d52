"""What a check of a data directory reports, and the size of its namespaces: plain records.

Apart from :mod:`airstore._recovery`, which makes them, so that :mod:`airstore.types` (the
``Inspectable`` protocol returns them) imports no module that imports it back.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

__all__ = ["CheckReport", "Finding", "FindingKind", "NamespaceCheck", "NamespaceStats"]

FindingKind = Literal[
    "torn_tail", "corrupt_line", "corrupt_snapshot", "snapshot_kept_aside", "unsupported_format"
]


@dataclass(frozen=True, slots=True, kw_only=True)
class Finding:
    """One problem found in a file.

    Attributes:
        kind: ``torn_tail`` (an unfinished last line), ``corrupt_line`` (a line that does not
            parse), ``corrupt_snapshot`` (an unparseable ``ns.json``),
            ``snapshot_kept_aside`` (a ``ns.json.corrupt-*`` file from an earlier recovery) or
            ``unsupported_format`` (a file written by a newer release: left unread).
        namespace: the namespace the file belongs to.
        path: the file.
        line: 1-based line number for line problems, else ``None``.
        detail: a readable explanation.
    """

    kind: FindingKind
    namespace: str
    path: str
    line: int | None = None
    detail: str = ""


@dataclass(slots=True)
class NamespaceCheck:
    """Counts for one namespace."""

    namespace: str
    files: list[str] = field(default_factory=list)
    keys: int = 0
    journal_records: int = 0
    log_entries: int = 0
    bytes: int = 0
    findings: list[Finding] = field(default_factory=list)


@dataclass(slots=True)
class CheckReport:
    """The result of :func:`check_directory`."""

    root: str
    namespaces: list[NamespaceCheck] = field(default_factory=list)
    events: list[dict[str, Any]] = field(default_factory=list)
    """What writers recorded in the directory's event log (e.g. ``lost_writes`` after a full
    disk), oldest first; informative, so not counted in :attr:`ok`."""

    @property
    def findings(self) -> list[Finding]:
        """Every finding of every namespace."""
        return [f for ns in self.namespaces for f in ns.findings]

    @property
    def ok(self) -> bool:
        """True when nothing is wrong."""
        return not self.findings


@dataclass(slots=True)
class NamespaceStats:
    """Size of one namespace (``air store stats``).

    Attributes:
        log_bytes: bytes of its log files (every writer's, compressed segments as stored).
        oldest_log_age: seconds since its oldest log file was last written (``None``: no log).
        max_age, max_bytes: the retention caps stored for it (``None``: no such cap).
    """

    namespace: str
    keys: int = 0
    log_entries: int = 0
    segments: int = 0
    files: int = 0
    bytes: int = 0
    has_kv: bool = False
    log_bytes: int = 0
    oldest_log_age: float | None = None
    max_age: float | None = None
    max_bytes: int | None = None
