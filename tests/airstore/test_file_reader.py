"""A read-only FileStore beside a writer in the same process, at the awkward moments."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from pathlib import Path

import pytest

import airstore._logfile as logfile
from airstore import FileStore
from airstore._filenames import SlotFiles
from airstore._journal import Journal, snapshot_path_of


async def test_reader_between_snapshot_and_new_journal_misses_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The reader loads the new snapshot while the old journal is still in place (a compaction
    between its two renames); the writer then puts the new journal in place and writes on."""
    deferred: list[tuple[Journal, int, bytes]] = []
    original = Journal.start_locked

    def snapshot_only(
        self: Journal, base: int, records: bytes = b"", snapshot: str | None = None
    ) -> None:
        assert snapshot is not None
        os.replace(snapshot, snapshot_path_of(self.path))
        deferred.append((self, base, records))

    async with (
        FileStore(tmp_path, flush_interval=3600) as writer,
        FileStore(tmp_path, read_only=True) as reader,
    ):
        for i in range(20):
            await writer.set("ns", f"a{i:02d}", i)
        await asyncio.sleep(0)  # the writer's loop turn ends: records committed
        monkeypatch.setattr(Journal, "start_locked", snapshot_only)
        await writer._spaces["ns"].compact()  # snapshot renamed, the journal switch held back
        assert len(await reader.list("ns")) == 20  # reader: new snapshot + the old journal
        monkeypatch.setattr(Journal, "start_locked", original)
        journal, base, records = deferred.pop()
        with journal.locked():
            original(journal, base, records)  # the new journal replaces the old one
        for i in range(40):  # the new journal grows past the reader's old offset
            await writer.set("ns", f"b{i:02d}", i)
        await asyncio.sleep(0)  # the writer's loop turn ends: lines written
        want = [f"a{i:02d}" for i in range(20)] + [f"b{i:02d}" for i in range(40)]
        assert await reader.list("ns") == want
        assert await reader.get("ns", "b00") == 0


async def test_reader_sees_every_written_line_across_rotations_and_retention(
    tmp_path: Path,
) -> None:
    async with (
        FileStore(
            tmp_path, max_log_bytes=1500, max_log_segments=2, compress_segments=False
        ) as writer,
        FileStore(tmp_path, read_only=True) as reader,
    ):
        written: list[int] = []
        for i in range(300):
            await writer.append("log", {"i": i, "pad": "y" * (i % 40)})
            written.append(i)
            if i % 7 == 0:
                await asyncio.sleep(0)  # the loop turn ends: lines written (and maybe rotated)
                seen = [e["i"] for e in await reader.query("log", limit=10_000)]
                mine = [e["i"] for e in await writer.query("log", limit=10_000)]
                assert seen == mine  # same lines, newest first, nothing missed or doubled
                assert seen[0] == written[-1]
                assert seen == list(range(written[-1], written[-1] - len(seen), -1))
        segments = [n for n in os.listdir(tmp_path) if n.startswith("log.log.0")]
        assert len(segments) == 2  # rotated and pruned while the reader read
        assert reader.recovery == []


_ROTATING_WRITER = """
import asyncio, sys
from airstore import FileStore
async def main():
    async with FileStore(sys.argv[1], max_log_bytes=64 * 1024, compress_segments=False,
                         handle_sigterm=False) as store:
        for i in range(int(sys.argv[2]), int(sys.argv[3])):
            await store.append("log", {"i": i, "pad": "x" * 200})
asyncio.run(main())
"""


async def test_a_query_racing_another_writers_rotation_still_returns_every_entry(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Another process rotates the log between the reader's listing of the files and its
    reading them: the reader lists again (the renamed file was in neither place: it returned
    nothing at all)."""
    data = str(tmp_path)
    argv = [sys.executable, "-c", _ROTATING_WRITER, data]
    await asyncio.to_thread(subprocess.run, [*argv, "0", "200"], check=True)
    real_listing = logfile.slot_files
    raced: list[int] = []

    def listing_then_rotation(root: str, ns: str) -> list[SlotFiles]:
        files = real_listing(root, ns)
        if not raced:
            raced.append(1)
            subprocess.run([*argv, "200", "300"], check=True)
        return files

    async with FileStore(data, read_only=True) as reader:
        assert len(await reader.query("log", limit=10**6)) == 200
        monkeypatch.setattr(logfile, "slot_files", listing_then_rotation)
        got = await reader.query("log", limit=10**6)
    assert raced
    assert [e["i"] for e in got] == list(range(299, -1, -1))
