"""FileStore behaviour beyond the shared contract: laziness, snapshots, journal, options."""

from __future__ import annotations

import asyncio
import enum
import os
import shutil
import signal
from collections import OrderedDict, defaultdict
from pathlib import Path

import orjson
import pytest

from airstore import (
    FileStore,
    InvalidArgumentError,
    InvalidKeyError,
    InvalidValueError,
    StorageIOError,
)
from airstore._compaction import JOIN_RECORDS
from airstore._persist import Persister
from tests.airstore.backends import FakeClock


def _crash_image(data: Path, dest: Path) -> Path:
    """Copy the files as they are right now: what a SIGKILL at this moment would leave."""
    shutil.copytree(data, dest, ignore=shutil.ignore_patterns(".lock"))
    return dest


async def _wait_for(condition: object, timeout: float = 10.0) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not condition():  # type: ignore[operator]
        assert loop.time() < deadline, "condition not met in time"
        await asyncio.sleep(0.01)


@pytest.mark.parametrize("durability", ["journal", "snapshot", "sync"])
async def test_value_mutated_after_set_is_persisted_as_it_was_set(
    tmp_path: Path, durability: str
) -> None:
    value: dict[str, object] = {"tags": ["a"]}
    async with FileStore(tmp_path, durability=durability) as store:  # type: ignore[arg-type]
        await store.set("ns", "k", value)
        value["tags"] = {"not", "json"}  # the caller breaks the rule; the store must not
    async with FileStore(tmp_path) as store:
        assert await store.get("ns", "k") == {"tags": ["a"]}


class _Tag(str):
    pass


class _Level(enum.IntEnum):
    HIGH = 3


@pytest.mark.parametrize("ttl", [None, 3600.0])
async def test_values_of_subclasses_of_json_types_are_stored_as_those_types(
    tmp_path: Path, ttl: float | None
) -> None:
    """The record ``[key, value]`` is encoded in one call that refuses subclasses of str, int,
    dict and list (so a str subclass as a key stays an invalid key); a value holding one takes
    the checked way and is stored as orjson writes it, in the journal and in the snapshot."""
    values: dict[str, object] = {
        "ordered": OrderedDict(b=1, a=[2]),
        "default": defaultdict(list, x=[_Tag("t")]),
        "tag": _Tag("plain"),
        "level": _Level.HIGH,
        "flag": True,
        "nested": {"n": [None, _Tag("nul"), {"k": OrderedDict(z=0)}]},
    }
    plain = orjson.loads(orjson.dumps(values))
    async with FileStore(tmp_path, flush_interval=3600) as store:
        for key, value in values.items():
            await store.set("ns", key, value, ttl=ttl)  # type: ignore[arg-type]
        with pytest.raises(InvalidKeyError):
            await store.set("ns", _Tag("k"), 1)
        await asyncio.sleep(0)
        await asyncio.sleep(0)
    async with FileStore(tmp_path, read_only=True) as reader:  # from the snapshot
        assert dict(await reader.entries("ns")) == plain
    async with FileStore(tmp_path, flush_interval=3600) as store:
        await store.set("ns", "again", OrderedDict(n=None))
        await asyncio.sleep(0)
        await asyncio.sleep(0)
        async with FileStore(tmp_path, read_only=True) as reader:  # from the journal
            assert await reader.get("ns", "again") == {"n": None}


async def test_append_and_query_never_touch_the_snapshot(tmp_path: Path) -> None:
    (tmp_path / "meter.json").write_bytes(b"{ not json, and large" + b" " * 100_000)
    async with FileStore(tmp_path) as store:
        await store.append("meter", {"i": 1})
        assert [e["i"] for e in await store.query("meter")] == [1]
        assert store.recovery == []  # the unparseable snapshot was never read
    assert (tmp_path / "meter.json").read_bytes().startswith(b"{ not json")


async def test_journal_keeps_writes_between_snapshots_and_expiry_survives(tmp_path: Path) -> None:
    clock = FakeClock()
    store = FileStore(tmp_path / "data", clock=clock, flush_interval=3600)
    await store.init()
    try:
        await store.set("ns", "keep", 1)
        await store.set("ns", "brief", 2, ttl=5)
        await store.delete("ns", "keep")
        await store.set("ns", "keep", 3)
        await asyncio.sleep(0)  # end of the loop turn: the journal lines are written
        image = _crash_image(tmp_path / "data", tmp_path / "image")
        assert not (image / "ns.json").exists()  # no snapshot yet: all of it is journal
    finally:
        await store.close()
    async with FileStore(image, clock=clock) as crashed:
        assert await crashed.entries("ns") == [("brief", 2), ("keep", 3)]
    clock.advance(6)
    async with FileStore(image, clock=clock) as crashed:
        assert await crashed.entries("ns") == [("keep", 3)]


@pytest.mark.parametrize("count", [0, 1, JOIN_RECORDS, JOIN_RECORDS + 1, 2 * JOIN_RECORDS + 5])
async def test_a_snapshot_joined_in_pieces_is_one_json_document_holding_every_key(
    tmp_path: Path, count: int
) -> None:
    want: dict[str, object] = {f"k{i}": {"v": i, "s": "x" * (i % 7)} for i in range(count)}
    async with FileStore(tmp_path) as store:
        await store.set("ns", "gone", 0)
        await store.delete("ns", "gone")
        for key, value in want.items():
            await store.set("ns", key, value)
        await store.flush()  # a snapshot of the records kept at set
    doc = orjson.loads((tmp_path / "ns.json").read_bytes())
    assert {item[0]: item[1] for item in doc["items"]} == want
    assert len(doc["items"]) == count
    async with FileStore(tmp_path) as store:
        await store.set("ns", "new", "one")  # loaded values are encoded at this snapshot
        await store.flush()
    want["new"] = "one"
    doc = orjson.loads((tmp_path / "ns.json").read_bytes())
    assert {item[0]: item[1] for item in doc["items"]} == want
    assert len(doc["items"]) == count + 1
    async with FileStore(tmp_path, read_only=True) as reader:
        assert dict(await reader.entries("ns")) == want
        assert reader.recovery == []


async def test_periodic_flush_snapshots_only_dirty_namespaces_and_compacts(tmp_path: Path) -> None:
    async with FileStore(tmp_path, flush_interval=0.05) as store:
        await store.set("quiet", "k", 1)
        await store.set("busy", "k", 1)
        await store.flush()
        quiet_mtime = (tmp_path / "quiet.json").stat().st_mtime_ns
        await store.set("busy", "k2", 2)
        await _wait_for(lambda: b"k2" in (tmp_path / "busy.json").read_bytes())
        assert (tmp_path / "quiet.json").stat().st_mtime_ns == quiet_mtime
        journal = tmp_path / "busy.journal.jsonl"
        await _wait_for(lambda: journal.read_bytes().count(b"\n") == 1)  # the header alone


async def test_read_only_store_of_a_missing_directory_is_empty(tmp_path: Path) -> None:
    async with FileStore(tmp_path / "absent", read_only=True) as reader:
        assert await reader.get("ns", "k") is None
        assert await reader.query("log") == []
        assert await reader.list("ns") == []
    assert not (tmp_path / "absent").exists()


async def test_query_sees_appends_of_the_current_loop_turn(tmp_path: Path) -> None:
    async with FileStore(tmp_path) as store:
        for i in range(3):
            await store.append("log", {"i": i})
        assert [e["i"] for e in await store.query("log")] == [2, 1, 0]


@pytest.mark.parametrize(
    "options",
    [
        {"durability": "fast"},
        {"flush_interval": 0},
        {"max_log_bytes": 0},
        {"max_log_segments": -1},
        {"default_ttl": -5},
    ],
)
def test_bad_options_are_rejected(tmp_path: Path, options: dict[str, object]) -> None:
    with pytest.raises(InvalidArgumentError):
        FileStore(tmp_path, **options)  # type: ignore[arg-type]


def test_a_path_holding_a_nul_byte_is_an_invalid_argument(tmp_path: Path) -> None:
    with pytest.raises(InvalidArgumentError, match="NUL"):
        FileStore(f"{tmp_path}/a\0b")  # was a bare ValueError from os at init()


async def test_sigterm_handler_is_installed_only_when_nobody_else_handles_it(
    tmp_path: Path,
) -> None:
    assert signal.getsignal(signal.SIGTERM) is signal.SIG_DFL
    async with FileStore(tmp_path / "a"):
        assert signal.getsignal(signal.SIGTERM) is not signal.SIG_DFL  # ours, via the loop
    assert signal.getsignal(signal.SIGTERM) is signal.SIG_DFL  # removed again on close

    def app_handler(signum: int, frame: object) -> None:
        raise AssertionError("not called in this test")

    previous = signal.signal(signal.SIGTERM, app_handler)
    try:
        async with FileStore(tmp_path / "b"):
            assert signal.getsignal(signal.SIGTERM) is app_handler  # left alone
        async with FileStore(tmp_path / "c", handle_sigterm=False):
            assert signal.getsignal(signal.SIGTERM) is app_handler
    finally:
        signal.signal(signal.SIGTERM, previous)


async def test_close_failing_on_a_mutated_value_keeps_the_store_open_and_flushing(
    tmp_path: Path,
) -> None:
    async with FileStore(tmp_path) as store:
        await store.set("ns", "k", {"a": 1})
    store = FileStore(tmp_path, durability="snapshot", flush_interval=0.05)
    await store.init()
    value = await store.get("ns", "k")  # loaded from disk: the cached object itself
    assert isinstance(value, dict)
    value["bad"] = {1, 2}  # mutated into something that is not JSON
    await store.set("ns", "other", 1)
    with pytest.raises(InvalidValueError):
        await store.close()
    del value["bad"]
    snapshot = tmp_path / "ns.json"
    for _ in range(400):  # background snapshots go on after the failed close (bounded wait)
        if b'"other"' in snapshot.read_bytes():
            break
        await asyncio.sleep(0.025)
    else:
        raise AssertionError("no background snapshot after the failed close()")
    await store.close()


def _temp_files(path: Path) -> list[str]:
    return [p.name for p in path.iterdir() if ".tmp-" in p.name]


async def _big_namespace(store: FileStore) -> None:
    """Enough keys that writing their snapshot takes a while (~20 MB)."""
    for i in range(150_000):
        await store.set("kv", f"k{i}", {"v": i, "pad": "x" * 100})


async def test_a_compaction_cancelled_while_its_snapshot_is_written_leaves_no_temp_file(
    tmp_path: Path,
) -> None:
    async with FileStore(tmp_path, handle_sigterm=False) as store:
        await _big_namespace(store)
        flush = asyncio.create_task(store.flush())
        await _wait_for(lambda: _temp_files(tmp_path), timeout=30)
        flush.cancel()
        with pytest.raises(asyncio.CancelledError):
            await flush
        assert _temp_files(tmp_path) == []
        assert await store.get("kv", "k149999") == {"v": 149999, "pad": "x" * 100}
    async with FileStore(tmp_path, read_only=True) as reader:
        assert await reader.get("kv", "k0") == {"v": 0, "pad": "x" * 100}


async def test_a_second_store_opened_in_the_same_process_leaves_the_first_ones_writes_alone(
    tmp_path: Path,
) -> None:
    """Opening a writer clears dead writers' temp files; one of a live store of the same
    process is not dead (its flush failed with ENOENT when the second store removed it)."""
    first = FileStore(tmp_path, handle_sigterm=False)
    await first.init()
    try:
        await _big_namespace(first)
        flush = asyncio.create_task(first.flush())
        await _wait_for(lambda: _temp_files(tmp_path), timeout=30)
        async with FileStore(tmp_path, handle_sigterm=False) as second:
            await flush  # raised StorageIOError: No such file or directory
            assert await second.get("kv", "k7") == {"v": 7, "pad": "x" * 100}
    finally:
        await first.close()
    assert _temp_files(tmp_path) == []


async def test_a_namespace_whose_name_holds_tmp_is_listed_by_check(tmp_path: Path) -> None:
    """Only a name that ends like a temp file is one (``check`` skipped every ``.tmp-``)."""
    async with FileStore(tmp_path) as store:
        await store.set("jobs.tmp-1", "k", 1)
        await store.append("jobs.tmp-1", {"a": 1})
        await store.flush()
        report = await store.check()
    assert [(n.namespace, n.keys) for n in report.namespaces] == [("jobs.tmp-1", 1)]


def _plant_stale_temp_file(root: Path) -> Path:
    """A snapshot temp file named with this process's pid that it never named."""
    stale = root / f"kv.json.tmp-{os.getpid()}-7"
    stale.write_bytes(b"x" * 1000)
    return stale


async def test_a_temp_file_an_earlier_process_with_this_pid_left_is_removed(
    tmp_path: Path,
) -> None:
    """In a container every run is PID 1: a crash's leftover named with our pid is not ours."""
    async with FileStore(tmp_path, handle_sigterm=False) as store:
        await store.set("kv", "k", 1)
    stale = _plant_stale_temp_file(tmp_path)
    async with FileStore(tmp_path, handle_sigterm=False) as store:
        assert await store.get("kv", "k") == 1
    assert _temp_files(tmp_path) == []
    assert stale.name not in _temp_files(tmp_path)


async def test_a_close_whose_last_flush_the_disk_refuses_keeps_refusing_writes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """close() raises and the store stays open, as documented; writes stay refused while the
    disk refuses them (close() used to turn them back on: acknowledged, then lost)."""
    real = Persister.flush_now

    def refused(self: Persister) -> None:
        self.write_failed(OSError(28, "No space left on device"))
        raise StorageIOError("final flush failed: [Errno 28] No space left on device")

    store = FileStore(tmp_path, handle_sigterm=False)
    await store.init()
    await store.set("kv", "k", 1)
    monkeypatch.setattr(Persister, "flush_now", refused)
    with pytest.raises(StorageIOError):
        await store.close()
    with pytest.raises(StorageIOError, match="refuses writes"):
        await store.set("kv", "later", 2)
    monkeypatch.setattr(Persister, "flush_now", real)
    assert await store.get("kv", "k") == 1  # still open
    for _ in range(100):  # until the disk probe finds it takes writes again
        try:
            await store.set("kv", "later", 2)
            break
        except StorageIOError:
            await asyncio.sleep(0.1)
    await store.close()
    async with FileStore(tmp_path, read_only=True) as reader:
        assert await reader.get("kv", "later") == 2
