"""StoreSink on stores with ``append_many`` (real SQLite, real Redis): one call per chunk, a
refused record does not take its chunk down, a failed chunk waits in the backlog."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterable
from pathlib import Path
from typing import Any

import pytest

from airmeter import CALLS_NAMESPACE, CallRecord, Layer, StoreSink, snapshot
from airmeter.store_sink import APPEND_CHUNK
from airstore import RedisStore, SqliteStore, Store
from airstore.errors import StorageIOError
from tests.airmeter.helpers import T0, make_records
from tests.redis_server import shared_redis_server, unique_prefix


class CountingSqlite(SqliteStore):
    """A real SqliteStore that counts its log writes and can refuse ``append_many``."""

    def __init__(self, path: Path) -> None:
        super().__init__(path)
        self.appends = 0
        self.batches = 0
        self.down = False

    async def append(self, ns: str, entry: dict[str, Any]) -> dict[str, Any]:
        self.appends += 1
        return await super().append(ns, entry)

    async def append_many(self, ns: str, entries: Iterable[dict[str, Any]]) -> list[Any]:
        if self.down:
            raise StorageIOError("disk unplugged", namespace=ns)
        self.batches += 1
        return await super().append_many(ns, entries)


@pytest.fixture
async def sqlite(tmp_path: Path) -> AsyncIterator[CountingSqlite]:
    async with CountingSqlite(tmp_path / "meter.db") as store:
        yield store


def _odd(request_id: str, *, captured: bool) -> CallRecord:
    """A record the store refuses as invalid (a non-JSON value) — in its captured arguments
    (then it can be stored without them) or in another field (then it cannot be stored)."""
    return CallRecord(
        ts_ms=T0 + 1000,
        server="demo",
        tool="odd",
        layer=Layer.L2,
        latency_ms=1.0,
        ok=True,
        request_id=request_id,
        arguments={"x": object()} if captured else None,
        category=None if captured else object(),  # type: ignore[arg-type]
    )


async def _logged_ids(store: Store) -> list[str]:
    entries = await store.query(CALLS_NAMESPACE, limit=100_000)
    return sorted(str(e["request_id"]) for e in entries)


async def test_records_go_to_sqlite_in_chunks_not_one_transaction_each(
    sqlite: CountingSqlite,
) -> None:
    n = 2 * APPEND_CHUNK + 10
    records = make_records(n)
    sink = StoreSink(sqlite, writer="w")
    await sink.write(records)
    await sink.close()
    assert sqlite.appends == 0
    assert sqlite.batches == 3
    assert await _logged_ids(sqlite) == sorted(str(i) for i in range(n))
    assert sink.written == n
    assert (await snapshot(sqlite)).total_calls == n


async def test_a_refused_record_in_a_chunk_leaves_the_others_written(
    sqlite: CountingSqlite,
) -> None:
    records = make_records(20)
    batch = [*records[:5], _odd("stripped", captured=True), *records[5:15]]
    batch += [_odd("bad", captured=False), *records[15:]]
    sink = StoreSink(sqlite, writer="w")
    await sink.write(batch)
    await sink.close()
    ids = await _logged_ids(sqlite)
    assert ids == sorted([*(str(i) for i in range(20)), "stripped"])
    assert sink.rejected == 1
    assert sink.written == len(batch)
    logged = await sqlite.query(CALLS_NAMESPACE, filter={"request_id": "stripped"})
    assert "arguments" not in logged[0]
    assert (await snapshot(sqlite)).total_calls == 21  # the rejected one is not counted


async def test_a_failed_chunk_waits_in_the_backlog_and_is_written_once(
    sqlite: CountingSqlite,
) -> None:
    records = make_records(3 * APPEND_CHUNK)
    sink = StoreSink(sqlite, writer="w", persist_interval=3600)
    await sink.write(records[:APPEND_CHUNK])
    sqlite.down = True
    with pytest.raises(StorageIOError):
        await sink.write(records[APPEND_CHUNK:])
    assert sink.backlog == 2 * APPEND_CHUNK
    sqlite.down = False
    await sink.close()
    assert sink.backlog == 0
    assert await _logged_ids(sqlite) == sorted(str(i) for i in range(len(records)))
    assert (await snapshot(sqlite)).total_calls == len(records)


@pytest.mark.redis
async def test_records_go_to_redis_in_chunks_with_a_refused_one_skipped() -> None:
    server = shared_redis_server()
    n = APPEND_CHUNK + 100
    records = make_records(n)
    async with RedisStore(server.url(), prefix=unique_prefix(), max_log_entries=None) as store:
        sink = StoreSink(store, writer="w")
        await sink.write([*records[:50], _odd("bad", captured=False), *records[50:]])
        await sink.close()
        assert await _logged_ids(store) == sorted(str(i) for i in range(n))
        assert sink.rejected == 1
        assert (await snapshot(store)).total_calls == n
