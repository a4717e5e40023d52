"""A counter with an expiry, incremented over and over (a per-client budget: three ``incr`` a
call), holds one entry in FileStore's expiry heap, not one per ``incr`` until it expires — in
the writer, and in a store that replays the journal (a reopen, another writer's records)."""

from __future__ import annotations

from pathlib import Path

from airstore import FileStore

TTL = 32 * 86_400.0


async def test_incrementing_a_ttl_counter_keeps_one_expiry_entry(tmp_path: Path) -> None:
    async with FileStore(tmp_path / "data", handle_sigterm=False) as store:
        for _ in range(5_000):
            await store.incr("meter.budget", "cost-month:1:abc", 5, ttl=TTL)
        await store.set("meter.budget", "other", 1, ttl=TTL)
        space = store._kv.spaces["meter.budget"]
        assert len(space.items) == 2
        assert len(space.expiry) == 2
        assert await store.get("meter.budget", "cost-month:1:abc") == 25_000
    async with FileStore(tmp_path / "data", read_only=True) as reader:
        assert await reader.get("meter.budget", "cost-month:1:abc") == 25_000
        assert len(reader._kv.spaces["meter.budget"].expiry) <= 2


async def test_a_counter_given_a_new_expiry_still_expires_at_it(tmp_path: Path) -> None:
    now = [1_000.0]
    async with FileStore(tmp_path / "data", clock=lambda: now[0], handle_sigterm=False) as store:
        await store.incr("c", "k", 1, ttl=10)
        await store.set("c", "k", 7, ttl=100)  # a new expiry: 1,100
        now[0] += 50
        assert await store.get("c", "k") == 7  # the old entry (1,010) did not expire it
        now[0] += 51
        assert await store.get("c", "k") is None
