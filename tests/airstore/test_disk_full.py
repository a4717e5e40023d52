"""A full disk, for real: a small tmpfs the test mounts (issue 12, item 2).

``sync``: the write that cannot reach its journal is refused, never acknowledged, and service
goes on once there is space. ``journal``: the first failed write loses (and reports) that loop
turn's acknowledged writes, then every write is refused until the disk takes writes again.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from airstore import FileStore, StorageIOError
from airstore._recovery import check_directory

VALUE = {"pad": "v" * 900}


@pytest.fixture
def tiny_disk(tmp_path: Path) -> Iterator[Path]:
    """A 2 MiB tmpfs, nearly filled by ``filler`` (delete it to give the space back)."""
    if os.geteuid() != 0:
        pytest.skip("mounting a tmpfs needs root; CI runs the suite as root")
    mnt = tmp_path / "tiny"
    mnt.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=2m", "tmpfs", str(mnt)], check=True)
    try:
        with open(mnt / "filler", "wb") as fh:
            fh.write(b"\0" * (2 * 1024 * 1024 - 160 * 1024))  # leave ~160 KiB
        yield mnt
    finally:
        subprocess.run(["umount", "-l", str(mnt)], check=False)


def _air_store_check(data: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "aircli", "store", "check", "--store", f"file://{data}"],
        capture_output=True,
        text=True,
        timeout=60,
    )


async def _until_accepted(store: FileStore, key: str) -> None:
    for _ in range(200):  # probes every 0.5 s: bounded wait for the store to resume
        try:
            await store.set("ns", key, 1)
        except StorageIOError:
            await asyncio.sleep(0.05)
        else:
            return
    raise AssertionError("writes were never accepted again")


async def test_sync_mode_refuses_the_write_that_cannot_reach_its_journal(
    tiny_disk: Path,
) -> None:
    data = tiny_disk / "data"
    store = FileStore(data, durability="sync", flush_interval=3600)
    await store.init()
    acked: list[int] = []
    refused = None
    for i in range(10_000):
        try:
            await store.set("ns", f"k{i}", {**VALUE, "i": i})
        except StorageIOError:
            refused = i
            break
        acked.append(i)
    assert refused is not None, "the disk never filled"
    assert await store.get("ns", f"k{refused}") is None  # refused: not in memory either
    with pytest.raises(StorageIOError):
        await store.append("log", {"i": refused})
    (tiny_disk / "filler").unlink()  # space again: service goes on, nothing else needed
    await store.set("ns", "after", 1)
    await store.append("log", {"i": "after"})
    await store.close()
    async with FileStore(data, read_only=True) as reader:
        for i in acked:
            assert await reader.get("ns", f"k{i}") == {**VALUE, "i": i}
        assert await reader.get("ns", f"k{refused}") is None
        assert await reader.get("ns", "after") == 1
        assert [e["i"] for e in await reader.query("log")] == ["after"]
    assert (await check_directory(str(data))).ok


async def test_journal_mode_refuses_writes_after_a_failed_one_and_resumes_by_itself(
    tiny_disk: Path,
) -> None:
    data = tiny_disk / "data"
    store = FileStore(data, flush_interval=3600)
    await store.init()
    turns: list[list[int]] = []
    refused_at = None
    for turn in range(10_000):
        this: list[int] = []
        turns.append(this)
        try:
            for j in range(5):
                i = turn * 5 + j
                await store.set("ns", f"k{i}", {**VALUE, "i": i})
                await store.append("log", {"i": i})
                this.append(i)
        except StorageIOError:
            refused_at = turn
            break
        await asyncio.sleep(0)  # the turn ends: its records are committed (or refused)
    assert refused_at is not None, "the disk never filled"
    assert store.lost_writes > 0
    failed_turn = turns[refused_at - 1]
    with pytest.raises(StorageIOError):  # refusing, until the disk takes a write again
        await store.incr("ns", "n")
    (tiny_disk / "filler").unlink()
    await _until_accepted(store, "after")
    assert await store.incr("ns", "n") == 1
    await store.close()
    async with FileStore(data, read_only=True) as reader:
        for done in turns[: refused_at - 1]:
            for i in done:
                assert await reader.get("ns", f"k{i}") == {**VALUE, "i": i}
        logged = {e["i"] for e in await reader.query("log", limit=100_000)}
        assert logged >= {i for done in turns[: refused_at - 1] for i in done}
        # the turn whose commit failed: what is missing of it is exactly what was counted lost
        missing = [i for i in failed_turn if await reader.get("ns", f"k{i}") is None]
        missing += [i for i in failed_turn if i not in logged]
        assert len(missing) == store.lost_writes
        assert await reader.get("ns", "after") == 1
    report = await check_directory(str(data))
    assert report.ok
    (event,) = report.events
    assert event["event"] == "lost_writes"
    assert event["count"] == store.lost_writes
    out = _air_store_check(data)
    assert f"lost writes: {event['count']} acknowledged writes dropped" in out.stdout
