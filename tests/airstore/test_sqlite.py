"""SqliteStore beyond the contract: real files, other connections, other processes, bad files."""

from __future__ import annotations

import asyncio
import sqlite3
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import orjson
import pytest

from airstore import (
    CorruptDataError,
    InvalidValueError,
    MemoryStore,
    ReadOnlyStoreError,
    SqliteStore,
    StorageIOError,
    create_storage,
)
from tests.airstore.backends import FakeClock


@pytest.fixture
async def sq(tmp_path: Path, clock: FakeClock) -> AsyncIterator[SqliteStore]:
    async with SqliteStore(tmp_path / "air.db", clock=clock) as store:
        yield store


def _raw(path: Path, sql: str, params: tuple[Any, ...] = ()) -> list[Any]:
    conn = sqlite3.connect(path)
    try:
        return conn.execute(sql, params).fetchall()
    finally:
        conn.close()


async def test_an_awaited_set_is_committed_for_other_connections(
    sq: SqliteStore, tmp_path: Path
) -> None:
    await sq.set("ns", "k", {"v": 1})
    await sq.append("log", {"a": 1})
    rows = _raw(tmp_path / "air.db", "SELECT value FROM kv WHERE ns = 'ns' AND key = 'k'")
    assert [orjson.loads(r[0]) for r in rows] == [{"v": 1}]
    assert _raw(tmp_path / "air.db", "SELECT count(*) FROM log") == [(1,)]


async def test_concurrent_writes_all_land_in_order(sq: SqliteStore) -> None:
    await asyncio.gather(*(sq.set("ns", f"k{i:04d}", i) for i in range(2000)))
    await asyncio.gather(sq.set("ns", "x", 1), sq.delete("ns", "x"), sq.set("ns", "y", 1))
    entries = await asyncio.gather(*(sq.append("log", {"i": i}) for i in range(1500)))
    assert [e["i"] for e in entries] == list(range(1500))
    assert len(await sq.list("ns", prefix="k")) == 2000
    assert await sq.get("ns", "x") is None
    assert await sq.get("ns", "y") == 1
    assert [e["i"] for e in await sq.query("log", limit=3)] == [1499, 1498, 1497]


async def test_expired_keys_are_purged_from_the_file(
    sq: SqliteStore, tmp_path: Path, clock: FakeClock
) -> None:
    await sq.set("ns", "short", 1, ttl=5)
    await sq.set("ns", "kept", 1)
    clock.advance(10)
    assert await sq.get("ns", "short") is None
    await sq.set("ns", "other", 2)  # any write batch purges what expired
    assert _raw(tmp_path / "air.db", "SELECT key FROM kv ORDER BY key") == [("kept",), ("other",)]


async def test_delete_of_an_expired_key_reports_false(sq: SqliteStore, clock: FakeClock) -> None:
    await sq.set("ns", "k", 1, ttl=1)
    clock.advance(2)
    assert await sq.delete("ns", "k") is False


FILTERS: list[dict[str, Any]] = [
    {"v": True},
    {"v": False},
    {"v": 1},
    {"v": 0},
    {"v": 1.0},
    {"v": 2.5},
    {"v": "1"},
    {"v": "true"},
    {"v": None},
    {"v": [1, 2]},
    {"v": {"a": 1}},
    {"odd key": 1},
    {"v": 1, "w": "x"},
    {"missing": None},
]


async def test_sql_filters_agree_with_python_equality(sq: SqliteStore) -> None:
    values: list[Any] = [True, False, 1, 0, 1.0, 2.5, "1", "true", None, [1, 2], {"a": 1}, "x"]
    memory = MemoryStore()
    for i, v in enumerate(values * 3):
        entry = {"i": i, "v": v, "w": "x" if i % 2 else "y", "odd key": i % 3}
        if i % 5 == 0:
            del entry["v"]
        await sq.append("log", entry)
        await memory.append("log", entry)
    for flt in FILTERS:
        for limit, offset in [(100, 0), (2, 1)]:
            want = await memory.query("log", limit=limit, offset=offset, filter=flt)
            got = await sq.query("log", limit=limit, offset=offset, filter=flt)
            assert [e["i"] for e in got] == [e["i"] for e in want], flt
    await memory.close()


async def test_a_python_side_filter_pages_through_many_rows(sq: SqliteStore) -> None:
    await asyncio.gather(*(sq.append("log", {"i": i, "tags": [i % 7]}) for i in range(3000)))
    got = await sq.query("log", filter={"tags": [3]}, limit=5, offset=200)
    want = [i for i in reversed(range(3000)) if i % 7 == 3][200:205]
    assert [e["i"] for e in got] == want


async def test_a_file_that_is_not_a_database_raises_corrupt_data(tmp_path: Path) -> None:
    path = tmp_path / "air.db"
    garbage = b"this is not sqlite at all\n" * 200
    path.write_bytes(garbage)
    with pytest.raises(CorruptDataError) as info:
        await SqliteStore(path).init()
    assert info.value.path == str(path)
    assert path.read_bytes() == garbage


async def test_read_only_store_sees_the_writer_and_refuses_writes(
    sq: SqliteStore, tmp_path: Path, clock: FakeClock
) -> None:
    await sq.set("ns", "k", "v")
    async with SqliteStore(tmp_path / "air.db", read_only=True, clock=clock) as reader:
        assert await reader.get("ns", "k") == "v"
        await sq.append("log", {"late": True})
        assert [e["late"] for e in await reader.query("log")] == [True]
        with pytest.raises(ReadOnlyStoreError):
            await reader.set("ns", "k", "other")
        with pytest.raises(ReadOnlyStoreError):
            await reader.append("log", {"a": 1})
    assert await sq.get("ns", "k") == "v"


async def test_read_only_open_of_a_missing_file_is_a_storage_error(tmp_path: Path) -> None:
    with pytest.raises(StorageIOError):
        await SqliteStore(tmp_path / "nope.db", read_only=True).init()
    assert not (tmp_path / "nope.db").exists()


async def test_a_write_blocked_by_another_writer_fails_clearly_and_keeps_data(
    tmp_path: Path,
) -> None:
    path = tmp_path / "air.db"
    async with SqliteStore(path, busy_timeout=0.05) as store:
        await store.set("ns", "kept", 1)
        other = sqlite3.connect(path, isolation_level=None)
        try:
            other.execute("BEGIN IMMEDIATE")
            with pytest.raises(StorageIOError) as info:
                await store.set("ns", "blocked", 2)
            assert "locked" in str(info.value)
            other.execute("ROLLBACK")
        finally:
            other.close()
        await store.set("ns", "after", 3)
        assert await store.entries("ns") == [("after", 3), ("kept", 1)]


async def test_create_storage_opens_a_sqlite_url(tmp_path: Path) -> None:
    store = await create_storage(f"sqlite:///{tmp_path}/sub/air.db")
    try:
        assert isinstance(store, SqliteStore)
        await store.set("ns", "k", 1)
        assert (tmp_path / "sub" / "air.db").exists()
    finally:
        await store.close()


_CHILD = """
import asyncio, sys, orjson
from airstore import SqliteStore

async def main(path):
    async with SqliteStore(path) as store:
        seen = await store.get("parent", "ready")
        await asyncio.gather(*(store.set("child", f"k{i}", i) for i in range(300)))
        for chunk in range(3):
            await asyncio.gather(
                *(store.append("log", {"who": "child", "i": chunk * 100 + i}) for i in range(100))
            )
        print(orjson.dumps({"seen": seen}).decode())

asyncio.run(main(sys.argv[1]))
"""


async def test_two_processes_read_and_write_the_same_file(tmp_path: Path) -> None:
    path = tmp_path / "air.db"
    async with SqliteStore(path) as store:
        await store.set("parent", "ready", True)
        child = await asyncio.create_subprocess_exec(
            sys.executable, "-c", _CHILD, str(path), stdout=asyncio.subprocess.PIPE
        )
        for chunk in range(3):
            await asyncio.gather(
                *(store.append("log", {"who": "parent", "i": chunk * 100 + i}) for i in range(100))
            )
        out, _ = await asyncio.wait_for(child.communicate(), timeout=60)
        assert child.returncode == 0
        assert orjson.loads(out) == {"seen": True}
        assert len(await store.list("child")) == 300
        assert await store.get("child", "k299") == 299
        for who in ("parent", "child"):
            got = await store.query("log", limit=1000, filter={"who": who})
            assert sorted(e["i"] for e in got) == list(range(300))


async def test_concurrent_gets_return_each_callers_value(sq: SqliteStore, clock: FakeClock) -> None:
    await asyncio.gather(*(sq.set("a", f"k{i}", i) for i in range(2000)))
    await sq.set("b", "k1", "other namespace")
    await sq.set("a", "short", 1, ttl=1)
    clock.advance(2)
    keys = [("a", f"k{i}") for i in range(1999, -1, -1)]
    keys += [("b", "k1"), ("a", "k1"), ("a", "missing"), ("a", "short"), ("b", "k1")]
    got = await asyncio.gather(*(sq.get(ns, key) for ns, key in keys))
    assert got == [*range(1999, -1, -1), "other namespace", 1, None, None, "other namespace"]


async def test_set_many_and_append_many_validate_first_then_commit(sq: SqliteStore) -> None:
    await sq.set_many("ns", [(f"k{i}", i) for i in range(3000)], ttl=60)
    assert len(await sq.list("ns")) == 3000
    with pytest.raises(InvalidValueError):
        await sq.set_many("ns", [("good", 1), ("bad", {1, 2})])
    assert await sq.get("ns", "good") is None
    stored = await sq.append_many("log", [{"i": i} for i in range(2500)])
    assert [e["i"] for e in stored] == list(range(2500))
    assert all(isinstance(e["_ts"], int) for e in stored)
    assert [e["i"] for e in await sq.query("log", limit=2)] == [2499, 2498]
    assert await sq.append_many("log", []) == []


async def test_opening_a_database_another_process_is_writing_waits_for_it(
    tmp_path: Path,
) -> None:
    """Switching a database to WAL while another connection holds a write lock fails at once
    with "database is locked" (SQLite does not wait for ``busy_timeout`` there): one of three
    servers started together on a new SQLite file failed to start. It now waits."""
    path = tmp_path / "air.db"
    other = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    other.execute("CREATE TABLE t (x)")
    other.execute("BEGIN IMMEDIATE")  # another process in the middle of a write
    other.execute("INSERT INTO t VALUES (1)")
    asyncio.get_running_loop().call_later(0.5, other.execute, "COMMIT")
    try:
        async with SqliteStore(path) as store:
            await store.set("ns", "k", 1)
            assert await store.get("ns", "k") == 1
    finally:
        other.close()
