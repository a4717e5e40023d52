"""Version markers of a FileStore data directory: one per file, checked before anything is read.

Format 4 (this release) files, ``ns`` standing for the namespace's file-name stem (``_names``)::

    .airstore                {"airstore":"datadir","format":4}: the directory, and with it the
                             layout and line format of its logs (plain JSONL, one entry a line,
                             so ``jq`` and ``grep`` keep working on them); while a writer moves
                             an earlier directory to this layout: {…,"format":4,"moving":3}
    ns.json                  {"format":4,"pos":P,"items":[[key,value],[key,value,exp],...]}
    ns.journal.jsonl         {"airstore":"journal","format":4,"base":B} then one record a line:
                             [key,value] / [key,value,exp] (set), [key] (delete)
    ns.log*.jsonl.gz         gzip members carrying the extra subfield ``AS`` (``_gzseg``)
    ns.retention.json        {"airstore":"retention","format":4,...}
    .events.jsonl            {"airstore":"events","format":4} then one event a line

Format 4 changed only the file names: a namespace's files are named by its stem, which is safe
on every file system (``Calls`` → ``+calls``, ``con`` → ``con+_``, ``trail.`` → ``trail.+_``;
most names are their own stem). A writer moves an earlier directory to it when it opens it
(``_migrate``); a reader reads an earlier directory as it is. Its files' contents are those of
format 3, under their own version number, so a release of format 3 refuses them.

Format 3 changed only the KV records: a record is the array ``[key, value(, exp)]`` that one
orjson call encodes, where format 2 wrote ``{key: [value, exp]}`` / ``{key: null}`` (its
snapshot held them as one object). Everything else is as in format 2.

A log file may start with a ``{"airstore":"log","format":N}`` line (a later release may write
one): readers skip it and refuse a newer N. Files of formats 1 (a snapshot with ``"format":1``,
a journal without a header, no ``.airstore``) and 2 are read as they are. A writer moves a
format-1 namespace to format 3 when it first loads it (a snapshot, then a new journal), and a
format-2 journal before its first append to it (a new journal holding the old records as they
are, then its own; the snapshot follows at the next compaction): so an earlier release never
reads a record of the new shape, it refuses the new files by their format. A version above
:data:`FORMAT` is refused with :class:`~airstore.UnsupportedFormatError`, never guessed at.
"""

from __future__ import annotations

from typing import Any

import orjson

from airstore.errors import UnsupportedFormatError

__all__ = [
    "DATADIR_FILE",
    "FORMAT",
    "HEADER_PREFIX",
    "check_version",
    "datadir_marker",
    "journal_header",
    "parse_header",
    "read_datadir_marker",
]

FORMAT = 4
"""The format this release writes; it reads this one and every earlier one."""

DATADIR_FILE = ".airstore"
HEADER_PREFIX = b'{"airstore":'
"""Every header line starts with these bytes (no log entry or journal record can)."""


def journal_header(base: int) -> bytes:
    """The first line of a journal whose first record sits at logical ``base``."""
    return b'{"airstore":"journal","format":%d,"base":%d}\n' % (FORMAT, base)


def datadir_marker(moving: int | None = None) -> bytes:
    """The content of a data directory's marker file (this release's format); ``moving``: the
    format of the layout a writer is moving the directory from, while it does."""
    if moving is None:
        return b'{"airstore":"datadir","format":%d}\n' % FORMAT
    return b'{"airstore":"datadir","format":%d,"moving":%d}\n' % (FORMAT, moving)


def read_datadir_marker(path: str) -> tuple[int | None, bool]:
    """The format named by the marker file ``path`` (``None``: no marker, or a torn one) and
    whether a move to this layout is under way.

    Raises:
        UnsupportedFormatError: a newer format, or no format at all.
        OSError: the marker cannot be read.
    """
    try:
        with open(path, "rb") as fh:
            data = fh.read(4096)
    except FileNotFoundError:
        return None, False  # a new directory, or one written by the format-1 release
    try:
        doc = orjson.loads(data)
    except orjson.JSONDecodeError:
        return None, False  # a torn marker (crash mid-creation): every file has its own marker
    found = check_version(doc.get("format") if isinstance(doc, dict) else None, path)
    return found, isinstance(doc, dict) and "moving" in doc


def parse_header(line: bytes, kind: str, path: str) -> dict[str, Any] | None:
    """The header fields of ``line`` if it is a header line of ``kind``, else ``None``.

    Raises:
        UnsupportedFormatError: a header of a newer format, or of another kind of file.
    """
    if not line.startswith(HEADER_PREFIX):
        return None
    try:
        doc = orjson.loads(line)
    except orjson.JSONDecodeError:
        return None  # a torn header: the caller treats the file as unreadable from here
    if not isinstance(doc, dict) or doc.get("airstore") != kind:
        raise UnsupportedFormatError(
            f"{path} has a header of an unknown kind ({doc!r:.80}); expected a {kind} file",
            path=path,
            found=-1,
            supported=FORMAT,
        )
    check_version(doc.get("format"), path)
    return doc


def check_version(found: object, path: str) -> int:
    """Return ``found`` if this release reads that format version.

    Raises:
        UnsupportedFormatError: a version above :data:`FORMAT` (or not a version at all).
    """
    if type(found) is not int or found < 1 or found > FORMAT:
        why = (
            f"is in format {found!r}, written by a newer air; this release reads formats 1 to "
            f"{FORMAT}: upgrade air to open this data directory"
            if type(found) is int and found > FORMAT
            else f"names format {found!r}, which is no format version: the file is damaged or "
            "was not written by air; move it aside (or restore it) to open this data directory"
        )
        raise UnsupportedFormatError(
            f"{path} {why}",
            path=path,
            found=found if type(found) is int else -1,
            supported=FORMAT,
        )
    return found
