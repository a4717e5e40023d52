"""StoreSink when the store fails: a bounded backlog retried on the next write; bad values."""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from airmeter import CALLS_NAMESPACE, CallRecord, Layer, Meter, StoreSink, snapshot
from airmeter.histogram import bucket_of, percentiles
from airmeter.rollups import ROLLUPS_NAMESPACE, RollupBook, parse_minute_doc
from airstore import MemoryStore
from airstore.errors import StorageIOError
from tests.airmeter.helpers import T0, exact_percentile, make_records


class FlakyStore(MemoryStore):
    """A MemoryStore whose appends fail while ``down`` is set.

    Every store has ``append_many`` now; this double hides it, so the sink takes its
    record-by-record path, where a failure mid-batch keeps exactly the unwritten records.
    """

    append_many = None  # type: ignore[assignment]

    def __init__(self) -> None:
        super().__init__()
        self.down = False
        self.fail_after = 0

    async def append(self, ns: str, entry: dict[str, Any]) -> dict[str, Any]:
        if self.down:
            if self.fail_after <= 0:
                raise StorageIOError("connection refused", namespace=ns)
            self.fail_after -= 1
        return await super().append(ns, entry)


async def test_records_survive_a_store_outage_through_the_backlog() -> None:
    store = FlakyStore()
    meter = Meter(store=store, instance_id="w")
    records = make_records(300)
    store.down, store.fail_after = True, 50  # fails in the middle of the first batch
    for r in records[:100]:
        meter.record(r)
    await meter.flush()
    assert meter.stats.sink_errors == 1
    sink = meter.sinks[0]
    assert isinstance(sink, StoreSink)
    assert sink.backlog == 50
    for r in records[100:]:
        meter.record(r)
    await meter.flush()  # still down: the backlog grows, nothing is lost
    assert sink.backlog == 250
    store.down = False
    await meter.stop()  # the store is back: close() retries the backlog
    logged = await store.query(CALLS_NAMESPACE, limit=1000)
    assert sorted(int(e["request_id"]) for e in logged) == list(range(300))
    assert (await snapshot(store)).total_calls == 300


async def test_backlog_is_bounded_and_overflow_is_counted() -> None:
    store = FlakyStore()
    sink = StoreSink(store, writer="w", max_backlog=10)
    store.down = True
    for chunk in range(3):
        with contextlib.suppress(StorageIOError):
            await sink.write(make_records(20, seed=chunk))
    assert sink.backlog == 10
    assert sink.dropped == 50


async def test_a_record_the_store_refuses_is_kept_without_its_captured_values() -> None:
    store = MemoryStore()
    sink = StoreSink(store, writer="w")
    odd = CallRecord(
        ts_ms=T0,
        server="s",
        tool="t",
        layer=Layer.L2,
        latency_ms=1,
        ok=True,
        arguments={"x": object()},
        request_id="1",
    )
    await sink.write(
        [
            odd,
            CallRecord(
                ts_ms=T0,
                server="s",
                tool="t",
                layer=Layer.L2,
                latency_ms=1,
                ok=True,
                request_id="2",
            ),
        ]
    )
    await sink.close()
    logged = await store.query(CALLS_NAMESPACE)
    assert sorted(e["request_id"] for e in logged) == ["1", "2"]
    assert all("arguments" not in e for e in logged)


class FailingOnceStore(MemoryStore):
    """A MemoryStore whose first ``set`` into namespaces starting with ``target`` fails."""

    def __init__(self, target: str) -> None:
        super().__init__()
        self.target = target
        self.failures = 0

    async def set(self, ns: str, key: str, value: Any, ttl: float | None = None) -> None:
        if ns.startswith(self.target) and self.failures == 0:
            self.failures += 1
            raise StorageIOError("connection reset", namespace=ns)
        await super().set(ns, key, value, ttl=ttl)


@pytest.mark.parametrize(
    "target",
    [f"{ROLLUPS_NAMESPACE}.", ROLLUPS_NAMESPACE],
    ids=["minute-document", "hour-index"],
)
async def test_rollups_whose_persist_failed_are_written_by_the_next_one(target: str) -> None:
    store = FailingOnceStore(target)
    records = make_records(200, minutes=3)
    sink = StoreSink(store, writer="w", persist_interval=3600)
    await sink.write(records)
    with pytest.raises(StorageIOError):
        await sink.persist()
    assert store.failures == 1
    await sink.persist()  # no new records: only the minutes re-marked after the failure
    snap = await snapshot(store)
    assert snap.total_calls == 200
    assert snap.error_count == sum(1 for r in records if not r.ok)
    with contextlib.suppress(StorageIOError):
        await sink.close()


latencies = st.lists(
    st.floats(min_value=0.01, max_value=60_000, allow_nan=False), min_size=1, max_size=300
)


@settings(deadline=None)  # a loaded machine is not a failure
@given(latencies)
def test_histogram_percentiles_are_within_one_and_a_half_percent_of_exact(
    values: list[float],
) -> None:
    hist: dict[int, int] = {}
    for v in values:
        b = bucket_of(v)
        hist[b] = hist.get(b, 0) + 1
    for q, got in zip((50, 95, 99), percentiles(hist, (50, 95, 99)), strict=True):
        exact = exact_percentile(values, q)
        assert got is not None
        assert abs(got - exact) <= 0.0149 * exact


@settings(deadline=None)  # a loaded machine is not a failure
@given(
    st.lists(
        st.tuples(
            st.sampled_from(["a", "b"]), st.floats(0.01, 1000), st.booleans(), st.integers(0, 179)
        ),
        max_size=60,
    )
)
def test_rollup_documents_round_trip_and_sum_up(calls: list[tuple[str, float, bool, int]]) -> None:
    book = RollupBook()
    for tool, latency, ok, second in calls:
        book.add(
            CallRecord(
                ts_ms=T0 + second * 1000,
                server="s",
                tool=tool,
                layer=Layer.L3,
                latency_ms=latency,
                ok=ok,
                error_type=None if ok else "tool_error",
            )
        )
    docs = [book.minute_doc(m) for m in book.take_dirty()]
    rows = [r for d in docs for r in parse_minute_doc(d)]
    assert sum(r.calls for r in rows) == len(calls)
    assert sum(r.errors for r in rows) == sum(1 for c in calls if not c[2])
    for doc in docs:  # a document parsed and rebuilt is the same document
        again = RollupBook()
        again.merge_rows(parse_minute_doc(doc))
        assert again.minute_doc(doc["minute"]) == doc


@pytest.mark.parametrize("kind", ["memory", "sqlite"])
async def test_a_late_call_written_while_a_persist_waits_is_counted_once(
    kind: str, tmp_path: Any
) -> None:
    from airmeter.rollups import HOUR_MS, MINUTE_MS, hour_namespace, minute_key
    from airstore import SqliteStore

    def rec(ts: int, i: int) -> CallRecord:
        return CallRecord(ts_ms=ts, server="s", tool="t", layer=Layer.L2, latency_ms=1.0,
                          ok=True, request_id=str(i))  # fmt: skip

    minute = T0 - T0 % MINUTE_MS
    store = MemoryStore() if kind == "memory" else SqliteStore(tmp_path / "air.db")
    async with store:
        sink = StoreSink(store, writer="w", persist_interval=3600)
        await sink.write([rec(minute, 0), rec(minute, 1)])
        await sink.persist()  # the minute is stored and loaded
        await sink.write([rec(minute + 7 * MINUTE_MS, 2)])  # newer calls: it may be dropped
        persisting = asyncio.create_task(sink.persist())
        await asyncio.sleep(0)  # the persist waits (for the store, or before its tokens)
        await sink.write([rec(minute + 1, 3)])  # a late call into that minute meanwhile
        await persisting
        await sink.persist()
        doc = await store.get(hour_namespace(minute // HOUR_MS), minute_key(minute, "w"))
        assert sum(row.calls for row in parse_minute_doc(doc)) == 3
