"""Who may write a FileStore data directory: every writer holds a shared ``flock`` on ``.lock``
and an exclusive one on its own writer slot (``.writer-N.lock``).

* Any number of writers (processes, or stores in one process) share a directory. Each owns the
  lowest free slot; its append logs carry the slot's number, so no two writers ever append to
  the same log file. A slot left by a dead writer is taken by the next one, which repairs and
  continues its files: the number of log files follows the most writers ever open at once.
* A writer of format 1 locked ``.lock`` exclusively: the two exclude each other (a
  ``StoreLockedError`` naming the holder), so an old release never writes beside a new one.
  Writers of formats 2 and 3 take the same locks as this one but write their bare pid
  (format 2) or ``pid airstore=3`` into their slot file (this release: ``airstore=4``): a
  writer of this release refuses to open beside a live one, since it writes files the other
  cannot read (``_migrate`` moves the directory under ``.lock`` held exclusively).
* The locks (``flock``; ``LockFileEx`` on Windows: ``airstore._platform``) die with the
  process, so a SIGKILLed writer never leaves a stale lock behind; the pid inside a slot's
  file is only informative.
"""

from __future__ import annotations

import contextlib
import os
import time

from airstore import _platform
from airstore._appendfile import cut_torn_tail
from airstore._filenames import active_logs_by_slot, writer_lock_path, writer_slots
from airstore._format import FORMAT
from airstore.errors import StorageIOError, StoreLockedError

__all__ = [
    "LOCK_NAME",
    "MAX_SLOTS",
    "DirLock",
    "live_earlier_writer",
    "read_holder_pid",
]

LOCK_NAME = ".lock"
MAX_SLOTS = 4096
"""Writers open at once on one data directory, at most."""


def read_holder_pid(path: str) -> int | None:
    """Return the pid written in a lock file, or ``None`` when absent or unreadable."""
    try:
        with open(path, "rb") as fh:
            text = fh.read(64).split(b" ", 1)[0].strip()
    except OSError:
        return None
    return int(text) if text.isdigit() else None


def _slot_text() -> bytes:
    """What a writer of this release writes into its slot file: its pid and the format it
    writes (a writer of format 2 wrote its pid alone)."""
    return f"{os.getpid()} airstore={FORMAT}\n".encode()


def _earlier_writer(path: str) -> int | None:
    """The pid of a live writer of an earlier release holding the slot file ``path`` (its
    lock is held and the file holds a bare pid), else ``None``. A slot being taken right now
    holds its former owner's pid for a moment: it is read again after a short wait."""
    for attempt in range(2):
        try:
            fd = _platform.open_file(path, os.O_RDWR | _platform.OPEN_FLAGS)
        except OSError:
            return None
        try:
            try:
                if _platform.try_lock(fd, shared=False):
                    return None  # nobody holds it: a dead writer's slot
            except OSError:
                return None
            text = _platform.pread(fd, 64, 0).strip()
        finally:
            os.close(fd)
        pid = _earlier_pid(text)
        if pid is None:
            return None
        if attempt == 0:
            time.sleep(0.05)
    return pid


def _earlier_pid(text: bytes) -> int | None:
    """The pid in a slot file's text if an earlier release wrote it (format 2: the bare pid;
    format 3: ``pid airstore=3``), else ``None``."""
    pid, _, mark = text.partition(b" ")
    if not pid.isdigit():
        return None
    if not mark:
        return int(pid)
    version = mark.removeprefix(b"airstore=")
    return int(pid) if version.isdigit() and int(version) < FORMAT else None


def live_earlier_writer(directory: str) -> tuple[str, int] | None:
    """``(slot file, pid)`` of a live writer of an earlier release in ``directory``, if any."""
    for slot in writer_slots(directory):
        path = writer_lock_path(directory, slot)
        pid = _earlier_writer(path)
        if pid is not None:
            return path, pid
    return None


def _open(path: str) -> int:
    try:
        return _platform.open_file(path, os.O_RDWR | os.O_CREAT | _platform.OPEN_FLAGS, 0o644)
    except OSError as exc:
        raise StorageIOError(f"cannot open lock file {path}: {exc}", path=path) from exc


class DirLock:
    """The writer locks of one data directory; :attr:`slot` is this writer's slot."""

    def __init__(self, directory: str) -> None:
        self.directory = directory
        self.path = os.path.join(directory, LOCK_NAME)
        self.slot = -1
        self._fd: int | None = None
        self._slot_fd: int | None = None

    def acquire(self) -> int:
        """Take the shared directory lock and the lowest free slot; return the slot.

        Raises:
            StoreLockedError: a writer of the previous format holds the directory.
            StorageIOError: the lock files cannot be opened, or every slot is taken.
        """
        fd = _open(self.path)
        try:
            free = _platform.try_lock(fd, shared=True)
        except OSError as exc:
            os.close(fd)
            raise StorageIOError(f"cannot lock {self.path}: {exc}", path=self.path) from exc
        if not free:
            os.close(fd)
            pid = read_holder_pid(self.path)
            raise StoreLockedError(
                f"data directory {self.directory!r} is held by a writer of an older air "
                f"release (pid {pid if pid is not None else 'unknown'}); stop it or "
                "upgrade it to write beside it",
                path=self.path,
                pid=pid,
            )
        self._fd = fd
        for slot in range(MAX_SLOTS):
            path = writer_lock_path(self.directory, slot)
            slot_fd = _open(path)
            try:
                free = _platform.try_lock(slot_fd, shared=False)
            except OSError as exc:
                os.close(slot_fd)
                self.release()
                raise StorageIOError(f"cannot lock {path}: {exc}", path=path) from exc
            if not free:
                os.close(slot_fd)
                continue
            with contextlib.suppress(OSError):  # the pid is informative only
                os.ftruncate(slot_fd, 0)
                _platform.pwrite(slot_fd, _slot_text(), 0)
            self._slot_fd = slot_fd
            self.slot = slot
            self._refuse_earlier_writers()
            return slot
        self.release()
        raise StorageIOError(
            f"{MAX_SLOTS} writers already hold {self.directory!r}", path=self.directory
        )

    def _refuse_earlier_writers(self) -> None:
        """A writer of format 2 (the release before) shares the directory's locks with this
        one, but this release moves a namespace's journal to format 3 at its first append, and
        the earlier writer then fails on that namespace, losing what it had acknowledged. One
        already open when this one opens is refused here; one opening later refuses the
        directory itself, by the format-3 marker this writer puts in place
        (``FileStore._open_writer``).

        Raises:
            StoreLockedError: a live writer of an earlier release holds a slot.
        """
        for slot in writer_slots(self.directory):
            if slot == self.slot:
                continue
            path = writer_lock_path(self.directory, slot)
            pid = _earlier_writer(path)
            if pid is not None:
                self.release()
                raise StoreLockedError(
                    f"data directory {self.directory!r} is open in a writer of an earlier air "
                    f"release (pid {pid}), which cannot read what this release writes: stop "
                    "it (or upgrade it) before starting this release on the same directory",
                    path=path,
                    pid=pid,
                )

    def repair_dead_slots(self) -> list[tuple[str, str, int]]:
        """Cut the torn last line of every active log of a slot no live writer holds (its
        writer was killed mid-write); returns ``(ns, path, bytes cut)`` of each repair.

        A slot is repaired under its own lock, taken without waiting: a live writer's slot,
        or one another process is taking right now, is left alone.
        """
        repaired: list[tuple[str, str, int]] = []
        for slot, logs in active_logs_by_slot(self.directory).items():
            if slot == self.slot:
                continue
            try:
                fd = _open(writer_lock_path(self.directory, slot))
            except StorageIOError:
                continue
            try:
                try:
                    if not _platform.try_lock(fd, shared=False):
                        continue  # a live writer
                except OSError:
                    continue
                for ns, path in logs:
                    with contextlib.suppress(OSError):  # gone, or unreadable: readers skip it
                        log_fd = _platform.open_file(path, os.O_RDWR | _platform.OPEN_FLAGS)
                        try:
                            _, cut = cut_torn_tail(log_fd)
                        finally:
                            os.close(log_fd)
                        if cut:
                            repaired.append((ns, path, cut))
            finally:
                os.close(fd)  # closing releases the lock
        return repaired

    def release(self) -> None:
        """Drop both locks. Idempotent."""
        for fd in (self._slot_fd, self._fd):
            if fd is not None:
                with contextlib.suppress(OSError):
                    os.close(fd)
        self._fd = self._slot_fd = None
        self.slot = -1
