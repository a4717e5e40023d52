"""The Windows and macOS implementations of airstore's platform seam, run on Linux: the logic
around the Windows calls with ``ctypes`` replaced by a model of ``LockFileEx``, the
replace-retry on a simulated sharing violation, seek + read, and the macOS durable sync."""

from __future__ import annotations

import ctypes
import errno
import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from airstore import _lock, _platform
from airstore._platform import darwin, posix, windows

_ERROR_LOCK_VIOLATION = 33


class FakeKernel32:
    """``LockFileEx``/``UnlockFileEx`` as Windows does them: locks belong to a handle, a
    locked range conflicts with any other handle's, shared ranges coexist."""

    def __init__(self) -> None:
        self.last_error = 0
        self.fail_with: int | None = None
        self.offsets: list[int] = []
        self.locks: dict[tuple[int, int], dict[int, bool]] = {}  # (file, offset) → {h: excl}
        self.processes: dict[int, int | None] = {}
        self.closed: list[int] = []

    @staticmethod
    def _file(handle: int) -> int:
        return os.fstat(handle).st_ino

    @staticmethod
    def _offset(ov: Any) -> int:
        o = ov._obj
        return int(o.Offset) | int(o.OffsetHigh) << 32

    def LockFileEx(self, h: int, flags: int, _r: int, lo: int, hi: int, ov: Any) -> int:  # noqa: N802
        assert (lo, hi) == (1, 0)
        offset = self._offset(ov)
        self.offsets.append(offset)
        if self.fail_with is not None:
            self.last_error = self.fail_with
            return 0
        holders = self.locks.setdefault((self._file(h), offset), {})
        exclusive = bool(flags & 0x2)
        others = {k: v for k, v in holders.items() if k != h}
        if others and (exclusive or any(others.values())):
            assert flags & 0x1, "a blocking lock would wait for ever in this model"
            self.last_error = _ERROR_LOCK_VIOLATION
            return 0
        holders[h] = exclusive
        return 1

    def UnlockFileEx(self, h: int, _r: int, lo: int, hi: int, ov: Any) -> int:  # noqa: N802
        holders = self.locks.get((self._file(h), self._offset(ov)), {})
        if holders.pop(h, None) is None:
            self.last_error = 158  # ERROR_NOT_LOCKED
            return 0
        return 1

    def OpenProcess(self, access: int, inherit: bool, pid: int) -> int:  # noqa: N802
        assert access == 0x1000
        assert not inherit
        if pid not in self.processes:
            self.last_error = 87  # ERROR_INVALID_PARAMETER: no such process
            return 0
        if self.processes[pid] is None:
            self.last_error = 5  # ERROR_ACCESS_DENIED: it exists
            return 0
        return 1000 + pid

    def GetExitCodeProcess(self, handle: int, code: Any) -> int:  # noqa: N802
        value = self.processes[handle - 1000]
        assert value is not None
        code._obj.value = value
        return 1

    def CloseHandle(self, handle: int) -> int:  # noqa: N802
        self.closed.append(handle)
        return 1


@pytest.fixture
def kernel32(monkeypatch: pytest.MonkeyPatch) -> FakeKernel32:
    fake = FakeKernel32()
    monkeypatch.setattr(windows, "_kernel32", lambda: fake)
    monkeypatch.setattr(windows, "_last_error", lambda: fake.last_error)
    monkeypatch.setattr(windows, "_handle", lambda fd: fd)
    return fake


@pytest.fixture
def two_fds(tmp_path: Path) -> Iterator[tuple[int, int]]:
    path = tmp_path / "f.lock"
    path.write_bytes(b"1234 airstore=3\n")
    a = os.open(path, os.O_RDWR)
    b = os.open(path, os.O_RDWR)
    yield a, b
    os.close(a)
    os.close(b)


def test_windows_locks_exclude_other_handles_and_share_shared_ones(
    kernel32: FakeKernel32, two_fds: tuple[int, int]
) -> None:
    a, b = two_fds
    assert windows.try_lock(a, shared=False)
    assert not windows.try_lock(b, shared=False)
    assert not windows.try_lock(b, shared=True)
    windows.unlock(a)
    assert windows.try_lock(b, shared=True)
    assert windows.try_lock(a, shared=True)
    windows.unlock(b)
    windows.unlock(a)
    windows.lock(b)
    assert not windows.try_lock(a, shared=True)
    windows.unlock(b)


def test_windows_locks_cover_one_byte_beyond_any_content(
    kernel32: FakeKernel32, two_fds: tuple[int, int]
) -> None:
    a, b = two_fds
    windows.try_lock(a, shared=False)
    assert kernel32.offsets == [1 << 62]
    assert os.pread(b, 64, 0) == b"1234 airstore=3\n"  # Windows would refuse a locked byte


def test_a_windows_lock_error_other_than_busy_is_an_oserror_naming_the_code(
    kernel32: FakeKernel32, two_fds: tuple[int, int]
) -> None:
    kernel32.fail_with = 6  # ERROR_INVALID_HANDLE
    with pytest.raises(OSError, match=r"LockFileEx failed \(Windows error 6\)"):
        windows.try_lock(two_fds[0], shared=True)
    kernel32.fail_with = None
    with pytest.raises(OSError, match="UnlockFileEx"):
        windows.unlock(two_fds[0])


def _use_windows_locks(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_platform, "try_lock", windows.try_lock)
    monkeypatch.setattr(_platform, "lock", windows.lock)
    monkeypatch.setattr(_platform, "unlock", windows.unlock)


def test_writers_take_their_slots_with_the_windows_locks(
    kernel32: FakeKernel32, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    _use_windows_locks(monkeypatch)
    first, second = _lock.DirLock(str(tmp_path)), _lock.DirLock(str(tmp_path))
    assert (first.acquire(), second.acquire()) == (0, 1)
    assert _lock.read_holder_pid(str(tmp_path / ".writer-0.lock")) in (os.getpid(), None)
    first.release()
    third = _lock.DirLock(str(tmp_path))
    assert third.acquire() == 0  # the slot a closed writer left
    second.release()
    third.release()


def _sharing_violation() -> PermissionError:
    exc = PermissionError(errno.EACCES, "The process cannot access the file")
    exc.winerror = 32  # type: ignore[attr-defined]
    return exc


def _refusing(times: int, make: Callable[[], OSError]) -> Callable[[str, str], None]:
    real = os.replace
    calls = {"n": 0}

    def replace(src: str, dst: str) -> None:
        calls["n"] += 1
        if calls["n"] <= times:
            raise make()
        real(src, dst)

    return replace


def test_replace_is_retried_through_a_passing_sharing_violation(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    src, dst = tmp_path / "new", tmp_path / "cur"
    src.write_bytes(b"new")
    dst.write_bytes(b"old")
    monkeypatch.setattr(os, "replace", _refusing(3, _sharing_violation))
    waits: list[float] = []
    windows.replace(str(src), str(dst), sleep=waits.append)
    assert dst.read_bytes() == b"new"
    assert waits == [0.002, 0.004, 0.008]


def test_replace_gives_up_after_its_bound_and_at_once_on_other_errors(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    src, dst = tmp_path / "new", tmp_path / "cur"
    src.write_bytes(b"new")
    monkeypatch.setattr(os, "replace", _refusing(10**6, _sharing_violation))
    waits: list[float] = []
    with pytest.raises(PermissionError):
        windows.replace(str(src), str(dst), sleep=waits.append)
    assert len(waits) == windows.REPLACE_ATTEMPTS - 1
    assert sum(waits) < 2.0  # bounded: about a second in all

    def denied() -> PermissionError:
        exc = PermissionError(errno.EACCES, "denied")
        exc.winerror = 1314  # type: ignore[attr-defined]  # a privilege, not a sharing violation
        return exc

    monkeypatch.setattr(os, "replace", _refusing(10**6, denied))
    waits.clear()
    with pytest.raises(PermissionError):
        windows.replace(str(src), str(dst), sleep=waits.append)
    assert waits == []


def test_seek_and_read_reads_at_the_offset_between_appends(tmp_path: Path) -> None:
    fd = os.open(tmp_path / "log", os.O_RDWR | os.O_CREAT | os.O_APPEND)
    try:
        os.write(fd, b"line one\n")
        assert windows.pread(fd, 4, 5) == b"one\n"
        os.write(fd, b"line two\n")  # an append writes at the end whatever the position
        assert windows.pread(fd, 100, 0) == b"line one\nline two\n"
        assert windows.pread(fd, 10, 100) == b""
    finally:
        os.close(fd)
    fd = os.open(tmp_path / "slot", os.O_RDWR | os.O_CREAT)
    try:
        assert windows.pwrite(fd, b"42\n", 0) == 3
        assert windows.pread(fd, 64, 0) == b"42\n"
    finally:
        os.close(fd)


def test_windows_tells_live_processes_from_gone_ones(kernel32: FakeKernel32) -> None:
    kernel32.processes = {10: 259, 11: 0, 12: None}  # running, exited, another user's
    assert windows.pid_alive(10)
    assert not windows.pid_alive(11)
    assert windows.pid_alive(12)
    assert not windows.pid_alive(13)
    assert kernel32.closed == [1010, 1011]


def test_windows_has_no_directory_sync(tmp_path: Path) -> None:
    windows.sync_dir(str(tmp_path))  # nothing to call, nothing to fail


def test_macos_sync_takes_f_fullfsync_when_the_file_system_accepts_it(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    calls: list[tuple[int, int]] = []

    class Fcntl:
        def fcntl(self, fd: int, cmd: int) -> int:
            calls.append((fd, cmd))
            return 0

    fsyncs: list[int] = []
    monkeypatch.setattr(posix, "fcntl", Fcntl())
    monkeypatch.setattr(os, "fsync", fsyncs.append)
    fd = os.open(tmp_path / "f", os.O_RDWR | os.O_CREAT)
    try:
        darwin.datasync(fd)
    finally:
        os.close(fd)
    assert calls == [(fd, darwin.F_FULLFSYNC)]
    assert fsyncs == []


def test_macos_sync_falls_back_to_fsync_when_the_file_system_refuses_f_fullfsync(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    real = os.fsync
    fsyncs: list[int] = []

    def fsync(fd: int) -> None:
        fsyncs.append(fd)
        real(fd)

    monkeypatch.setattr(os, "fsync", fsync)
    before = darwin.refusals
    fd = os.open(tmp_path / "f", os.O_RDWR | os.O_CREAT)
    try:
        darwin.datasync(fd)  # Linux refuses command 51 with EINVAL, as some macOS FSs do
    finally:
        os.close(fd)
    assert fsyncs == [fd]
    assert darwin.refusals == before + 1


def test_the_windows_structures_are_built_with_ctypes_on_any_os() -> None:
    ov = windows._overlapped()
    assert (ov.Offset, ov.OffsetHigh) == (0, 1 << 30)
    assert ctypes.sizeof(ov) >= 20


async def test_the_macos_shape_syncs_through_f_fullfsync_and_its_fallback(
    tmp_path: Path,
) -> None:
    from airstore import FileStore
    from tests.airstore.conftest import macos_shape

    before = darwin.refusals
    with macos_shape():
        assert not hasattr(os, "fdatasync")
        assert _platform.chosen["datasync"] == "F_FULLFSYNC"
        async with FileStore(tmp_path / "data", durability="sync") as store:
            await store.set("ns", "k", 1)
            await store.append("log", {"n": 1})
        async with FileStore(tmp_path / "data") as store:
            assert await store.get("ns", "k") == 1
    assert darwin.refusals >= before + 2  # the journal's and the log's syncs at least
    assert _platform.chosen["datasync"] == "fdatasync"


class FakeCreateFile:
    """``CreateFileW`` recording its arguments; a real fd stands for the handle."""

    def __init__(self, kernel32: FakeKernel32) -> None:
        self.kernel32 = kernel32
        self.calls: list[tuple[str, int, int, int]] = []
        self.fail_with: int | None = None

    def __call__(
        self, path: str, access: int, share: int, sa: None, disp: int, attrs: int, tmpl: None
    ) -> int:
        self.calls.append((path, access, share, disp))
        if self.fail_with is not None:
            self.kernel32.last_error = self.fail_with
            return (1 << 64) - 1  # INVALID_HANDLE_VALUE as a c_void_p restype gives it
        flags = {1: os.O_CREAT | os.O_EXCL, 2: os.O_CREAT | os.O_TRUNC, 3: 0, 4: os.O_CREAT}[disp]
        return os.open(path, os.O_RDWR | flags, 0o644)


def test_windows_opens_files_with_share_delete_as_os_open_would(
    kernel32: FakeKernel32, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    import sys
    import types

    create = FakeCreateFile(kernel32)
    kernel32.CreateFileW = create  # type: ignore[attr-defined]
    crt = types.ModuleType("msvcrt")
    crt_flags: list[int] = []

    def open_osfhandle(handle: int, flags: int) -> int:
        crt_flags.append(flags)
        return handle

    crt.open_osfhandle = open_osfhandle  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "msvcrt", crt)
    path = str(tmp_path / "j")
    fds = [
        windows.open_file(path, os.O_RDWR | os.O_CREAT | os.O_APPEND, 0o644),
        windows.open_file(path, os.O_RDONLY),
        windows.open_file(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644),
    ]
    for fd in fds:
        os.close(fd)
    read, write = 0x80000000, 0x40000000
    assert create.calls == [
        (path, read | write, 7, 4),  # OPEN_ALWAYS, every share mode: read, write, delete
        (path, read, 7, 3),  # OPEN_EXISTING
        (path, write, 7, 2),  # CREATE_ALWAYS
    ]
    assert crt_flags == [os.O_APPEND, os.O_RDONLY, 0]
    create.fail_with = 2  # ERROR_FILE_NOT_FOUND
    with pytest.raises(FileNotFoundError, match="Windows error 2"):
        windows.open_file(str(tmp_path / "missing"), os.O_RDONLY)
    create.fail_with = 80  # ERROR_FILE_EXISTS
    with pytest.raises(FileExistsError):
        windows.open_file(path, os.O_RDWR | os.O_CREAT | os.O_EXCL)
