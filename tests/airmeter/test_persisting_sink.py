"""The meter persists, reads and counts any sink that satisfies ``PersistingSink``, not only
its own ``StoreSink``: it matches the Protocol, never the class."""

from __future__ import annotations

from collections.abc import Sequence

from airmeter import CallRecord, Meter, PersistingSink, StoreSink
from airstore import MemoryStore
from airstore.types import Store
from tests.airmeter.helpers import make_records


class _Audited:
    """A persisting sink of the user's own: a StoreSink behind an audit of its persists."""

    def __init__(self, store: Store) -> None:
        self._inner = StoreSink(store, writer="audited", persist_interval=3600.0)
        self.persists = 0

    @property
    def store(self) -> Store:
        return self._inner.store

    @property
    def backlog(self) -> int:
        return self._inner.backlog

    @property
    def unpersisted(self) -> int:
        return self._inner.unpersisted + 3  # three it says it lost, for the meter to count

    def persist_due(self) -> bool:
        return self._inner.persist_due()

    async def persist(self) -> None:
        self.persists += 1
        await self._inner.persist()

    async def write(self, records: Sequence[CallRecord]) -> None:
        await self._inner.write(records)

    async def close(self) -> None:
        await self._inner.close()


async def test_a_persisting_sink_of_another_class_is_persisted_read_and_counted() -> None:
    store = MemoryStore()
    sink = _Audited(store)
    assert isinstance(sink, PersistingSink)
    async with Meter(sinks=[sink], flush_interval=0.01) as meter:
        assert meter.store is store  # snapshots read the sink's store
        for record in make_records(40, minutes=3):
            meter.record(record)
        snap = await meter.snapshot()
        assert sink.persists >= 1  # persisted before the snapshot read the store
        assert snap.total_calls == 40
        assert meter.stats.dropped == 3  # what it lost counts as dropped
