"""Per-namespace log retention of a FileStore: caps kept on disk, applied by every writer.

``ns.retention.json`` (``{"airstore": "retention", "format": 3, "max_age": s, "max_bytes":
n}``) holds a namespace's caps, so every process sharing the directory — and ``air store
stats`` — sees the same ones. Any writer deletes rotated segments (of any writer slot: they
never change once rotated), oldest first, until the namespace's log files fit ``max_bytes``,
and every segment whose newest entry is older than ``max_age`` seconds. Active files are never
deleted; a namespace with a byte cap rotates at an eighth of it, so the cap can be kept.
"""

from __future__ import annotations

import contextlib
import logging
import os
import zlib
from dataclasses import dataclass
from typing import TypeGuard

import orjson

from airstore import _filenames, _platform
from airstore._atomic import write_atomic
from airstore._filenames import slot_files
from airstore._format import FORMAT, check_version
from airstore._gzseg import gz_chunks_newest_first
from airstore._validate import MAX_COUNTER, MAX_TTL
from airstore.errors import InvalidArgumentError

__all__ = ["Retention", "apply_retention", "read_retention", "retention_path", "write_retention"]

logger = logging.getLogger(__name__)

MIN_ROTATE_BYTES = 64 * 1024
MAX_LOG_BYTES = MAX_COUNTER
"""The largest ``max_bytes`` cap (2**53 - 1 bytes, 8 PiB); larger ones are refused on every
backend."""


@dataclass(frozen=True, slots=True)
class Retention:
    """A namespace's log caps (``None``: no cap)."""

    max_age: float | None = None
    max_bytes: int | None = None

    @classmethod
    def checked(cls, max_age: object, max_bytes: object) -> Retention:
        """Validate the caps the way every backend does.

        Raises:
            InvalidArgumentError: a cap that is not a positive finite number (or None), or
                beyond the largest one (100 years, :data:`MAX_LOG_BYTES`).
        """
        if max_age is not None and (
            isinstance(max_age, bool)
            or not isinstance(max_age, int | float)
            or not 0 < max_age <= MAX_TTL  # also NaN, ±inf (math.isfinite(10**400) raises)
        ):
            raise InvalidArgumentError(
                f"max_age must be positive seconds up to {MAX_TTL:.0f} (100 years) or None, "
                f"got {max_age!r}"
            )
        if max_bytes is not None and (
            isinstance(max_bytes, bool)
            or not isinstance(max_bytes, int)
            or not 0 < max_bytes <= MAX_LOG_BYTES
        ):
            raise InvalidArgumentError(
                f"max_bytes must be a positive int up to 2**53 - 1 or None, got {max_bytes!r}"
            )
        return cls(None if max_age is None else float(max_age), max_bytes)

    def rotate_bytes(self, default: int) -> int:
        """The size at which a writer rotates this namespace's active log."""
        if self.max_bytes is None:
            return default
        return min(default, max(MIN_ROTATE_BYTES, self.max_bytes // 8))


def retention_path(root: str, ns: str) -> str:
    """Path of the caps file of ``ns``."""
    return _filenames.retention_path(root, ns)


def write_retention(root: str, ns: str, caps: Retention) -> None:
    """Store the caps (atomically); no caps at all removes the file."""
    path = retention_path(root, ns)
    if caps.max_age is None and caps.max_bytes is None:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(path)
        return
    doc = {"airstore": "retention", "format": FORMAT, "max_age": caps.max_age}
    doc["max_bytes"] = caps.max_bytes
    write_atomic(path, orjson.dumps(doc))


def read_retention(root: str, ns: str) -> Retention | None:
    """The caps stored for ``ns``; ``None`` when there are none, or (with a warning) when the
    file is unreadable or damaged: the log then grows uncapped until its caps are set again.

    Raises:
        UnsupportedFormatError: the file names a newer format.
    """
    path = retention_path(root, ns)
    try:
        with open(path, "rb") as fh:
            doc = orjson.loads(fh.read())
    except FileNotFoundError:
        return None
    except (OSError, orjson.JSONDecodeError) as exc:  # a directory, a symlink loop, garbage
        logger.warning("airstore: ignoring the unreadable log caps in %s: %s", path, exc)
        return None
    if not isinstance(doc, dict) or type(doc.get("format")) is not int or doc["format"] < 1:
        logger.warning("airstore: ignoring the damaged log caps in %s (no format)", path)
        return None
    check_version(doc["format"], path)  # a newer format is refused, never misread
    # A cap beyond today's largest was accepted by earlier releases: it reads as the largest
    # (as good as none), never as "no caps at all", which would drop the other cap with it.
    max_age, max_bytes = doc.get("max_age"), doc.get("max_bytes")
    if _is_number(max_age) and max_age > MAX_TTL:
        max_age = MAX_TTL
    if _is_number(max_bytes) and max_bytes > MAX_LOG_BYTES:
        max_bytes = MAX_LOG_BYTES
    try:
        return Retention.checked(max_age, max_bytes)
    except InvalidArgumentError as exc:
        logger.warning("airstore: ignoring the unusable log caps in %s: %s", path, exc)
        return None


def _is_number(value: object) -> TypeGuard[int | float]:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _newest_ts(path: str) -> int | None:
    """``_ts`` of the last entry of a rotated segment (plain or compressed)."""
    fd = _platform.open_file(path, os.O_RDONLY | _platform.OPEN_FLAGS)
    try:
        if path.endswith(".gz"):
            damaged: list[BaseException] = []
            tail = next(iter(gz_chunks_newest_first(fd, damaged.append)), b"")
            if damaged:  # its newest part is unreadable: no age to judge it by
                return None
        else:
            size = os.fstat(fd).st_size
            tail = _platform.pread(fd, min(size, 64 * 1024), max(0, size - 64 * 1024))
    except (EOFError, zlib.error):
        return None
    finally:
        os.close(fd)
    for line in reversed(tail.split(b"\n")):
        try:
            ts = orjson.loads(line).get("_ts")
        except (orjson.JSONDecodeError, AttributeError):
            continue
        if type(ts) is int:
            return ts
    return None


def apply_retention(root: str, ns: str, caps: Retention, now: float) -> int:
    """Delete the segments the caps rule out (age: a segment whose newest entry is older than
    ``now - max_age``, ``now`` on the store's clock); returns how many."""
    files: list[tuple[float, int, str, bool]] = []  # (mtime, size, path, is_segment)
    for slot in slot_files(root, ns):
        paths = [(p, True) for _n, p in slot.segments]
        if slot.active is not None:
            paths.append((slot.active, False))
        for path, segment in paths:
            with contextlib.suppress(FileNotFoundError):
                st = os.stat(path)
                files.append((st.st_mtime, st.st_size, path, segment))
    files.sort()
    total = sum(size for _m, size, _p, _s in files)
    cutoff = None if caps.max_age is None else int((now - caps.max_age) * 1000)
    removed = 0
    for _mtime, size, path, segment in files:
        if not segment:
            continue
        too_big = caps.max_bytes is not None and total > caps.max_bytes
        if not too_big:
            if cutoff is None:
                continue
            try:
                newest = _newest_ts(path)
            except FileNotFoundError:
                continue
            if newest is None or newest >= cutoff:
                continue
        with contextlib.suppress(FileNotFoundError):  # another writer got there first
            os.unlink(path)
            removed += 1
            logger.info("airstore: log retention removed %s", path)
        total -= size
    return removed
