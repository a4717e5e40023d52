"""Several writers on one data directory: processes of one or several servers, all at once."""

from __future__ import annotations

import asyncio
import fcntl
import os
import subprocess
import sys
from pathlib import Path

import pytest

from airstore import FileStore, StoreLockedError, _migrate

WORKER = Path(__file__).with_name("multi_writer.py")

# Every test runs twice: Linux's own platform calls, then macOS's (tests/airstore/conftest.py).
pytestmark = pytest.mark.usefixtures("platform_shape")


@pytest.fixture(params=["local", "exfat"])
def tmp_path(request: pytest.FixtureRequest, tmp_path: Path) -> Path:
    """Every test here runs in a local directory and on a real exFAT volume (case-insensitive,
    FUSE; tests/airstore/exfat.py)."""
    if request.param == "local":
        return tmp_path
    volume: Path = request.getfixturevalue("exfat_volume")
    path = volume / f"{tmp_path.parent.name}-{tmp_path.name}"
    path.mkdir()
    return path


def _run_writers(data: Path, writers: int, count: int, durability: str) -> None:
    procs = [
        subprocess.Popen(
            [sys.executable, str(WORKER), str(data), str(w), str(count), durability],
            stderr=subprocess.PIPE,
        )
        for w in range(writers)
    ]
    for proc in procs:
        _, err = proc.communicate(timeout=120)
        assert proc.returncode == 0, err.decode()


def _lock_is_held(lock_path: str) -> bool:
    """Whether someone holds the journal's lock (probed through a file description of our own)."""
    probe = os.open(lock_path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(probe, fcntl.LOCK_EX | fcntl.LOCK_NB)
        fcntl.flock(probe, fcntl.LOCK_UN)
        return False
    except BlockingIOError:
        return True
    finally:
        os.close(probe)


@pytest.mark.parametrize("durability", ["journal", "snapshot", "sync"])
async def test_four_writer_processes_share_one_directory_and_lose_nothing(
    tmp_path: Path, durability: str
) -> None:
    count = 150 if durability == "sync" else 400
    _run_writers(tmp_path, 4, count, durability)
    async with FileStore(tmp_path, read_only=True) as reader:
        assert await reader.get("shared", "hits") == 4 * count  # no increment lost
        keys = await reader.list("ns")
        assert len(keys) == 4 * count
        entries = await reader.query("log", limit=10**6)
        assert sorted((e["w"], e["i"]) for e in entries) == [
            (w, i) for w in range(4) for i in range(count)
        ]
        stamps = [e["_ts"] for e in entries]
        assert stamps == sorted(stamps, reverse=True)  # merged newest first
        for w in range(4):  # each writer's own order survives the merge
            mine = [e["i"] for e in entries if e["w"] == w]
            assert mine == sorted(mine, reverse=True)
    async with FileStore(tmp_path) as store:  # a later writer continues where they left
        assert await store.incr("shared", "hits") == 4 * count + 1
    assert (
        sorted(n for n in os.listdir(tmp_path) if n.startswith("log.log"))
        == [
            "log.log.jsonl",
            "log.log.s1.jsonl",
            "log.log.s2.jsonl",
            "log.log.s3.jsonl",
        ][: len([n for n in os.listdir(tmp_path) if n.startswith("log.log")])]
    )


async def test_two_writers_in_one_process_see_each_other_from_the_next_loop_turn(
    tmp_path: Path,
) -> None:
    async with FileStore(tmp_path) as a, FileStore(tmp_path) as b:
        await a.set("ns", "k", "from a")
        await b.append("log", {"by": "b"})
        await a.append("log", {"by": "a"})
        await asyncio.sleep(0)  # a's turn ends: its records are committed
        assert await b.get("ns", "k") == "from a"
        await b.set("ns", "k", "from b")
        await asyncio.sleep(0)
        assert await a.get("ns", "k") == "from b"  # the last committed write wins
        assert [e["by"] for e in await a.query("log")] == ["a", "b"]
        assert [e["by"] for e in await b.query("log")] == ["a", "b"]
        assert await a.incr("ns", "n") == 1
        assert await b.incr("ns", "n") == 2  # incr reads under the lock: no turn needed
        assert await a.delete("ns", "k") is True
        await asyncio.sleep(0)
        assert await b.get("ns", "k") is None
        assert await b.list("ns") == ["n"]


async def test_same_turn_writes_of_two_writers_end_in_commit_order(tmp_path: Path) -> None:
    async with FileStore(tmp_path) as a, FileStore(tmp_path) as b:
        for i in range(50):
            await a.set("ns", f"k{i % 5}", ["a", i])
            await b.set("ns", f"k{i % 5}", ["b", i])
        await asyncio.sleep(0)
        await asyncio.sleep(0)
        seen_a = await a.entries("ns")
        seen_b = await b.entries("ns")
        assert seen_a == seen_b  # both converge on the journal's order
    async with FileStore(tmp_path, read_only=True) as reader:
        assert await reader.entries("ns") == seen_a


async def test_a_writer_of_the_previous_format_excludes_this_one(tmp_path: Path) -> None:
    # The previous release took an exclusive flock on .lock and wrote its pid there.
    fd = os.open(tmp_path / ".lock", os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        os.write(fd, b"%d\n" % os.getpid())
        with pytest.raises(StoreLockedError) as info:
            await FileStore(tmp_path).init()
        assert info.value.pid == os.getpid()
        async with FileStore(tmp_path, read_only=True) as reader:  # readers take no lock
            assert await reader.get("ns", "k") is None
    finally:
        os.close(fd)
    async with FileStore(tmp_path) as store:
        await store.set("ns", "k", 1)


async def test_an_exclusive_hold_without_a_pid_is_refused_after_the_wait(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # .lock held exclusively with no pid to name (air serve's refusal with one:
    # tests/aircore/test_serve_failures.py): the writer waits airstore's WAIT for a move by
    # another writer of this release to end, then refuses; the wait is shortened here
    monkeypatch.setattr(_migrate, "WAIT", 0.3)
    async with FileStore(tmp_path) as store:  # a directory of this format
        await store.set("ns", "k", 0)
    fd = os.open(tmp_path / ".lock", os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        with pytest.raises(StoreLockedError, match="held exclusively by another process") as info:
            await FileStore(tmp_path).init()
        assert "older air release" in str(info.value)
        assert info.value.pid is None
    finally:
        os.close(fd)
    async with FileStore(tmp_path) as store:  # the holder gone, the data is there
        assert await store.get("ns", "k") == 0


_FORMAT_2_WRITER = """
import fcntl, os, sys, time
# What a format-2 writer holds (the release before format 3): .lock shared, the lowest free
# slot exclusively with its bare pid inside.
root = sys.argv[1]
lock = os.open(os.path.join(root, ".lock"), os.O_RDWR | os.O_CREAT, 0o644)
fcntl.flock(lock, fcntl.LOCK_SH)
slot = os.open(os.path.join(root, ".writer-0.lock"), os.O_RDWR | os.O_CREAT, 0o644)
fcntl.flock(slot, fcntl.LOCK_EX)
os.ftruncate(slot, 0)
os.pwrite(slot, b"%d\\n" % os.getpid(), 0)
print("holding", flush=True)
sys.stdin.read()
"""


def _start_format_2_writer(root: Path) -> subprocess.Popen[bytes]:
    proc = subprocess.Popen(
        [sys.executable, "-c", _FORMAT_2_WRITER, str(root)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
    )
    assert proc.stdout is not None
    assert proc.stdout.readline() == b"holding\n"
    return proc


async def test_a_live_writer_of_format_2_keeps_this_release_from_writing_beside_it(
    tmp_path: Path,
) -> None:
    """A format-2 writer takes the same locks as this release, but this release moves a
    namespace's journal to format 3 at its first append, which the earlier writer cannot read
    (it would fail on the namespace and lose what it had acknowledged): a writer of this
    release refuses to open beside a live one, names its pid, and opens once it has gone. A
    dead one's slot (its bare pid left behind) does not count; readers take no lock."""
    async with FileStore(tmp_path) as store:
        await store.set("ns", "k", 1)
    earlier = await asyncio.to_thread(_start_format_2_writer, tmp_path)
    try:
        with pytest.raises(StoreLockedError) as info:
            await FileStore(tmp_path).init()
        assert info.value.pid == earlier.pid
        assert "earlier air release" in str(info.value)
        async with FileStore(tmp_path, read_only=True) as reader:
            assert await reader.get("ns", "k") == 1
    finally:
        await asyncio.to_thread(earlier.communicate, b"", 10)
    assert (tmp_path / ".writer-0.lock").read_bytes() == b"%d\n" % earlier.pid  # left behind
    async with FileStore(tmp_path) as store:
        assert await store.incr("ns", "k") == 2
        async with FileStore(tmp_path) as second:  # two writers of this release: no refusal
            assert await second.get("ns", "k") == 2


async def test_a_loader_that_keeps_losing_the_race_to_compactions_still_opens(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Seen with four SIGKILLed writers on a loaded machine: every unlocked attempt to load a
    namespace found it compacted between the snapshot read and the journal read. The last
    attempt holds the journal's lock, under which no compaction runs."""
    from airstore import _journal

    async with FileStore(tmp_path) as writer:
        for i in range(20):
            await writer.set("ns", f"k{i}", i)
    original = _journal.Journal.read_from
    unlocked_tries = 0

    def read_from(self: _journal.Journal, position: int) -> bytes | None:
        nonlocal unlocked_tries
        if _lock_is_held(self.lock_path):
            return original(self, position)  # we hold it: nothing can move
        unlocked_tries += 1
        return None  # as if another writer compacted between our two reads

    monkeypatch.setattr(_journal.Journal, "read_from", read_from)
    async with FileStore(tmp_path) as loader:
        assert await loader.get("ns", "k19") == 19
        assert len(await loader.list("ns")) == 20
    assert unlocked_tries >= 2


async def test_a_reload_after_other_writers_compacted_still_succeeds_when_it_keeps_losing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Seen in CI with four writers in ``snapshot`` mode (each compacts at every flush): a
    writer that had missed records reloads the namespace in the middle of an ``incr``, and every
    unlocked try found it compacted again between its two reads; the writer died with
    ``CorruptDataError``. The reload's last try holds the journal's lock, like a first load's."""
    from airstore import _journal

    async with FileStore(tmp_path) as loader, FileStore(tmp_path) as other:
        await loader.set("ns", "mine", 1)
        await loader.flush()
        for i in range(20):
            await other.set("ns", f"k{i}", i)
            if i in (9, 19):  # two snapshots: the loader's journal file is two behind, so
                await other.flush()  # records it never saw lie before the current file
        await asyncio.sleep(0)  # a new loop turn: the loader looks at the journal again
        original = _journal.Journal.read_from
        unlocked_tries = 0

        def read_from(self: _journal.Journal, position: int) -> bytes | None:
            nonlocal unlocked_tries
            if _lock_is_held(self.lock_path):
                return original(self, position)  # under the lock nothing can move
            unlocked_tries += 1
            return None  # as if another writer compacted between our two reads

        monkeypatch.setattr(_journal.Journal, "read_from", read_from)
        assert await loader.incr("ns", "n") == 1
        assert await loader.get("ns", "k19") == 19
        assert await loader.get("ns", "mine") == 1
        assert unlocked_tries >= 2


async def test_a_writer_repairs_the_torn_logs_of_slots_whose_writers_died(tmp_path: Path) -> None:
    """A writer killed mid-line leaves its slot's log torn; the next writer to open the
    directory cuts it back, whatever slot it takes itself (a live writer's slot is left
    alone)."""
    from airstore._recovery import check_directory

    async with FileStore(tmp_path) as first, FileStore(tmp_path) as second:
        await first.append("log", {"by": 0})
        await second.append("log", {"by": 1})
    dead = tmp_path / "log.log.s1.jsonl"
    assert dead.exists()
    with dead.open("ab") as fh:
        fh.write(b'{"by":1,"_ts":1,"half')  # the killed writer's unfinished line
    assert not (await check_directory(str(tmp_path))).ok
    async with FileStore(tmp_path) as store:  # takes slot 0: slot 1's writer is dead
        assert [(f.kind, Path(f.path).name) for f in store.recovery] == [
            ("torn_tail", "log.log.s1.jsonl")
        ]
        assert sorted(e["by"] for e in await store.query("log")) == [0, 1]
    assert (await check_directory(str(tmp_path))).ok
    async with FileStore(tmp_path) as live:  # a live writer holds slot 0 …
        await live.append("log", {"by": 2})
        await asyncio.sleep(0)  # its line is written at the end of this loop turn
        with (tmp_path / "log.log.jsonl").open("ab") as fh:
            fh.write(b'{"by":"torn')  # … its own torn line is its own business
        async with FileStore(tmp_path) as other:  # slot 1
            assert other.recovery == []
