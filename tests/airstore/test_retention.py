"""Per-namespace log retention on every backend, and compressed segments that stay queryable
(issue 12, item 8)."""

from __future__ import annotations

import asyncio
import gzip
import os
import shutil
from pathlib import Path

import pytest

from airstore import FileStore, InvalidArgumentError, Store, UnsupportedFormatError
from airstore._recovery import check_directory
from airstore._retention import MAX_LOG_BYTES, Retention, read_retention
from airstore._validate import MAX_TTL
from tests.airstore.backends import BACKENDS, FakeClock

BAD_CAPS = [
    {"max_age": 0},
    {"max_age": -1.0},
    {"max_age": float("nan")},
    {"max_bytes": 0},
    {"max_bytes": 1.5},
    {"max_bytes": True},
]
# FileStore keeps its caps at segment granularity: its own tests are below.
BY_ENTRY = [pytest.param(b, id=b.name, marks=b.marks) for b in BACKENDS if b.name[:4] != "file"]


@pytest.mark.parametrize("caps", BAD_CAPS)
async def test_bad_retention_caps_are_refused_everywhere(
    store: Store, caps: dict[str, object]
) -> None:
    with pytest.raises(InvalidArgumentError):
        await store.set_log_retention("log", **caps)


async def _entries(store: Store, ns: str = "log") -> list[int]:
    return [e["i"] for e in await store.query(ns, limit=100_000)]


@pytest.mark.parametrize("backend", BY_ENTRY, indirect=True)
async def test_retention_by_age_drops_entries_older_than_the_cap(
    store: Store, clock: FakeClock
) -> None:
    for i in range(10):
        await store.append("log", {"i": i})
        clock.advance(10)
    await store.append("other", {"i": 0})
    await store.set_log_retention("log", max_age=35)  # now = t0 + 100 s: keeps ≥ t0 + 65 s
    await store.flush()
    assert await _entries(store) == [9, 8, 7]
    assert await _entries(store, "other") == [0]  # caps are per namespace


@pytest.mark.parametrize("backend", BY_ENTRY, indirect=True)
async def test_retention_by_bytes_keeps_the_newest_entries(store: Store) -> None:
    await store.set_log_retention("log", max_bytes=2_000)
    for i in range(200):
        await store.append("log", {"i": i, "pad": "x" * 80})  # ~100 bytes each
    await store.flush()
    kept = await _entries(store)
    assert kept[0] == 199
    assert kept == list(range(199, 199 - len(kept), -1))  # newest, without holes
    assert 10 <= len(kept) <= 40  # ~20 fit (Redis: by its average entry size)


async def _fill(store: FileStore, n: int, clock: FakeClock | None = None) -> None:
    for i in range(n):
        await store.append("log", {"i": i, "tool": "rare" if i % 100 == 0 else "t", "p": "x" * 60})
        if clock is not None:
            clock.advance(1)
        if i % 500 == 0:
            await asyncio.sleep(0)
    await store.flush()


def _logs(root: Path) -> list[str]:
    return sorted(n for n in os.listdir(root) if n.startswith("log.log."))


def _size(root: Path) -> int:
    return sum(os.path.getsize(root / n) for n in _logs(root))


def _gzip_beside(path: Path) -> None:
    with open(path, "rb") as src, gzip.open(str(path) + ".gz", "wb") as dst:
        shutil.copyfileobj(src, dst)


async def test_file_segments_are_compressed_and_queried_like_plain_ones(tmp_path: Path) -> None:
    clock = FakeClock()  # one clock: both logs get the same _ts
    async with (
        FileStore(tmp_path / "gz", max_log_bytes=64 * 1024, clock=clock) as gz,
        FileStore(
            tmp_path / "plain", max_log_bytes=64 * 1024, compress_segments=False, clock=clock
        ) as plain,
    ):
        await _fill(gz, 8_000)
        await _fill(plain, 8_000)
        names = _logs(tmp_path / "gz")
        assert names[-1] == "log.log.jsonl"
        assert all(n.endswith(".jsonl.gz") for n in names[:-1])
        assert len(names) > 5
        for kwargs in ({}, {"limit": 50, "offset": 7_000}, {"filter": {"tool": "rare"}},
                       {"limit": 10_000}, {"since": 0, "until": 2**62, "limit": 3}):  # fmt: skip
            assert await gz.query("log", **kwargs) == await plain.query("log", **kwargs)
    assert _size(tmp_path / "gz") * 3 < _size(tmp_path / "plain")
    segment = tmp_path / "gz" / _logs(tmp_path / "gz")[0]
    assert gzip.decompress(segment.read_bytes()).startswith(b'{"i":')  # plain gzip to any tool
    report = await check_directory(str(tmp_path / "gz"))
    assert report.ok
    assert report.namespaces[0].log_entries == 8_000


async def test_file_byte_cap_deletes_the_oldest_segments_of_every_writer(tmp_path: Path) -> None:
    async with FileStore(tmp_path) as a, FileStore(tmp_path) as b:
        await a.set_log_retention("log", max_bytes=256 * 1024)  # rotation at 64 KiB
        await asyncio.gather(_fill(a, 6_000), _fill(b, 6_000))
        await a.flush()
        names = _logs(tmp_path)
        assert _size(tmp_path) <= 256 * 1024 + 2 * 64 * 1024  # the cap, plus the active files
        assert any(".s1." in n for n in names)  # b's slot
        newest = await a.query("log", limit=5)
        assert [e["i"] for e in newest][:1] == [5_999]
        caps = (tmp_path / "log.retention.json").read_bytes()
        assert b'"max_bytes":262144' in caps


async def test_file_age_cap_deletes_segments_whose_newest_entry_is_older(tmp_path: Path) -> None:
    clock = FakeClock()
    async with FileStore(tmp_path, max_log_bytes=64 * 1024, clock=clock) as store:
        await _fill(store, 6_000, clock)  # one entry per store-clock second
        before = len(_logs(tmp_path))
        await store.set_log_retention("log", max_age=2_000)
        after = _logs(tmp_path)
        assert len(after) < before
        kept = await _entries(store)
        assert kept[0] == 5_999
        assert min(kept) > 6_000 - 2_000 - 1_500  # a segment holds ~900 entries
        assert max(set(range(6_000)) - set(kept)) < 6_000 - 2_000


async def test_a_compression_cut_short_leaves_no_duplicate_and_is_finished_later(
    tmp_path: Path,
) -> None:
    async with FileStore(tmp_path, max_log_bytes=64 * 1024, compress_segments=False) as store:
        await _fill(store, 3_000)
    first = tmp_path / _logs(tmp_path)[0]
    _gzip_beside(first)  # the .gz landed, the plain file was not removed yet
    async with FileStore(tmp_path, read_only=True) as reader:
        assert await _entries(reader) == list(range(2_999, -1, -1))  # counted once
    async with FileStore(tmp_path, max_log_bytes=64 * 1024) as store:
        await store.append("log", {"i": 3_000})
        await store.flush()  # the writer of that slot finishes what was left
        assert all(n.endswith(".gz") for n in _logs(tmp_path)[:-1])
        assert await _entries(store) == list(range(3_000, -1, -1))


@pytest.mark.parametrize(
    ("stored", "expected"),
    [
        (b'"max_age":35.0,"max_bytes":1152921504606846976', Retention(35.0, MAX_LOG_BYTES)),
        (b'"max_age":1e300,"max_bytes":1000000', Retention(MAX_TTL, 1_000_000)),
        (b'"max_age":-1,"max_bytes":1000000', None),  # unusable: logged, no caps
    ],
)
def test_caps_an_earlier_release_stored_beyond_todays_largest_still_hold(
    tmp_path: Path, stored: bytes, expected: Retention | None
) -> None:
    """The previous release accepted caps over today's largest: read as the largest, they must
    not make the file read as "no caps" and drop the other cap stored beside them (every
    reader of stored caps, the retention pass, recovery and each log, goes through here)."""
    (tmp_path / "log.retention.json").write_bytes(
        b'{"airstore":"retention","format":1,' + stored + b"}"
    )
    assert read_retention(str(tmp_path), "log") == expected


def _damage(path: Path, how: str) -> None:
    data = path.read_bytes()
    if how == "first byte":
        path.write_bytes(b"\0" + data[1:])  # no gzip file any more
    elif how == "garbage inside":
        path.write_bytes(data[:100] + b"garbage" + data[100:])
    else:  # one member of several: bytes flipped in the middle of its deflate stream
        mid = len(data) // 2
        flipped = bytes(b ^ 0xFF for b in data[mid : mid + 64])
        path.write_bytes(data[:mid] + flipped + data[mid + 64 :])


@pytest.mark.parametrize("how", ["first byte", "garbage inside", "a member"])
async def test_a_damaged_compressed_segment_costs_its_entries_not_the_queries(
    tmp_path: Path, how: str
) -> None:
    """A damaged segment made every query that reached it raise StorageIOError ("Not a gzipped
    file"): the good entries of the other files were unreachable."""
    async with FileStore(tmp_path, max_log_bytes=64 * 1024) as store:
        await _fill(store, 8_000)
    names = _logs(tmp_path)
    damaged = tmp_path / names[len(names) // 2]  # a segment in the middle of the history
    _damage(damaged, how)
    async with FileStore(tmp_path, read_only=True) as store:
        every = await store.query("log", limit=10_000)
        rare = await store.query("log", filter={"tool": "rare"}, limit=10_000)
        newest = await store.query("log", limit=5)
        found = [(f.kind, f.path) for f in store.recovery]
    assert 0 < len(every) < 8_000
    kept = {e["i"] for e in every}
    assert {7_999, 0} <= kept  # the newest file's entries and the oldest segment's
    assert [e["i"] for e in rare] == sorted((i for i in kept if i % 100 == 0), reverse=True)
    assert [e["i"] for e in newest] == [7_999, 7_998, 7_997, 7_996, 7_995]
    assert ("corrupt_line", str(damaged)) in found
    report = await check_directory(str(tmp_path))
    assert [(f.kind, f.path) for f in report.findings] == [("corrupt_line", str(damaged))]


@pytest.mark.parametrize(
    "damage", ["directory", b"{}", b"[]", b"\x00garbage", b'{"airstore":"retention","format":0}']
)
async def test_an_unreadable_caps_file_is_ignored_with_a_warning_not_a_failed_open(
    tmp_path: Path, damage: object, caplog: pytest.LogCaptureFixture
) -> None:
    """A directory in its place made a writer's open raise a bare IsADirectoryError, and ``{}``
    refused the whole store as "written by a newer air", while garbage passed unnoticed."""
    async with FileStore(tmp_path) as store:
        await store.set_log_retention("log", max_bytes=1 << 20)
        await store.append("log", {"i": 1})
    caps = tmp_path / "log.retention.json"
    caps.unlink()
    if damage == "directory":
        caps.mkdir()
    else:
        assert isinstance(damage, bytes)
        caps.write_bytes(damage)
    async with FileStore(tmp_path) as store:
        await store.append("log", {"i": 2})
        assert [e["i"] for e in await store.query("log")] == [2, 1]
    assert "ignoring the" in caplog.text
    assert str(caps) in caplog.text


async def test_caps_of_a_newer_format_are_still_refused(tmp_path: Path) -> None:
    async with FileStore(tmp_path) as store:
        await store.set_log_retention("log", max_bytes=1 << 20)
    (tmp_path / "log.retention.json").write_bytes(b'{"airstore":"retention","format":99}')
    with pytest.raises(UnsupportedFormatError):
        async with FileStore(tmp_path) as store:
            await store.append("log", {"i": 1})
