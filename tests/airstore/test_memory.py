"""MemoryStore specifics beyond the contract suite."""

from __future__ import annotations

import tracemalloc

from airstore import MemoryStore
from tests.airstore.backends import FakeClock


async def test_refreshing_one_key_with_a_ttl_does_not_grow_memory() -> None:
    clock = FakeClock()
    async with MemoryStore(clock=clock) as store:
        for i in range(2_000):  # warm up: dicts and the heap reach their working size
            await store.set("sessions", "s1", {"n": i}, ttl=3600)
            await store.incr("counters", "c", ttl=60)
            await store.delete("counters", "c")
        tracemalloc.start()
        try:
            before = tracemalloc.get_traced_memory()[0]
            for i in range(50_000):
                await store.set("sessions", "s1", {"n": i}, ttl=3600)
                await store.incr("counters", "c", ttl=60)
                await store.delete("counters", "c")
            grown = tracemalloc.get_traced_memory()[0] - before
        finally:
            tracemalloc.stop()
        assert grown < 500_000, grown  # one stale heap entry per call: ~10 MB
        assert await store.get("sessions", "s1") == {"n": 49_999}
        clock.advance(3601)
        assert await store.get("sessions", "s1") is None
        assert await store.list("sessions") == []
