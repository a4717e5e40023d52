"""FileStore on damaged files, beside other processes, and on a failing disk."""

from __future__ import annotations

import asyncio
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import orjson
import pytest

from airstore import FileStore, ReadOnlyStoreError
from airstore._recovery import check_directory

PROC = Path(__file__).with_name("store_proc.py")


async def _filled(data: Path, **options: object) -> None:
    async with FileStore(data, **options) as store:  # type: ignore[arg-type]
        for i in range(5):
            await store.set("ns", f"k{i}", i)
            await store.append("log", {"i": i})


def _append(path: Path, data: bytes) -> None:
    with open(path, "ab") as fh:
        fh.write(data)


def _read(path: Path) -> bytes:
    return path.read_bytes()


def _names(directory: Path, pattern: str) -> list[str]:
    return sorted(p.name for p in directory.glob(pattern))


class Proc:
    """A FileStore in a child process (tests/airstore/store_proc.py)."""

    def __init__(self, data: Path, durability: str = "journal") -> None:
        self.p = subprocess.Popen(
            [sys.executable, str(PROC), str(data), durability],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        self.first = self.read()

    def read(self) -> str:
        assert self.p.stdout is not None
        return self.p.stdout.readline().strip()

    def do(self, command: str) -> str:
        assert self.p.stdin is not None
        self.p.stdin.write(command + "\n")
        self.p.stdin.flush()
        return self.read()

    def finish(self) -> int:
        for stream in (self.p.stdin, self.p.stdout):
            if stream is not None:
                stream.close()
        return self.p.wait(timeout=30)


@pytest.fixture
def procs() -> Iterator[list[Proc]]:
    started: list[Proc] = []
    yield started
    for proc in started:
        if proc.p.poll() is None:
            proc.p.kill()
        proc.finish()


async def test_torn_log_tail_is_cut_back_and_reported(tmp_path: Path) -> None:
    data = tmp_path / "data"
    await _filled(data)
    log = data / "log.log.jsonl"
    _append(log, b'{"i": 99, "unfini')
    assert [f.kind for f in (await check_directory(str(data))).findings] == ["torn_tail"]
    async with FileStore(data) as store:
        assert [e["i"] for e in await store.query("log")] == [4, 3, 2, 1, 0]
        assert [f.kind for f in store.recovery] == ["torn_tail"]
        await store.append("log", {"i": 5})
    assert log.read_bytes().endswith(b'"i":5,"_ts":' + log.read_bytes().split(b'"_ts":')[-1])
    assert (await check_directory(str(data))).ok


async def test_torn_journal_tail_keeps_every_whole_record(
    tmp_path: Path, procs: list[Proc]
) -> None:
    writer = Proc(tmp_path)
    procs.append(writer)
    for i in range(5):
        assert writer.do(f"set k{i} {i}") == "ok"
    assert writer.do("flush") == "ok"  # snapshot + compacted journal
    assert writer.do("set late 7") == "ok"  # only in the journal
    writer.p.kill()
    writer.p.wait(timeout=30)
    journal = tmp_path / "ns.journal.jsonl"
    assert b"late" in _read(journal)
    _append(journal, b'[99,"s","torn",')
    async with FileStore(tmp_path) as store:
        assert await store.get("ns", "late") == 7
        assert await store.get("ns", "torn") is None
        assert await store.list("ns") == ["k0", "k1", "k2", "k3", "k4", "late"]
        assert [f.kind for f in store.recovery] == ["torn_tail"]
    assert (await check_directory(str(tmp_path))).ok


async def test_garbage_mid_log_is_skipped_counted_with_its_line_number(tmp_path: Path) -> None:
    data = tmp_path / "data"
    await _filled(data)
    log = data / "log.log.jsonl"
    lines = log.read_bytes().split(b"\n")
    lines.insert(2, b"\x00\xffgarbage{{")
    log.write_bytes(b"\n".join(lines))
    report = await check_directory(str(data))
    assert [(f.kind, f.line) for f in report.findings] == [("corrupt_line", 3)]
    async with FileStore(data) as store:
        assert [e["i"] for e in await store.query("log")] == [4, 3, 2, 1, 0]
        assert [(f.kind, f.line) for f in store.recovery] == [("corrupt_line", 3)]
    async with FileStore(data, read_only=True) as reader:
        assert [e["i"] for e in await reader.query("log", limit=2, offset=2)] == [2, 1]


@pytest.mark.parametrize(
    "damage", [pytest.param(lambda b: b[: len(b) // 2], id="truncated"), lambda b: b"\x07junk"]
)
async def test_unparseable_snapshot_is_kept_aside_never_replaced(
    tmp_path: Path, damage: object
) -> None:
    data = tmp_path / "data"
    await _filled(data)
    snapshot = data / "ns.json"
    broken = damage(snapshot.read_bytes())  # type: ignore[operator]
    snapshot.write_bytes(broken)
    assert [f.kind for f in (await check_directory(str(data))).findings] == ["corrupt_snapshot"]
    async with FileStore(data, read_only=True) as reader:
        assert await reader.get("ns", "k1") is None
        assert [f.kind for f in reader.recovery] == ["corrupt_snapshot"]
    assert snapshot.read_bytes() == broken  # a reader never moves files
    async with FileStore(data) as store:
        assert await store.get("ns", "k1") is None
        (finding,) = store.recovery
        assert finding.kind == "corrupt_snapshot"
        aside = Path(finding.path)
        assert aside.name.startswith("ns.json.corrupt-")
        assert _read(aside) == broken
        await store.set("ns", "new", 1)
    assert [f.kind for f in (await check_directory(str(data))).findings] == ["snapshot_kept_aside"]
    async with FileStore(data) as store:
        assert await store.get("ns", "new") == 1


async def test_lock_of_a_killed_writer_is_released(tmp_path: Path, procs: list[Proc]) -> None:
    holder = Proc(tmp_path)
    procs.append(holder)
    holder.p.kill()
    holder.p.wait(timeout=30)
    async with FileStore(tmp_path) as store:
        await store.set("ns", "k", 1)


async def test_read_only_reader_sees_what_a_writer_process_writes(
    tmp_path: Path, procs: list[Proc]
) -> None:
    writer = Proc(tmp_path)
    procs.append(writer)
    assert writer.do("set a 1") == "ok"
    assert writer.do("append 1") == "ok"
    async with FileStore(tmp_path, read_only=True) as reader:
        assert await reader.get("ns", "a") == 1
        assert [e["i"] for e in await reader.query("log")] == [1]
        assert writer.do("set b 2") == "ok"
        assert writer.do("append 2") == "ok"
        assert await reader.get("ns", "b") == 2  # journal lines re-read
        assert [e["i"] for e in await reader.query("log")] == [2, 1]
        assert writer.do("flush") == "ok"  # snapshot replaced, journal compacted
        assert writer.do("set c 3") == "ok"
        assert await reader.list("ns") == ["a", "b", "c"]
        with pytest.raises(ReadOnlyStoreError):
            await reader.set("ns", "x", 1)
        with pytest.raises(ReadOnlyStoreError):
            await reader.append("log", {"x": 1})
    assert writer.do("close") == "ok"


async def test_sigterm_flushes_before_the_process_ends(tmp_path: Path, procs: list[Proc]) -> None:
    writer = Proc(tmp_path, durability="snapshot")  # KV reaches disk only by a flush
    procs.append(writer)
    assert writer.do("set a 1") == "ok"
    writer.p.send_signal(signal.SIGTERM)
    assert writer.p.wait(timeout=30) == -signal.SIGTERM
    async with FileStore(tmp_path) as store:
        assert await store.get("ns", "a") == 1


async def test_interpreter_exit_flushes_an_unclosed_store(
    tmp_path: Path, procs: list[Proc]
) -> None:
    writer = Proc(tmp_path, durability="snapshot")
    procs.append(writer)
    assert writer.do("set a 1") == "ok"
    assert writer.do("leave") == "ok"
    assert writer.finish() == 0
    async with FileStore(tmp_path) as store:
        assert await store.get("ns", "a") == 1


async def test_log_rotates_into_segments_and_retention_keeps_the_newest(tmp_path: Path) -> None:
    async with FileStore(
        tmp_path, max_log_bytes=2000, max_log_segments=3, compress_segments=False
    ) as store:
        for i in range(400):
            await store.append("log", {"i": i, "pad": "x" * 20})
            if i % 10 == 0:
                await store.flush()
        segs = _names(tmp_path, "log.log.*.jsonl")
        assert len(segs) == 3
        got = [e["i"] for e in await store.query("log", limit=10_000)]
        assert got == list(range(399, 399 - len(got), -1))  # newest first, no holes
        assert 50 < len(got) < 400  # older segments were dropped
    async with FileStore(tmp_path, read_only=True) as reader:
        again = [e["i"] for e in await reader.query("log", limit=10_000)]
        assert again == got[: len(again)]  # the final flush may have rotated once more
        assert len(again) > 50


async def test_a_journal_line_with_whitespace_around_it_survives_the_next_compaction(
    tmp_path: Path,
) -> None:
    """A hand-edited journal (CRLF, a leading space): the records still parse, and the next
    snapshot re-encodes them instead of gluing them in as they are (which wrote an invalid
    snapshot, set aside on the next open with every key in it)."""
    async with FileStore(tmp_path) as store:
        await store.set("ns", "a", 1)
    _append(tmp_path / "ns.journal.jsonl", b'{"b":[2,null]}\r\n ["c",3]\n["e",5] \n')
    async with FileStore(tmp_path) as store:
        await store.set("ns", "d", 4)
        await store.flush()  # snapshot + compaction
    async with FileStore(tmp_path) as store:
        assert [await store.get("ns", k) for k in "abcde"] == [1, 2, 3, 4, 5]
        assert store.recovery == []
    assert (await check_directory(str(tmp_path))).ok


@pytest.mark.parametrize(
    "record",
    [
        b'{"b":[2,"x"]}',  # format 2, an earlier release's journal
        b'{"b":"ab"}',
        b'{"b":[2,[1]]}',
        b'{"b":[2,true]}',
        b'{"b":[]}',
        b'["b",2,"x"]',  # format 3
        b'["b",2,[1]]',
        b'["b",2,true]',
        b'["b",2,null,1]',
        b"[2,2]",
        b"[]",
    ],
)
async def test_a_record_whose_expiry_is_not_a_number_is_a_corrupt_line_not_a_crash(
    tmp_path: Path, record: bytes
) -> None:
    async with FileStore(tmp_path) as store:
        await store.set("ns", "a", 1)
    _append(tmp_path / "ns.journal.jsonl", record + b"\n")
    for read_only in (True, False):
        async with FileStore(tmp_path, read_only=read_only) as store:
            assert await store.get("ns", "a") == 1
            assert await store.get("ns", "b") is None
            assert [f.kind for f in store.recovery] == ["corrupt_line"]


async def test_a_snapshot_item_that_is_not_value_and_expiry_costs_only_that_key(
    tmp_path: Path,
) -> None:
    data = tmp_path / "data"
    await _filled(data)
    snapshot = data / "ns.json"
    text = snapshot.read_bytes()
    assert b'["k1",1]' in text
    snapshot.write_bytes(text.replace(b'["k1",1]', b'["k1",1,"x"]'))
    async with FileStore(data, read_only=True) as reader:
        assert await reader.get("ns", "k1") is None
        assert await reader.get("ns", "k2") == 2
        assert [f.kind for f in reader.recovery] == ["corrupt_line"]


async def test_a_journal_emptied_by_hand_under_a_snapshot_is_started_again_after_it(
    tmp_path: Path,
) -> None:
    """``: > ns.journal.jsonl`` beside a snapshot covering position P: the next write starts a
    journal at P. The file was extended to P with NUL bytes ("cut -P bytes"), and the move to
    this format would have copied those P bytes into a real journal."""
    async with FileStore(tmp_path) as store:
        for i in range(200):
            await store.set("ns", f"k{i}", {"pad": "x" * 100})
    journal = tmp_path / "ns.journal.jsonl"
    assert orjson.loads((tmp_path / "ns.json").read_bytes())["pos"] > 20_000
    journal.write_bytes(b"")
    async with FileStore(tmp_path) as store:
        await store.set("ns", "new", 1)
        await asyncio.sleep(0)
        assert journal.stat().st_size < 200
        assert [f.kind for f in store.recovery] == []
    async with FileStore(tmp_path, read_only=True) as reader:
        assert await reader.get("ns", "new") == 1
        assert await reader.get("ns", "k7") == {"pad": "x" * 100}
        assert len(await reader.list("ns")) == 201
