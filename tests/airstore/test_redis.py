"""RedisStore beyond the contract, against real redis-server processes."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest
import redis.asyncio as aioredis

from airstore import (
    CorruptDataError,
    InvalidValueError,
    MemoryStore,
    ReadOnlyStoreError,
    RedisStore,
    StorageIOError,
    create_storage,
)
from tests.airstore.backends import FakeClock
from tests.airstore.test_sqlite import FILTERS
from tests.redis_server import RedisServer, unique_prefix

pytestmark = pytest.mark.redis

BOUND = 10.0  # seconds a failing call may take before the test calls it hung


@pytest.fixture
async def rs(redis_server: RedisServer, clock: FakeClock) -> AsyncIterator[RedisStore]:
    async with RedisStore(redis_server.url(), prefix=unique_prefix(), clock=clock) as store:
        yield store


@pytest.fixture
def own_server() -> Iterator[RedisServer]:
    """A private server this test may kill, restart or reconfigure."""
    with RedisServer() as server:
        yield server


async def test_ttl_is_also_a_native_redis_expiry(rs: RedisStore, raw: Any) -> None:
    await rs.set("ns", "k", 1, ttl=10)
    await rs.set("ns", "forever", 1)
    pttl = await raw.pttl(rs._kv_key("ns", "k"))
    assert 0 < pttl <= 10_000
    assert await raw.pttl(rs._kv_key("ns", "forever")) == -1
    await rs.set("ns", "k", 2)  # an overwrite without TTL clears the native expiry too
    assert await raw.pttl(rs._kv_key("ns", "k")) == -1


async def test_list_prefix_with_glob_characters_is_literal(rs: RedisStore) -> None:
    for key in ["a*b", "a*", "ab", "a?c", "[x]", "[x]y", "x\\y", "a"]:
        await rs.set("ns", key, key)
    assert await rs.list("ns", prefix="a*") == ["a*", "a*b"]
    assert await rs.list("ns", prefix="[x]") == ["[x]", "[x]y"]
    assert await rs.list("ns", prefix="a?") == ["a?c"]
    assert await rs.entries("ns", prefix="x\\") == [("x\\y", "x\\y")]


async def test_list_pages_through_many_keys(rs: RedisStore, clock: FakeClock) -> None:
    await asyncio.gather(*(rs.set("ns", f"k{i:05d}", i) for i in range(2500)))
    await asyncio.gather(*(rs.set("ns", f"t{i}", i, ttl=1) for i in range(50)))
    clock.advance(2)
    keys = await rs.list("ns")
    assert keys == [f"k{i:05d}" for i in range(2500)]


async def test_log_stream_ids_follow_ts(rs: RedisStore, raw: Any, clock: FakeClock) -> None:
    first = await rs.append("log", {"n": 1})
    second = await rs.append("log", {"n": 2})
    clock.advance(1)
    third = await rs.append("log", {"n": 3})
    ids = [i.decode() for i, _ in await raw.xrange(rs._log_key("log"))]
    assert ids == [f"{first['_ts']}-0", f"{second['_ts']}-1", f"{third['_ts']}-0"]


async def test_a_back_dated_entry_is_kept_in_arrival_order(
    rs: RedisStore, clock: FakeClock
) -> None:
    now_ms = int(clock.now * 1000)
    await rs.append("log", {"n": 1})
    old = await rs.append("log", {"n": 2, "_ts": now_ms - 60_000})
    assert old["_ts"] == now_ms - 60_000
    await rs.append("log", {"n": 3, "_ts": -5})
    got = await rs.query("log")
    assert [(e["n"], e["_ts"]) for e in got] == [(3, -5), (2, now_ms - 60_000), (1, now_ms)]


async def test_log_retention_trims_the_stream(redis_server: RedisServer, raw: Any) -> None:
    async with RedisStore(redis_server.url(), prefix=unique_prefix(), max_log_entries=100) as store:
        await asyncio.gather(*(store.append("log", {"i": i}) for i in range(2000)))
        length = await raw.xlen(store._log_key("log"))
        assert 100 <= length < 2000
        assert [e["i"] for e in await store.query("log", limit=2)] == [1999, 1998]


async def test_filters_agree_with_python_equality_across_pages(rs: RedisStore) -> None:
    values: list[Any] = [True, False, 1, 0, 1.0, 2.5, "1", "true", None, [1, 2], {"a": 1}, "x"]
    memory = MemoryStore()
    for i, v in enumerate(values * 100):
        entry = {"i": i, "v": v, "w": "x" if i % 2 else "y", "odd key": i % 3}
        if i % 5 == 0:
            del entry["v"]
        await memory.append("log", await rs.append("log", entry))
    for flt in FILTERS:
        for limit, offset in [(2000, 0), (3, 250)]:
            want = await memory.query("log", limit=limit, offset=offset, filter=flt)
            got = await rs.query("log", limit=limit, offset=offset, filter=flt)
            assert [e["i"] for e in got] == [e["i"] for e in want], flt
    await memory.close()


async def test_server_side_filter_continues_past_its_scan_budget_and_windows(
    rs: RedisStore, clock: FakeClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("airstore._redis_filter.SCAN_BUDGET", 7)  # many script calls
    memory = MemoryStore(clock=clock)
    for i in range(300):
        entry = {"i": i, "tool": "rare" if i % 23 == 0 else f"t{i % 5}", "note": None}
        await memory.append("log", await rs.append("log", entry))
        clock.advance(0.01)
    now_ms = int(clock.now * 1000)
    windows = [(1000, 0, None, None), (4, 3, None, None), (50, 1, now_ms - 2500, now_ms - 400)]
    for flt in [{"tool": "rare"}, {"tool": "t3", "note": None}, {"tool": "none"}]:
        for limit, offset, lo, hi in windows:
            want = await memory.query(
                "log", limit=limit, offset=offset, since=lo, until=hi, filter=flt
            )
            got = await rs.query("log", limit=limit, offset=offset, since=lo, until=hi, filter=flt)
            assert [e["i"] for e in got] == [e["i"] for e in want], (flt, limit, offset, lo)
    assert len(await rs.query("log", filter={"tool": "rare"}, limit=1000)) == 14
    await memory.close()


async def test_server_side_filter_reports_a_foreign_stream_entry(rs: RedisStore, raw: Any) -> None:
    await rs.append("log", {"tool": "x"})
    await raw.xadd(rs._log_key("log"), {"other": b"{}"})
    with pytest.raises(CorruptDataError):
        await rs.query("log", filter={"tool": "x"})


async def test_two_stores_on_one_database_share_everything(
    redis_server: RedisServer, rs: RedisStore
) -> None:
    async with RedisStore(redis_server.url(), prefix=rs._prefix) as other:
        await rs.set("ns", "k", {"from": "one"})
        await other.append("log", {"from": "two"})
        assert await other.get("ns", "k") == {"from": "one"}
        assert [e["from"] for e in await rs.query("log")] == ["two"]


async def test_more_concurrent_readers_than_connections_all_get_answers(
    redis_server: RedisServer,
) -> None:
    async with RedisStore(redis_server.url(), prefix=unique_prefix(), max_connections=2) as store:
        await store.append_many("log", [{"i": i} for i in range(50)])
        await store.set("ns", "k", 1)
        results = await asyncio.gather(
            *(store.query("log", limit=5) for _ in range(40)),
            *(store.list("ns") for _ in range(40)),
        )
        assert all([e["i"] for e in r] == [49, 48, 47, 46, 45] for r in results[:40])
        assert all(r == ["k"] for r in results[40:])


async def test_a_foreign_value_is_reported_as_corrupt(rs: RedisStore, raw: Any) -> None:
    await raw.set(rs._kv_key("ns", "k"), b"not framed")
    with pytest.raises(CorruptDataError):
        await rs.get("ns", "k")


async def test_read_only_store_refuses_writes(redis_server: RedisServer) -> None:
    prefix = unique_prefix()
    async with RedisStore(redis_server.url(), prefix=prefix) as writer:
        await writer.set("ns", "k", 1)
    async with RedisStore(redis_server.url(), prefix=prefix, read_only=True) as reader:
        assert await reader.get("ns", "k") == 1
        with pytest.raises(ReadOnlyStoreError):
            await reader.set("ns", "k", 2)
        with pytest.raises(ReadOnlyStoreError):
            await reader.append("log", {"a": 1})


async def test_create_storage_opens_a_redis_url(redis_server: RedisServer) -> None:
    store = await create_storage(redis_server.url(), prefix=unique_prefix())
    try:
        assert isinstance(store, RedisStore)
        await store.set("ns", "k", 1)
        assert await store.get("ns", "k") == 1
    finally:
        await store.close()


async def test_a_prefix_in_the_url_scopes_the_keys(redis_server: RedisServer, raw: Any) -> None:
    prefix = unique_prefix()
    store = await create_storage(f"{redis_server.url()}?prefix={prefix}")
    try:
        await store.set("ns", "k", 1)
        assert await raw.exists(f"{prefix}kv:ns:k") == 1
    finally:
        await store.close()


async def test_an_unreachable_server_fails_init_clearly() -> None:
    with RedisServer() as server:
        url = server.url()
    store = RedisStore(url, connect_timeout=1)
    with pytest.raises(StorageIOError) as info:
        await asyncio.wait_for(store.init(), BOUND)
    assert "unreachable" in str(info.value)
    await store.close()


async def test_killed_server_gives_clear_errors_and_a_restart_heals(
    own_server: RedisServer,
) -> None:
    async with RedisStore(own_server.url(), prefix="k:") as store:
        await store.set("ns", "before", 1)
        own_server.kill()
        calls = [
            store.set("ns", "k", 1),
            store.get("ns", "before"),
            store.append("log", {"a": 1}),
            store.query("log"),
            store.list("ns"),
        ]
        for call in calls:
            with pytest.raises(StorageIOError) as info:
                await asyncio.wait_for(call, BOUND)
            assert "unreachable" in str(info.value)
        own_server.start()
        await asyncio.wait_for(store.set("ns", "after", 2), BOUND)
        assert await store.get("ns", "after") == 2
        assert [e["a"] for e in await store.query("log") if "a" in e] == []
        await store.append("log", {"a": 2})
        assert [e["a"] for e in await store.query("log")] == [2]


async def _wait_for_replica_link(url: str) -> None:
    client = aioredis.Redis.from_url(url)
    try:
        deadline = time.monotonic() + BOUND
        while (await client.info("replication")).get("master_link_status") != "up":
            assert time.monotonic() < deadline, "replica never synced"
            await asyncio.sleep(0.05)
    finally:
        await client.aclose()


async def test_a_read_only_replica_gives_clear_errors_and_keeps_data(
    own_server: RedisServer,
) -> None:
    async with RedisStore(own_server.url(), prefix="r:") as master:
        await master.set("ns", "k", {"v": 1})
        await master.append("log", {"n": 1})
        await master._client.config_set("repl-diskless-sync-delay", "0")  # sync at once
    with RedisServer(extra_args=("--replicaof", "127.0.0.1", str(own_server.port))) as replica:
        await _wait_for_replica_link(replica.url())
        async with RedisStore(replica.url(), prefix="r:") as store:
            for call in (store.set("ns", "k", 2), store.append("log", {"n": 2})):
                with pytest.raises(StorageIOError) as info:
                    await asyncio.wait_for(call, BOUND)
                assert "read-only replica" in str(info.value)
            with pytest.raises(StorageIOError):
                await store.delete("ns", "k")
            assert await store.get("ns", "k") == {"v": 1}
            assert [e["n"] for e in await store.query("log")] == [1]
            assert await store.query("log", filter={"n": 1, "_ts": None}) == []  # server-side


async def test_out_of_memory_gives_clear_errors_and_keeps_data(own_server: RedisServer) -> None:
    admin = aioredis.Redis.from_url(own_server.url())
    try:
        async with RedisStore(own_server.url(), prefix="m:") as store:
            await store.set("ns", "k", "kept")
            await store.append("log", {"n": 1})
            await admin.config_set("maxmemory-policy", "noeviction")
            await admin.config_set("maxmemory", "1")
            for call in (store.set("ns", "new", "x" * 1000), store.append("log", {"n": 2})):
                with pytest.raises(StorageIOError) as info:
                    await asyncio.wait_for(call, BOUND)
                assert "out of memory" in str(info.value)
            assert await store.get("ns", "k") == "kept"
            assert [e["n"] for e in await store.query("log")] == [1]
            await admin.config_set("maxmemory", "0")
            await store.set("ns", "new", "x")
            assert await store.entries("ns") == [("k", "kept"), ("new", "x")]
    finally:
        await admin.aclose()


async def test_mixed_commands_of_one_turn_keep_their_order(rs: RedisStore) -> None:
    results = await asyncio.gather(
        rs.set("ns", "k", 1),
        rs.get("ns", "k"),
        rs.append("a", {"n": 1}),
        rs.append("b", {"n": 1}),
        rs.set("ns", "k", 2, ttl=30),
        rs.append("a", {"n": 2}),
        rs.get("ns", "k"),
        rs.delete("ns", "k"),
        rs.get("ns", "k"),
        rs.delete("ns", "k"),
    )
    assert results[1] == 1
    assert results[6] == 2
    assert results[7:] == [True, None, False]
    assert [e["n"] for e in await rs.query("a")] == [2, 1]
    assert [e["n"] for e in await rs.query("b")] == [1]


async def test_set_many_and_append_many_validate_first_then_write(
    rs: RedisStore, clock: FakeClock
) -> None:
    await rs.set_many("ns", [(f"k{i}", i) for i in range(3000)], ttl=60)
    assert len(await rs.list("ns")) == 3000
    with pytest.raises(InvalidValueError):
        await rs.set_many("ns", [("good", 1), ("bad", {1, 2})])
    assert await rs.get("ns", "good") is None
    clock.advance(61)
    assert await rs.list("ns") == []
    stored = await rs.append_many("log", [{"i": i} for i in range(2500)])
    assert [e["i"] for e in stored] == list(range(2500))
    assert [e["i"] for e in await rs.query("log", limit=2)] == [2499, 2498]


async def test_appends_after_the_newest_entry_was_deleted_still_work(
    rs: RedisStore, raw: Any, clock: FakeClock
) -> None:
    await rs.append("log", {"n": 1})
    clock.advance(5)
    newest = await rs.append("log", {"n": 2})
    ids = await raw.xrevrange(rs._log_key("log"), count=1)
    await raw.xdel(rs._log_key("log"), ids[0][0])  # someone else removed the newest entry
    await rs.append("log", {"n": 3, "_ts": newest["_ts"] - 1000})
    await rs.append("log", {"n": 4})
    assert [e["n"] for e in await rs.query("log")] == [4, 3, 1]
