"""Every on-disk format carries a version: data dirs written by earlier releases are read
forever, and a newer format is refused with a typed error, never misread.

``fixtures/datadir-v1`` was written by the release before format 2 (FileStore format 1: a
snapshot with ``"format": 1``, a seq-numbered journal, logs without a header);
``fixtures/datadir-v2`` by the release before format 3 (a shared journal with a header, its
records ``{key: [value, exp]}``, compressed segments, retention caps); ``fixtures/datadir-v3``
by the release before format 4 (``fixtures/make_datadir.py``: the records are ``[key, value(,
exp)]``), ``fixtures/datadir-v4`` by this one (the same, named by ``_names``). All were
left the way a crash leaves them (no close). Keep them as they are: they are what users'
directories look like.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import subprocess
import sys
from pathlib import Path

import orjson
import pytest

import airstore._kvspace as kvspace
from airstore import FileStore, UnsupportedFormatError
from airstore._format import FORMAT, check_version
from airstore._recovery import check_directory

FIXTURES = Path(__file__).with_name("fixtures")

USERS = {
    "ada": {"name": "Ada", "langs": ["en", "fr"], "age": 36},
    "carol": {"name": "Carol"},
    "kept": "forever",
    "ünï": "non-ascii key",
}


def _files(root: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(root.iterdir()) if p.is_file()}


def _journal(path: Path) -> tuple[int, list[bytes]]:
    """The header's format and the records of a journal file."""
    header, *records = path.read_bytes().splitlines()
    return orjson.loads(header)["format"], records


FIXTURE_DIRS = ["datadir-v1", "datadir-v2", "datadir-v3", "datadir-v4"]


async def _assert_fixture_content(store: FileStore) -> None:
    assert dict(await store.entries("users")) == USERS  # bob deleted, gone expired
    assert await store.get("counters", "hits") == 41
    calls = await store.query("meter.calls", limit=100)
    assert [e["i"] for e in calls] == list(range(30, -1, -1))
    assert calls[0]["_ts"] == 1_700_000_030_000
    t1 = await store.query("meter.calls", filter={"tool": "t1"}, limit=100)
    assert [e["i"] for e in t1] == [i for i in range(29, -1, -1) if i % 3 == 1]


@pytest.mark.parametrize("fixture", FIXTURE_DIRS)
async def test_an_earlier_directory_is_read_by_a_reader_without_changing_a_byte(
    fixture: str,
) -> None:
    root = FIXTURES / fixture
    before = _files(root)
    async with FileStore(root, read_only=True) as reader:
        await _assert_fixture_content(reader)
        assert reader.recovery == []
    assert _files(root) == before
    assert (await check_directory(str(root))).ok


@pytest.mark.parametrize("fixture", FIXTURE_DIRS)
async def test_a_writer_continues_an_earlier_directory_in_this_format(
    tmp_path: Path, fixture: str
) -> None:
    data = tmp_path / "data"
    shutil.copytree(FIXTURES / fixture, data)
    async with FileStore(data) as store:
        await _assert_fixture_content(store)
        assert await store.incr("counters", "hits") == 42
        await store.append("meter.calls", {"tool": "new", "i": 31})
    # the directory says this format, so a writer of an earlier release opening it now refuses
    # it (this one has moved journals the earlier one cannot read)
    assert orjson.loads((data / ".airstore").read_bytes())["format"] == FORMAT
    # a namespace this writer changed is in this format; one it only read is moved only from
    # format 1 (at its load), a later one stays as it was until a writer changes it
    assert orjson.loads((data / "counters.json").read_bytes())["format"] == FORMAT
    assert _journal(data / "counters.journal.jsonl")[0] == FORMAT
    users = {"datadir-v1": FORMAT, "datadir-v2": 2, "datadir-v3": 3}.get(fixture, FORMAT)
    assert orjson.loads((data / "users.json").read_bytes())["format"] == users
    assert _journal(data / "users.journal.jsonl")[0] == users
    async with FileStore(data, read_only=True) as reader:
        assert dict(await reader.entries("users")) == USERS
        assert await reader.get("counters", "hits") == 42
        assert [e["i"] for e in await reader.query("meter.calls", limit=3)] == [31, 30, 29]
    assert (await check_directory(str(data))).ok


def _future(path: Path, old: bytes, new: bytes) -> None:
    data = path.read_bytes()
    assert old in data
    path.write_bytes(data.replace(old, new, 1))


@pytest.mark.parametrize("read_only", [True, False])
async def test_a_newer_snapshot_format_is_refused(tmp_path: Path, read_only: bool) -> None:
    async with FileStore(tmp_path) as store:
        await store.set("ns", "k", 1)
    _future(tmp_path / "ns.json", b'"format":%d' % FORMAT, b'"format":%d' % (FORMAT + 1))
    before = _files(tmp_path)
    async with FileStore(tmp_path, read_only=read_only) as store:
        with pytest.raises(UnsupportedFormatError) as info:
            await store.get("ns", "k")
    assert info.value.found == FORMAT + 1
    assert info.value.supported == FORMAT
    assert info.value.path == str(tmp_path / "ns.json")
    assert _files(tmp_path) == before  # refused: nothing moved aside, nothing rewritten


@pytest.mark.parametrize(
    "doc",
    [
        b'{"format":%d,"pos":0,"records":[["k",1]]}' % (FORMAT + 1),  # a later shape, no "items"
        b'{"airstore":"snapshot","format":%d}' % (FORMAT + 1),
    ],
)
@pytest.mark.parametrize("read_only", [True, False])
async def test_a_newer_snapshot_of_another_shape_is_refused_not_read_as_keys(
    tmp_path: Path, read_only: bool, doc: bytes
) -> None:
    """It was read as the seed's plain ``{key: value}`` object ("format", "pos" and "records"
    became keys) and then rewritten over."""
    async with FileStore(tmp_path) as store:
        await store.set("ns", "k", 1)
    (tmp_path / "ns.json").write_bytes(doc)
    before = _files(tmp_path)
    async with FileStore(tmp_path, read_only=read_only) as store:
        with pytest.raises(UnsupportedFormatError) as info:
            await store.get("ns", "k")
        if not read_only:
            with pytest.raises(UnsupportedFormatError):
                await store.set("ns", "other", 2)
    assert info.value.found == FORMAT + 1
    assert _files(tmp_path) == before
    report = await check_directory(str(tmp_path))
    assert [f.kind for f in report.findings] == ["unsupported_format"]


async def test_a_snapshot_of_this_format_without_items_is_set_aside_not_read_as_keys(
    tmp_path: Path,
) -> None:
    async with FileStore(tmp_path) as store:
        await store.set("ns", "k", 1)
    (tmp_path / "ns.json").write_bytes(b'{"format":%d,"pos":0}' % FORMAT)
    async with FileStore(tmp_path) as store:
        assert await store.list("ns") == []  # never "format" and "pos"
        assert [f.kind for f in store.recovery] == ["corrupt_snapshot"]
    assert _names(tmp_path, "ns.json.corrupt-*") == 1  # kept aside


def _names(directory: Path, pattern: str) -> int:
    return len(list(directory.glob(pattern)))


def test_a_damaged_format_marker_says_so_instead_of_asking_for_an_upgrade() -> None:
    with pytest.raises(UnsupportedFormatError) as info:
        check_version(None, "x/.airstore")
    assert "damaged" in info.value.message
    assert "newer" not in info.value.message


async def test_a_newer_journal_format_is_refused(tmp_path: Path) -> None:
    async with FileStore(tmp_path, flush_interval=3600) as store:
        await store.set("ns", "k", 1)
        await store.flush()
        await store.set("ns", "k", 2)
    _future(
        tmp_path / "ns.journal.jsonl",
        b'"journal","format":%d' % FORMAT,
        b'"journal","format":%d' % (FORMAT + 1),
    )
    async with FileStore(tmp_path, read_only=True) as reader:
        with pytest.raises(UnsupportedFormatError):
            await reader.get("ns", "k")
    report = await check_directory(str(tmp_path))
    assert [f.kind for f in report.findings] == ["unsupported_format"]


async def test_a_log_file_of_a_newer_format_is_refused(tmp_path: Path) -> None:
    async with FileStore(tmp_path) as store:
        await store.append("log", {"i": 1})
    log = tmp_path / "log.log.jsonl"  # as a later release may write it: a header line first
    log.write_bytes(b'{"airstore":"log","format":99}\n' + log.read_bytes())
    async with FileStore(tmp_path, read_only=True) as reader:
        with pytest.raises(UnsupportedFormatError) as info:
            await reader.query("log")
    assert info.value.found == 99
    report = await check_directory(str(tmp_path))
    assert [f.kind for f in report.findings] == ["unsupported_format"]


async def test_a_newer_data_directory_is_refused_at_open(tmp_path: Path) -> None:
    async with FileStore(tmp_path) as store:
        await store.set("ns", "k", 1)
    _future(tmp_path / ".airstore", b'"format":%d' % FORMAT, b'"format":%d' % (FORMAT + 7))
    for read_only in (True, False):
        with pytest.raises(UnsupportedFormatError):
            await FileStore(tmp_path, read_only=read_only).init()


async def test_every_file_a_writer_makes_names_its_format(tmp_path: Path) -> None:
    async with FileStore(tmp_path, max_log_bytes=200) as store:
        await store.set("ns", "k", 1)
        await store.set_log_retention("log", max_bytes=1 << 30)
        for i in range(20):
            await store.append("log", {"i": i, "pad": "x" * 30})
            await store.flush()
    assert orjson.loads((tmp_path / ".airstore").read_bytes())["format"] == FORMAT
    for name in sorted(os.listdir(tmp_path)):
        path = tmp_path / name
        data = path.read_bytes()
        if name.endswith(".lock") or name == ".airstore":
            continue  # lock files hold a pid, nothing is read from them
        if name.endswith(".jsonl.gz"):  # a compressed segment: the subfield names its layout
            assert data[:4] == b"\x1f\x8b\x08\x04", name
            assert data[12:14] == b"AS", name
        elif name.endswith(".log.jsonl"):
            assert orjson.loads(data.splitlines()[0])["i"] >= 0  # JSONL, under .airstore
        elif name.endswith(".json"):
            assert orjson.loads(data)["format"] == FORMAT, name
        else:
            assert data.startswith(b'{"airstore":"journal","format":%d' % FORMAT), name


_OTHER_WRITER = """
import asyncio, sys
from airstore import FileStore
async def main():
    async with FileStore(sys.argv[1], handle_sigterm=False) as store:
        if sys.argv[2] == "migrate":
            await store.get("users", "ada")  # loads 'users', moving it to this format
        else:
            await store.set("users", "carol", {"name": "Carol"})  # then close() compacts
asyncio.run(main())
"""


@pytest.mark.parametrize("earlier", ["format-1", "format-2", "seed"])
async def test_a_writer_loading_an_earlier_namespace_while_another_rewrites_it_loses_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, earlier: str
) -> None:
    """Another process moves the namespace to this format (or, from the seed's plain snapshot,
    writes and compacts it) right after this loader read the old snapshot: the loader reads
    again instead of pairing the old snapshot with the new journal (it lost carol and brought
    the deleted bob back, for good once it compacted)."""
    data = tmp_path / "data"
    if earlier in ("format-1", "format-2"):
        shutil.copytree(FIXTURES / f"datadir-v{earlier[-1]}", data)
        action = "migrate"
    else:
        data.mkdir()
        (data / "users.json").write_bytes(orjson.dumps({"ada": {"name": "Ada"}}))
        action = "write"
    real_read = kvspace.read_file
    raced: list[str] = []

    async def read_then_another_writer(path: str) -> bytes | None:
        snapshot = await real_read(path)
        if path.endswith("users.json") and not raced:
            raced.append(path)
            argv = [sys.executable, "-c", _OTHER_WRITER, str(data), action]
            await asyncio.to_thread(subprocess.run, argv, check=True)
        return snapshot

    monkeypatch.setattr(kvspace, "read_file", read_then_another_writer)
    async with FileStore(data, handle_sigterm=False) as store:
        assert await store.get("users", "carol") == {"name": "Carol"}
        assert await store.get("users", "bob") is None
        await store.set("users", "dave", 1)
    assert raced
    monkeypatch.setattr(kvspace, "read_file", real_read)
    async with FileStore(data, read_only=True) as reader:
        assert await reader.get("users", "carol") == {"name": "Carol"}
        assert await reader.get("users", "bob") is None
        assert await reader.get("users", "dave") == 1


async def test_a_writer_moves_an_earlier_journal_to_this_format_before_it_appends(
    tmp_path: Path,
) -> None:
    """An earlier release takes a record of this format (``[key, value]``) for a damaged line
    and skips it, so a writer never appends one to a format-2 journal: its first append goes
    by a new journal of this format holding the old records as they are, then its own — and
    so again when an earlier release's writer has started a format-2 journal under it since
    (its compaction). Reading a namespace changes nothing (a full disk still serves reads)."""
    data = tmp_path / "data"
    shutil.copytree(FIXTURES / "datadir-v2", data)
    journal = data / "users.journal.jsonl"
    before = journal.read_bytes()
    old_header, *old_records = before.splitlines()
    async with FileStore(data, flush_interval=3600, handle_sigterm=False) as store:
        assert await store.get("users", "carol") == {"name": "Carol"}
        await asyncio.sleep(0)
        assert journal.read_bytes() == before  # read only: left as it was
        await store.set("users", "dave", 1)
        await store.delete("users", "kept")
        assert await store.incr("users", "n") == 1
        await asyncio.sleep(0)
        header = orjson.loads(journal.read_bytes().splitlines()[0])
        assert header["base"] == orjson.loads(old_header)["base"]  # the same positions
        assert _journal(journal) == (FORMAT, [*old_records, b'["dave",1]', b'["kept"]', b'["n",1]'])
        base = header["base"] + sum(len(r) + 1 for r in _journal(journal)[1])
        earlier = data / "users.journal.jsonl.earlier"
        earlier.write_bytes(
            b'{"airstore":"journal","format":2,"base":%d}\n{"erin":[{"name":"Erin"},null]}\n' % base
        )
        os.replace(earlier, journal)  # what an earlier release's compaction leaves
        await asyncio.sleep(0)
        await store.set("users", "frank", 2)
        for _ in range(3):  # the end of the loop turn commits it
            await asyncio.sleep(0)
        assert _journal(journal) == (FORMAT, [b'{"erin":[{"name":"Erin"},null]}', b'["frank",2]'])
        assert await store.get("users", "erin") == {"name": "Erin"}
    expected = {"ada", "carol", "dave", "erin", "frank", "n", "ünï"}
    async with FileStore(data, read_only=True) as reader:
        assert {k for k, _ in await reader.entries("users")} == expected
        assert await reader.get("users", "erin") == {"name": "Erin"}
        assert reader.recovery == []
    assert orjson.loads((data / "users.json").read_bytes())["format"] == FORMAT  # close compacted
    assert (await check_directory(str(data))).ok


async def test_reading_an_earlier_namespace_on_a_full_disk_still_works(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The move to this format happens at a writer's first append, never at a read: a writer
    whose disk is full reads an earlier directory as the earlier release did."""
    data = tmp_path / "data"
    shutil.copytree(FIXTURES / "datadir-v2", data)

    def disk_full(*args: object, **kwargs: object) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(kvspace.Journal, "start_locked", disk_full)
    async with FileStore(data, handle_sigterm=False) as store:
        assert dict(await store.entries("users")) == USERS
        assert await store.get("counters", "hits") == 41


@pytest.mark.parametrize("read_only", [True, False])
async def test_a_format_1_journal_whose_first_record_is_long_is_still_format_1(
    tmp_path: Path, read_only: bool
) -> None:
    """A first record longer than the 512 bytes read to find a header made the journal look
    like a format-3 one with a damaged header: every record was dropped (a writer's move to
    this format then made it final)."""
    root = tmp_path / "v1"
    shutil.copytree(FIXTURES / "datadir-v1", root)
    big = {"name": "Carol", "bio": "x" * 2000}
    (root / "users.journal.jsonl").write_bytes(
        orjson.dumps([6, "s", "carol", big, None]) + b'\n[7,"d","bob"]\n'
    )
    for _ in range(2):  # a writer moves it to this format at the first open; read again
        async with FileStore(root, read_only=read_only) as store:
            assert await store.get("users", "carol") == big
            assert await store.get("users", "bob") is None
            assert store.recovery == []
    assert (await check_directory(str(root))).ok
