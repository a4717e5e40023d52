"""A writer's way into a data directory: the directory lock, after moving a directory of format
3 or earlier to format 4's file names (``_names``).

The move runs under the exclusive lock on ``.lock``, so no writer of any release is open:
every writer holds that lock shared (format 1: exclusive). It first writes the marker
``{"format":4,"moving":N}``, so a writer of an earlier release refuses the directory from
then on, even if the move is cut short; then renames each file whose name differs in format
4 (``Calls.json`` → ``+calls.json``; a name that is its own stem stays), syncs the directory,
and writes the marker ``{"format":4}`` once it holds the lock shared like any writer. A writer
killed mid-move leaves every file under one of its two names: the next writer sees
``moving`` and finishes the move (a rename already done is simply not found again). A reader
reads files under both names meanwhile (``_filenames.use_legacy_names``).

A writer of an earlier release that is open refuses the move (:class:`StoreLockedError` with
its pid); so does one of format 1, which holds ``.lock`` exclusively.
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
import time

from airstore import _platform
from airstore._atomic import fsync_dir, is_temp_file, write_atomic
from airstore._format import DATADIR_FILE, FORMAT, datadir_marker, read_datadir_marker
from airstore._lock import LOCK_NAME, live_earlier_writer, read_holder_pid
from airstore._names import decode_legacy, encode
from airstore.errors import CorruptDataError, StorageIOError, StoreLockedError

__all__ = ["WAIT", "enter_as_writer", "moves"]

logger = logging.getLogger(__name__)

WAIT = 10.0
"""Seconds a writer waits for another writer of this release to finish moving the directory."""

_NAME_RES = [  # in the order format 3's readers told a file's kind (``_filenames.discover``)
    re.compile(r"^(?P<stem>.+)(?P<suffix>\.journal\.lock|\.retention\.json|\.journal\.jsonl)$"),
    re.compile(r"^(?P<stem>.+)(?P<suffix>\.log(?:\.s[1-9]\d{0,5})?(?:\.\d{8})?\.jsonl(?:\.gz)?)$"),
    re.compile(r"^(?P<stem>.+)(?P<suffix>\.json\.corrupt-[0-9TZ.-]+|\.json)$"),
]


def _split(name: str) -> tuple[str, str] | None:
    """``(stem, suffix)`` of a namespace's file name, as format 3 read it."""
    for pattern in _NAME_RES:
        if (match := pattern.match(name)) is not None:
            return match["stem"], match["suffix"]
    return None


def moves(root: str) -> list[tuple[str, str]]:
    """``(old name, new name)`` of every file of ``root`` named as before format 4 whose name
    changes in format 4."""
    planned = []
    for name in sorted(os.listdir(root)):
        if name.startswith(".") or is_temp_file(name):
            continue  # the directory's own files; what a dead writer left half-written
        split = _split(name)
        if split is None:
            continue
        stem, suffix = split
        ns = decode_legacy(stem)
        if ns is not None and encode(ns) != stem:
            planned.append((name, encode(ns) + suffix))
    return planned


def _rename(src: str, dst: str) -> None:
    _platform.replace(src, dst)


def _move(root: str, found: int | None) -> None:
    """Rename every file to its format-4 name (the caller holds ``.lock`` exclusively)."""
    marker = os.path.join(root, DATADIR_FILE)
    planned = moves(root)
    if planned:
        write_atomic(marker, datadir_marker(moving=found or 1))
    both: list[tuple[str, str]] = []
    for old, new in planned:
        src, dst = os.path.join(root, old), os.path.join(root, new)
        if os.path.exists(dst):  # never overwrite: both stay, and the move does not finish
            if old.endswith(".lock"):
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(src)  # a lock file holds no data
                continue
            both.append((src, dst))
            continue
        _rename(src, dst)
        logger.info("airstore: %s renamed %s to %s (format %d names)", root, old, new, FORMAT)
    if planned:
        fsync_dir(root)
    if both:
        # Finishing the move would hide the old-named file's data for good (readers of format 4
        # look at format-4 names only): the marker keeps saying "moving", and the user decides.
        pairs = "; ".join(f"{src!r} and {dst!r}" for src, dst in both)
        raise CorruptDataError(
            f"data directory {root!r} holds a file under its old name and under its format-"
            f"{FORMAT} name ({pairs}): the move to format {FORMAT} stopped so that neither is "
            "hidden; keep one of each pair (merge them, or remove the one you do not need), "
            "then open the directory again",
            path=both[0][0],
        )


def enter_as_writer(root: str) -> int:
    """Hold ``root``'s ``.lock`` shared, as every writer of this release does, after moving the
    directory to this format if it is of an earlier one. Returns the descriptor holding the
    lock: the caller closes it once its own writer lock (``DirLock``) is taken.

    Raises:
        StoreLockedError: a writer of an earlier release has the directory open, or another
            writer of this release did not finish moving it within :data:`WAIT` seconds.
        UnsupportedFormatError: the directory is of a newer format.
        CorruptDataError: a file is there under its old name and under its new one (the move
            stops unfinished, so that neither is hidden).
        OSError: a file cannot be read, written or renamed.
    """
    marker = os.path.join(root, DATADIR_FILE)
    lock_path = os.path.join(root, LOCK_NAME)
    try:
        fd = _platform.open_file(lock_path, os.O_RDWR | os.O_CREAT | _platform.OPEN_FLAGS, 0o644)
    except OSError as exc:
        raise StorageIOError(f"cannot open lock file {lock_path}: {exc}", path=lock_path) from exc
    deadline = time.monotonic() + WAIT
    try:
        while True:
            found, moving = read_datadir_marker(marker)
            if found == FORMAT and not moving:
                if _platform.try_lock(fd, shared=True):
                    return fd
            elif _platform.try_lock(fd, shared=False):
                found, moving = read_datadir_marker(marker)  # no writer can change it now
                current = found == FORMAT and not moving
                if not current:
                    _move(root, found)
                _platform.unlock(fd)
                if _platform.try_lock(fd, shared=True):
                    if not current:
                        write_atomic(marker, datadir_marker())
                    return fd
                continue  # another writer took it exclusively in between: it moves
            _refuse_earlier_writers(root, lock_path)
            if time.monotonic() > deadline:
                found, moving = read_datadir_marker(marker)
                held = f"is held exclusively by another process for over {WAIT:.0f} s"
                why = (
                    f"is being moved to format {FORMAT} by another writer, which did not "
                    f"finish within {WAIT:.0f} s"
                    if moving
                    else f"{held} (a writer of an older air release, which holds it so, or one "
                    f"of this release about to move it to format {FORMAT})"
                    if found != FORMAT
                    else f"{held} (a writer of an older air release, which holds it so; this "
                    "release's writers share it)"
                )
                raise StoreLockedError(f"data directory {root!r} {why}", path=lock_path, pid=None)
            time.sleep(0.01)
    except BaseException:
        os.close(fd)
        raise


def _refuse_earlier_writers(root: str, lock_path: str) -> None:
    """Raise if ``.lock`` is busy because a writer of an earlier release is open."""
    earlier = live_earlier_writer(root)
    if earlier is not None:
        path, pid = earlier
        raise StoreLockedError(
            f"data directory {root!r} is open in a writer of an earlier air release (pid {pid}),"
            " which cannot read what this release writes: stop it (or upgrade it) before "
            "starting this release on the same directory",
            path=path,
            pid=pid,
        )
    holder = read_holder_pid(lock_path)  # format 1 held .lock exclusively, its pid inside
    if holder is not None:
        raise StoreLockedError(
            f"data directory {root!r} is held by a writer of an older air release (pid "
            f"{holder}); stop it or upgrade it to write beside it",
            path=lock_path,
            pid=holder,
        )
