"""Crash-safe whole-file writes, and the clean-up of what a crash left half-written."""

from __future__ import annotations

import contextlib
import itertools
import os
import re
import secrets

from airstore import _platform

__all__ = [
    "fsync_dir",
    "is_temp_file",
    "remove_stale_temp_files",
    "temp_path",
    "write_atomic",
    "write_file",
]

# This process numbers its temp files from a random start, so that a file left by an earlier
# process with the same pid (PID 1 in a container, every run) is told apart from its own.
_FIRST = secrets.randbelow(1 << 62)
_WINDOW = 1 << 32
_counter = itertools.count(_FIRST)
_TMP_RE = re.compile(r"\.tmp(?:-(?P<pid>\d+)(?:-(?P<n>\d+))?)?$")


def temp_path(path: str) -> str:
    """A temp file name beside ``path`` that names this process (see
    :func:`remove_stale_temp_files`)."""
    return f"{path}.tmp-{os.getpid()}-{next(_counter)}"


def _mine(n: str | None) -> bool:
    return n is not None and _FIRST <= int(n) < _FIRST + _WINDOW


def is_temp_file(name: str) -> bool:
    """Whether the file ``name`` is a temp file (being written, or left by a crash)."""
    return _TMP_RE.search(name) is not None


def remove_stale_temp_files(root: str) -> None:
    """Delete temp files of writers that died mid-write. A live writer's are left alone, and
    this process's own (another store of it may be writing one); one named with this pid
    that this process did not name is an earlier process's, and goes."""
    for name in os.listdir(root):
        match = _TMP_RE.search(name)
        if match is None:
            continue
        pid = match["pid"]
        if pid is not None:
            if int(pid) == os.getpid():
                if _mine(match["n"]):
                    continue
            elif _platform.pid_alive(int(pid)):
                continue
        with contextlib.suppress(OSError):
            os.unlink(os.path.join(root, name))


def write_file(path: str, *parts: bytes | memoryview) -> None:
    """Write ``parts`` one after the other to a new file ``path`` and fsync it (parts spare a
    caller the copy of joining them)."""
    fd = _platform.open_file(
        path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | _platform.OPEN_FLAGS, 0o644
    )
    try:
        for data in parts:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view) :]
        os.fsync(fd)
    except BaseException:
        os.close(fd)
        with contextlib.suppress(OSError):
            os.unlink(path)
        raise
    os.close(fd)


def fsync_dir(root: str) -> None:
    """fsync a directory, so a rename in it is durable (where the OS has a directory fsync)."""
    _platform.sync_dir(root)


def write_atomic(path: str, data: bytes) -> None:
    """Write ``data`` to ``path`` so that a crash leaves either the old or the new file.

    A temp file in the same directory is written and fsynced, renamed over ``path``, and the
    directory is fsynced so the rename itself is durable.
    """
    tmp = temp_path(path)
    write_file(tmp, data)
    _platform.replace(tmp, path)
    fsync_dir(os.path.dirname(path))
