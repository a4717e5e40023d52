"""The Windows implementation: ``LockFileEx`` locks, ``FlushFileBuffers`` (``os.fsync``),
seek + read for a positional read, ``os.replace`` retried on a sharing violation.

It imports on every OS: ``msvcrt`` and ``ctypes`` are imported inside the functions that need
them, so that its logic runs (with those two replaced) in the tests on Linux.

* Windows' byte-range locks are mandatory: a locked byte cannot be read through another
  handle. Every lock here is on one byte far beyond any content (offset 2**62), so a lock
  file's text (a writer's pid) stays readable while its lock is held. A lock belongs to its
  handle and is released when the handle closes or the process ends.
* There is no directory fsync on Windows: NTFS journals its metadata, so a completed rename
  survives a crash; ``sync_dir`` does nothing.
* ``os.replace`` onto a file that another process holds open without ``FILE_SHARE_DELETE``
  fails with a sharing violation (winerror 32) or access denied (5) while it is open. airstore
  opens its files with ``FILE_SHARE_DELETE`` (:func:`open_file`), closes a file before it
  replaces it, and reads whole files (``open()``) only for the length of a read, so a short,
  bounded retry gets through.
"""

from __future__ import annotations

import errno
import functools
import os
import threading
import time
from collections.abc import Callable
from typing import Any

__all__ = [
    "LOCK_OFFSET",
    "REPLACE_ATTEMPTS",
    "lock",
    "open_file",
    "pid_alive",
    "pread",
    "pwrite",
    "replace",
    "sync_dir",
    "try_lock",
    "unlock",
]

LOCK_OFFSET = 1 << 62
"""The byte every lock covers: beyond any file's content (see the module's docstring)."""

REPLACE_ATTEMPTS = 12
"""Tries of one ``os.replace`` on a sharing violation (about one second in all)."""

_LOCKFILE_FAIL_IMMEDIATELY = 0x1
_LOCKFILE_EXCLUSIVE_LOCK = 0x2
_ERROR_ACCESS_DENIED = 5
_ERROR_SHARING_VIOLATION = 32
_ERROR_LOCK_VIOLATION = 33
_ERROR_IO_PENDING = 997
_PROCESS_QUERY_LIMITED_INFORMATION = 0x1000
_STILL_ACTIVE = 259

# One seek + read at a time per process: the file position is shared by every user of an fd.
_seek_lock = threading.Lock()


@functools.cache
def _kernel32() -> Any:
    import ctypes

    k = ctypes.WinDLL("kernel32", use_last_error=True)  # type: ignore[attr-defined,unused-ignore]
    handle, dword, ptr = ctypes.c_void_p, ctypes.c_uint32, ctypes.c_void_p  # HANDLE is a pointer
    k.LockFileEx.argtypes = (handle, dword, dword, dword, dword, ptr)
    k.UnlockFileEx.argtypes = (handle, dword, dword, dword, ptr)
    k.CreateFileW.argtypes = (ctypes.c_wchar_p, dword, dword, ptr, dword, dword, handle)
    k.CreateFileW.restype = handle
    k.OpenProcess.argtypes = (dword, ctypes.c_int, dword)
    k.OpenProcess.restype = handle
    k.GetExitCodeProcess.argtypes = (handle, ptr)
    k.CloseHandle.argtypes = (handle,)
    return k


def _last_error() -> int:
    import ctypes

    return int(ctypes.get_last_error())  # type: ignore[attr-defined,unused-ignore]


def _handle(fd: int) -> int:
    import msvcrt

    return int(msvcrt.get_osfhandle(fd))  # type: ignore[attr-defined,unused-ignore]


def _overlapped() -> Any:
    """An ``OVERLAPPED`` naming :data:`LOCK_OFFSET` (the offset of a lock on a sync handle)."""
    import ctypes

    class _Overlapped(ctypes.Structure):
        _fields_ = (
            ("Internal", ctypes.c_size_t),
            ("InternalHigh", ctypes.c_size_t),
            ("Offset", ctypes.c_uint32),
            ("OffsetHigh", ctypes.c_uint32),
            ("hEvent", ctypes.c_void_p),
        )

    return _Overlapped(0, 0, LOCK_OFFSET & 0xFFFFFFFF, LOCK_OFFSET >> 32, None)


def _error(call: str, code: int) -> OSError:
    return OSError(errno.EIO, f"{call} failed (Windows error {code})")


def _lock_file(fd: int, flags: int) -> bool:
    import ctypes

    ov = _overlapped()
    if _kernel32().LockFileEx(_handle(fd), flags, 0, 1, 0, ctypes.byref(ov)):
        return True
    code = _last_error()
    if code in (_ERROR_LOCK_VIOLATION, _ERROR_IO_PENDING) and flags & _LOCKFILE_FAIL_IMMEDIATELY:
        return False
    raise _error("LockFileEx", code)


def try_lock(fd: int, *, shared: bool) -> bool:
    """Take a lock without waiting; False when another handle holds it.

    Raises:
        OSError: the lock cannot be taken for another reason.
    """
    flags = _LOCKFILE_FAIL_IMMEDIATELY | (0 if shared else _LOCKFILE_EXCLUSIVE_LOCK)
    return _lock_file(fd, flags)


def lock(fd: int) -> None:
    """Take an exclusive lock, waiting for it."""
    _lock_file(fd, _LOCKFILE_EXCLUSIVE_LOCK)


def unlock(fd: int) -> None:
    """Drop the lock this handle holds."""
    import ctypes

    ov = _overlapped()
    if not _kernel32().UnlockFileEx(_handle(fd), 0, 1, 0, ctypes.byref(ov)):
        raise _error("UnlockFileEx", _last_error())


_GENERIC_READ = 0x80000000
_GENERIC_WRITE = 0x40000000
_SHARE_ALL = 0x1 | 0x2 | 0x4  # FILE_SHARE_READ | FILE_SHARE_WRITE | FILE_SHARE_DELETE
_CREATE_NEW, _CREATE_ALWAYS, _OPEN_EXISTING, _OPEN_ALWAYS, _TRUNCATE_EXISTING = 1, 2, 3, 4, 5
_FILE_ATTRIBUTE_NORMAL = 0x80
_INVALID_HANDLE = -1
_ERRNO = {2: errno.ENOENT, 3: errno.ENOENT, 5: errno.EACCES, 32: errno.EACCES, 80: errno.EEXIST,
          183: errno.EEXIST}  # fmt: skip


def _disposition(flags: int) -> int:
    create, trunc = flags & os.O_CREAT, flags & os.O_TRUNC
    if create and flags & os.O_EXCL:
        return _CREATE_NEW
    if create:
        return _CREATE_ALWAYS if trunc else _OPEN_ALWAYS
    return _TRUNCATE_EXISTING if trunc else _OPEN_EXISTING


def open_file(path: str, flags: int, mode: int = 0o644) -> int:
    """``os.open`` with ``FILE_SHARE_DELETE``: a file this opens can still be replaced or
    renamed by another process (a compaction's new journal while a reader follows the old
    one). The fd is binary and not inherited; ``O_APPEND`` appends.

    Raises:
        OSError: as ``os.open`` would (``FileNotFoundError``, ``FileExistsError`` …).
    """
    import msvcrt

    access = {os.O_RDONLY: _GENERIC_READ, os.O_WRONLY: _GENERIC_WRITE}.get(
        flags & (os.O_RDONLY | os.O_WRONLY | os.O_RDWR), _GENERIC_READ | _GENERIC_WRITE
    )
    kernel32 = _kernel32()
    handle = kernel32.CreateFileW(
        path, access, _SHARE_ALL, None, _disposition(flags), _FILE_ATTRIBUTE_NORMAL, None
    )
    if not handle or handle in (_INVALID_HANDLE, (1 << 64) - 1, (1 << 32) - 1):
        code = _last_error()
        number = _ERRNO.get(code, errno.EIO)
        raise OSError(number, f"{os.strerror(number)} (Windows error {code})", path)
    crt = flags & (os.O_APPEND | os.O_RDONLY)
    try:
        return int(msvcrt.open_osfhandle(handle, crt))  # type: ignore[attr-defined,unused-ignore]
    except BaseException:
        kernel32.CloseHandle(handle)
        raise


def pread(fd: int, size: int, offset: int) -> bytes:
    """Read up to ``size`` bytes at ``offset``: seek + read, one at a time in this process
    (files opened for appending write at their end whatever the position)."""
    with _seek_lock:
        os.lseek(fd, offset, os.SEEK_SET)
        return os.read(fd, size)


def pwrite(fd: int, data: bytes, offset: int) -> int:
    """Write ``data`` at ``offset`` (seek + write; never on a file opened for appending)."""
    with _seek_lock:
        os.lseek(fd, offset, os.SEEK_SET)
        return os.write(fd, data)


def _sharing_violation(exc: PermissionError) -> bool:
    return getattr(exc, "winerror", None) in (None, _ERROR_ACCESS_DENIED, _ERROR_SHARING_VIOLATION)


def replace(
    src: str,
    dst: str,
    *,
    attempts: int = REPLACE_ATTEMPTS,
    sleep: Callable[[float], object] = time.sleep,
) -> None:
    """``os.replace``, tried again a few times (doubling waits, about a second in all) while
    another process holds ``dst`` (or ``src``) open.

    Raises:
        PermissionError: still refused after the last attempt.
        OSError: any other failure, at once.
    """
    delay = 0.002
    for attempt in range(attempts):
        try:
            os.replace(src, dst)
        except PermissionError as exc:
            if attempt == attempts - 1 or not _sharing_violation(exc):
                raise
        else:
            return
        sleep(delay)
        delay = min(delay * 2, 0.25)


def sync_dir(path: str) -> None:
    """Nothing: Windows has no directory fsync (NTFS journals the rename itself)."""


def pid_alive(pid: int) -> bool:
    """Whether process ``pid`` is running (``os.kill`` would terminate it on Windows)."""
    import ctypes

    kernel32 = _kernel32()
    handle = kernel32.OpenProcess(_PROCESS_QUERY_LIMITED_INFORMATION, False, pid)
    if not handle:
        return _last_error() == _ERROR_ACCESS_DENIED  # denied: it exists; else it is gone
    try:
        code = ctypes.c_ulong(0)
        if not kernel32.GetExitCodeProcess(handle, ctypes.byref(code)):
            return True
        return code.value == _STILL_ACTIVE
    finally:
        kernel32.CloseHandle(handle)
