"""``air store check`` and a load judge every line and snapshot item by the same rule: a check
never passes what a load drops, and both name the same line."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from airstore import FileStore
from airstore._recovery import Finding, check_directory

JOURNAL_DAMAGE = [
    b"[1,2]",  # the key is not a string
    b'["b",5,"notanumber"]',  # the expiry is not a number
    b'["b",5,true]',
    b"[]",
    b'["b",1,null,4]',  # one field too many
    b'{"b":[1]}',  # an earlier release's shape, damaged
    b'{"b":[1,null],"c":[2,null]}',
    b'"b"',
    b"42",
    b"null",
    b"\x00\xffnot json{",
]

SNAPSHOT_DAMAGE = [
    b'[7,{"x":1}]',  # the key is not a string
    b'["k1"]',  # a journal's delete is no snapshot item
    b'["k1",1,"x"]',
    b'["k1",1,null,3]',
    b'{"k1":[1,null]}',  # the format-2 shape inside a format-3 snapshot
    b'"k1"',
]

LOG_DAMAGE = [
    b"[1,2]",
    b'{"i":9}',  # no _ts
    b'{"i":9,"_ts":"yesterday"}',
    b"\x00\xffgarbage{{",
]


def _append(path: Path, data: bytes) -> None:
    with open(path, "ab") as fh:
        fh.write(data)


def _seen(findings: list[Finding]) -> list[tuple[str, str, int | None, str]]:
    return [(f.kind, Path(f.path).name, f.line, f.detail) for f in findings]


async def _written(data: Path) -> None:
    async with FileStore(data) as store:
        for i in range(3):
            await store.set("ns", f"k{i}", i)
            await store.append("log", {"i": i})
        await store.flush()  # the keys in ns.json, an empty journal after it
        await store.set("ns", "a", 1)  # …and one record in the journal


@pytest.mark.parametrize("line", JOURNAL_DAMAGE)
async def test_a_journal_line_check_passes_is_one_a_load_keeps(tmp_path: Path, line: bytes) -> None:
    await _written(tmp_path)
    journal = tmp_path / "ns.journal.jsonl"
    _append(journal, line + b"\n" + b'["c",3]\n')
    number = journal.read_bytes().count(b"\n") - 1  # the damaged line, before the last one
    checked = _seen((await check_directory(str(tmp_path))).findings)
    assert [(kind, name, at) for kind, name, at, _ in checked] == [
        ("corrupt_line", "ns.journal.jsonl", number)
    ]
    for read_only in (True, False):
        async with FileStore(tmp_path, read_only=read_only) as store:
            assert await store.get("ns", "a") == 1
            assert await store.get("ns", "c") == 3
            assert await store.get("ns", "b") is None
            assert _seen(store.recovery) == checked


@pytest.mark.parametrize("item", SNAPSHOT_DAMAGE)
async def test_a_snapshot_item_check_passes_is_one_a_load_keeps(
    tmp_path: Path, item: bytes
) -> None:
    await _written(tmp_path)
    snapshot = tmp_path / "ns.json"
    text = snapshot.read_bytes()
    assert text.count(b'["k1",1]') == 1
    snapshot.write_bytes(text.replace(b'["k1",1]', item))
    checked = _seen((await check_directory(str(tmp_path))).findings)
    assert len(checked) == 1
    assert checked[0][:3] == ("corrupt_line", "ns.json", None)
    assert checked[0][3].startswith("item 2: ")  # the second item of the snapshot
    async with FileStore(tmp_path, read_only=True) as store:
        assert await store.get("ns", "k1") is None
        assert await store.get("ns", "k2") == 2
        assert _seen(store.recovery) == checked


@pytest.mark.parametrize("line", LOG_DAMAGE)
async def test_a_log_line_check_passes_is_one_a_query_keeps(tmp_path: Path, line: bytes) -> None:
    await _written(tmp_path)
    log = tmp_path / "log.log.jsonl"
    lines = log.read_bytes().split(b"\n")
    lines.insert(2, line)
    log.write_bytes(b"\n".join(lines))
    checked = (await check_directory(str(tmp_path))).findings
    assert [(f.kind, Path(f.path).name, f.line) for f in checked] == [
        ("corrupt_line", "log.log.jsonl", 3)
    ]
    async with FileStore(tmp_path, read_only=True) as store:
        assert [e["i"] for e in await store.query("log")] == [2, 1, 0]
        assert [(f.kind, f.path, f.line) for f in store.recovery] == [
            (f.kind, f.path, f.line) for f in checked
        ]


async def test_a_bad_line_another_writer_appends_is_reported_with_its_line_number(
    tmp_path: Path,
) -> None:
    await _written(tmp_path)
    journal = tmp_path / "ns.journal.jsonl"
    async with FileStore(tmp_path) as store:
        assert await store.get("ns", "a") == 1
        # what a broken writer beside us might append
        _append(journal, b'["b",1]\n["b",5,"soon"]\n["b",2]\n')
        await asyncio.sleep(0)  # the next loop turn looks at the journal again
        assert await store.get("ns", "b") == 2
        number = journal.read_bytes().count(b"\n") - 1
        assert [(f.kind, f.line) for f in store.recovery] == [("corrupt_line", number)]
        assert _seen(store.recovery) == _seen((await check_directory(str(tmp_path))).findings)


@pytest.mark.parametrize(
    "header",
    [
        b"X",  # one byte of the header changed
        b"journel",  # … in the kind it names (the whole namespace was refused)
        b"formaT",  # … in the format key (the same)
        b'{"airstore":"journal","format":3,"base":"x"}',  # no base to place the records by
        b'{"airstore":"journal","format":3,"base":null}',
        b'{"airstore":"journal","form',  # torn
    ],
)
@pytest.mark.parametrize("snapshot", [True, False])
async def test_a_damaged_journal_header_costs_that_line_not_the_records_after_it(
    tmp_path: Path, header: bytes, snapshot: bool
) -> None:
    """It made the journal look like a format-1 file, whose replay dropped every format-3
    record as garbage: the keys after it were gone for good at the next compaction."""
    async with FileStore(tmp_path) as store:
        await store.set("ns", "old", 0)  # at close: in the snapshot, the journal just a header
    journal = tmp_path / "ns.journal.jsonl"
    head, records = journal.read_bytes(), b'["k0",0]\n["k1",1]\n["k2",2]\n'  # as a writer's
    if not snapshot:
        (tmp_path / "ns.json").unlink()
        head, records = head.replace(b'"base":', b'"base":0,"was":'), b'["old",0]\n' + records
    one_byte = {
        b"X": b"X" + head[1:],
        b"journel": head.replace(b'"journal"', b'"journel"'),
        b"formaT": head.replace(b'"format"', b'"formaT"'),
    }
    journal.write_bytes(one_byte.get(header, header + b"\n") + records)
    expected = {"old": 0, "k0": 0, "k1": 1, "k2": 2}
    checked = _seen((await check_directory(str(tmp_path))).findings)
    assert [(kind, name, at) for kind, name, at, _ in checked] == [
        ("corrupt_line", "ns.journal.jsonl", 1)
    ]
    for read_only in (True, False):
        async with FileStore(tmp_path, read_only=read_only) as store:
            assert dict(await store.entries("ns")) == expected
            assert _seen(store.recovery) == checked
            if not read_only:
                await store.set("ns", "after", 9)  # a write, then a compaction at close
    async with FileStore(tmp_path, read_only=True) as store:
        assert dict(await store.entries("ns")) == {**expected, "after": 9}
    assert (await check_directory(str(tmp_path))).ok


@pytest.mark.parametrize("name", ["ns.journal.jsonl", "log.log.jsonl"])
async def test_a_torn_tail_has_the_same_line_number_in_check_and_in_the_repair(
    tmp_path: Path, name: str
) -> None:
    """The repair reported it with ``line=None`` while check named the line."""
    await _written(tmp_path)
    _append(tmp_path / name, b'["unfinished",')
    checked = _seen((await check_directory(str(tmp_path))).findings)
    assert [(kind, at) for kind, _, at, _ in checked] == [
        ("torn_tail", (tmp_path / name).read_bytes().count(b"\n") + 1)
    ]
    async with FileStore(tmp_path) as store:
        await store.set("ns", "z", 1)  # the next writer to commit cuts the journal's tail …
        await store.append("log", {"i": 9})  # … and the log's, when it opens its file
        await asyncio.sleep(0)
        repaired = [(f.kind, Path(f.path).name, f.line) for f in store.recovery]
    assert repaired == [(kind, file, at) for kind, file, at, _ in checked]
    assert (await check_directory(str(tmp_path))).ok


@pytest.mark.parametrize("how", ["deleted", "dangling link"])
async def test_a_missing_snapshot_is_reported_not_silent(tmp_path: Path, how: str) -> None:
    """The keys only it held were gone without a word (the journal starts after it)."""
    await _written(tmp_path)  # every key in the snapshot (compacted at close) …
    _append(tmp_path / "ns.journal.jsonl", b'["late",5]\n')  # … and one in the journal after it
    snapshot = tmp_path / "ns.json"
    snapshot.unlink()
    if how == "dangling link":
        snapshot.symlink_to(tmp_path / "gone.json")
    checked = _seen((await check_directory(str(tmp_path))).findings)
    assert [(kind, name, at) for kind, name, at, _ in checked] == [
        ("corrupt_snapshot", "ns.json", None)
    ]
    assert "missing: the journal starts at position" in checked[0][3]
    async with FileStore(tmp_path, read_only=True) as store:
        assert await store.list("ns") == ["late"]  # what the journal holds
        assert _seen(store.recovery) == checked


async def test_a_new_namespace_without_a_snapshot_yet_is_no_finding(tmp_path: Path) -> None:
    async with FileStore(tmp_path, flush_interval=3600) as store:
        await store.set("ns", "a", 1)
        await asyncio.sleep(0)  # in the journal (base 0), no snapshot before the first flush
        assert (await check_directory(str(tmp_path))).ok
        async with FileStore(tmp_path, read_only=True) as reader:
            assert await reader.get("ns", "a") == 1
            assert reader.recovery == []


@pytest.mark.parametrize(
    ("old", "new"),
    [
        (b'"format"', b'"formaT"'),  # was read as the seed's plain object: keys gone, silently
        (b'"pos"', b'"poz"'),  # every get and set failed: "keeps changing under the loader"
    ],
)
async def test_one_changed_byte_in_a_snapshot_key_costs_no_key(
    tmp_path: Path, old: bytes, new: bytes
) -> None:
    async with FileStore(tmp_path) as store:
        for i in range(3):
            await store.set("ns", f"k{i}", i)  # at close: in the snapshot
    snapshot = tmp_path / "ns.json"
    data = snapshot.read_bytes()
    assert data.count(old) == 1
    snapshot.write_bytes(data.replace(old, new))
    expected = {"k0": 0, "k1": 1, "k2": 2}
    checked = _seen((await check_directory(str(tmp_path))).findings)
    assert [(kind, name) for kind, name, _, _ in checked] == [("corrupt_line", "ns.json")]
    for read_only in (True, False):
        async with FileStore(tmp_path, read_only=read_only) as store:
            assert dict(await store.entries("ns")) == expected
            assert _seen(store.recovery) == checked
            if not read_only:
                await store.set("ns", "after", 9)  # a write, then a compaction at close
    async with FileStore(tmp_path, read_only=True) as store:
        assert dict(await store.entries("ns")) == {**expected, "after": 9}
    assert (await check_directory(str(tmp_path))).ok
