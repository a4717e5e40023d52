"""Writers mark the hours they rewrite with revision tokens; a kept SLO evaluator (and a
repeated snapshot) reads only the index and the hours being written, re-reads a closed hour
when its token changes, reads every hour of a writer that gives no tokens, and checks every
hour again after a while."""

from __future__ import annotations

import asyncio
import importlib
from pathlib import Path
from typing import Any

import pytest

from airmeter import CallRecord, Layer, StoreSink
from airmeter.rollup_reader import RollupReader, stored_hours, stored_revisions
from airmeter.rollups import (
    HOUR_MS,
    REVISIONS_KEY_PREFIX,
    ROLLUPS_NAMESPACE,
    hour_namespace,
    minute_key,
    revisions_key,
)
from airmeter.slo import SloEvaluator
from airmeter.slo_config import Objective
from airmeter.snapshot import snapshot
from airmeter.store_sink import REVISIONS_TTL
from airstore import MemoryStore, SqliteStore
from airstore.types import Store

reader_module = importlib.import_module("airmeter.rollup_reader")
NOW_MS = 1_800_000_000_000 + 30 * 60_000  # half past an hour
OBJECTIVES = [Objective(availability=0.99, period="7d")]


class _Counting:
    """A store whose ``entries`` calls are recorded (namespace by namespace)."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self.read: list[str] = []

    def __getattr__(self, name: str) -> Any:
        return getattr(self.store, name)

    async def entries(self, ns: str, prefix: str = "") -> Any:
        self.read.append(ns)
        return await self.store.entries(ns, prefix)


def _calls(hour_offsets: list[int], *, fail: bool = False, tag: str = "") -> list[CallRecord]:
    return [CallRecord(ts_ms=NOW_MS + h * HOUR_MS, server="shop", tool="get_user",
                       layer=Layer.L2, latency_ms=10.0, ok=not fail,
                       error_type="tool_error" if fail else None, request_id=f"{tag}{i}")
            for i, h in enumerate(hour_offsets)]  # fmt: skip


async def _write(store: Any, records: list[CallRecord], writer: str = "w") -> None:
    sink = StoreSink(store, writer=writer)
    await sink.write(records)
    await sink.close()


async def test_a_warm_evaluation_reads_the_index_and_the_open_hours_then_a_revised_hour(
    tmp_path: Path,
) -> None:
    async with SqliteStore(tmp_path / "air.db") as raw:
        store = _Counting(raw)
        await _write(store, _calls([-30, -20, -10, -5, -1, 0, 0]))
        now_hour = NOW_MS // HOUR_MS
        warm = SloEvaluator(store, OBJECTIVES, clock=lambda: NOW_MS / 1000)  # type: ignore[arg-type]
        (cold,) = await warm.evaluate()
        assert (cold.valid_calls, cold.bad_calls) == (7, 0)
        store.read.clear()
        assert [s.valid_calls for s in await warm.evaluate()] == [7]
        assert store.read == [ROLLUPS_NAMESPACE, hour_namespace(now_hour - 1),
                              hour_namespace(now_hour)]  # fmt: skip

        await _write(store, _calls([-20, -20], fail=True, tag="late"))  # late, into a closed hour
        store.read.clear()
        (after,) = await warm.evaluate()
        assert (after.valid_calls, after.bad_calls) == (9, 2)
        assert hour_namespace(now_hour - 20) in store.read
        assert hour_namespace(now_hour - 10) not in store.read


async def test_hours_of_a_writer_without_tokens_are_read_at_every_evaluation() -> None:
    store = MemoryStore()
    await _write(store, _calls([-10, -10]))
    for key in [k for k, _ in await store.entries(ROLLUPS_NAMESPACE, REVISIONS_KEY_PREFIX)]:
        await store.delete(ROLLUPS_NAMESPACE, key)  # as an earlier release wrote it
    old_hour = NOW_MS // HOUR_MS - 10
    assert (await stored_revisions(store))[old_hour] is None
    warm = SloEvaluator(store, OBJECTIVES, clock=lambda: NOW_MS / 1000)
    assert [s.valid_calls for s in await warm.evaluate()] == [2]
    # that writer rewrites the hour's minute (no token): seen at once
    minute = (NOW_MS - 10 * HOUR_MS) // 60_000 * 60_000
    doc = await store.get(hour_namespace(old_hour), minute_key(minute, "w"))
    assert doc is not None
    await store.delete(hour_namespace(old_hour), minute_key(minute, "w"))
    assert await warm.evaluate() == []
    await store.set(hour_namespace(old_hour), minute_key(minute, "w"), doc)
    assert [s.valid_calls for s in await warm.evaluate()] == [2]


async def test_a_change_no_token_tells_is_seen_once_the_recheck_time_passed(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    store = MemoryStore()
    await _write(store, _calls([-10, -10, -3]))
    old_hour = NOW_MS // HOUR_MS - 10
    warm = SloEvaluator(store, OBJECTIVES, clock=lambda: NOW_MS / 1000)
    assert [s.valid_calls for s in await warm.evaluate()] == [3]
    for key, _ in await store.entries(hour_namespace(old_hour)):
        await store.delete(hour_namespace(old_hour), key)  # as if expired: no token changes
    assert [s.valid_calls for s in await warm.evaluate()] == [3]  # kept, within the recheck
    monkeypatch.setattr(reader_module, "RECHECK_S", -3600.0)  # the recheck time has passed
    assert [s.valid_calls for s in await warm.evaluate()] == [1]


async def test_a_writer_started_again_keeps_the_tokens_of_the_hours_it_does_not_rewrite() -> None:
    store = MemoryStore()
    await _write(store, _calls([-3]))
    await _write(store, _calls([-2], tag="b"))  # the same writer id, a new sink (a restart)
    day = (NOW_MS // HOUR_MS - 3) // 24
    tokens = await store.get(ROLLUPS_NAMESPACE, revisions_key("w", day))
    assert isinstance(tokens, dict)
    hours = {NOW_MS // HOUR_MS - 3, NOW_MS // HOUR_MS - 2}
    assert {int(h) for h in tokens} >= {h for h in hours if h // 24 == day}
    revisions = await stored_revisions(store)
    assert all(revisions[h] is not None for h in hours)
    assert revisions[NOW_MS // HOUR_MS - 3] != revisions[NOW_MS // HOUR_MS - 2]  # new run


async def test_every_writer_of_an_hour_has_a_say_in_its_revision() -> None:
    store = MemoryStore()
    await _write(store, _calls([-5]), writer="a")
    await _write(store, _calls([-5], tag="b"), writer="b")
    hour = NOW_MS // HOUR_MS - 5
    before = (await stored_revisions(store))[hour]
    assert before is not None
    assert [w for w, _ in before] == ["a", "b"]
    await _write(store, _calls([-5], fail=True, tag="c"), writer="b")
    after = (await stored_revisions(store))[hour]
    assert after is not None
    assert after[0] == before[0]
    assert after[1] != before[1]


def _totals(snap: Any) -> tuple[int, int]:
    return snap.total_calls, snap.error_count


async def test_a_repeated_snapshot_reads_only_the_index_the_newest_hours_and_a_revised_hour(
    tmp_path: Path,
) -> None:
    async with SqliteStore(tmp_path / "air.db") as raw:
        store = _Counting(raw)
        await _write(store, _calls([-30, -20, -10, -5, -1, 0]))
        now_hour = NOW_MS // HOUR_MS
        reader = RollupReader(store)  # type: ignore[arg-type]
        first = await reader.snapshot(since=NOW_MS - 40 * HOUR_MS, until=NOW_MS + HOUR_MS)
        assert _totals(first) == (6, 0)
        store.read.clear()
        again = await reader.snapshot(since=NOW_MS - 40 * HOUR_MS, until=NOW_MS + HOUR_MS)
        assert again == first
        assert store.read == [ROLLUPS_NAMESPACE, hour_namespace(now_hour - 1),
                              hour_namespace(now_hour)]  # fmt: skip

        await _write(store, _calls([-20, -20], fail=True, tag="late"))
        store.read.clear()
        late = await reader.snapshot(since=NOW_MS - 40 * HOUR_MS, until=NOW_MS + HOUR_MS)
        assert _totals(late) == (8, 2)
        assert hour_namespace(now_hour - 20) in store.read
        assert hour_namespace(now_hour - 10) not in store.read
        async with SqliteStore(tmp_path / "air.db", read_only=True) as fresh:
            assert late == await snapshot(fresh, since=NOW_MS - 40 * HOUR_MS,
                                          until=NOW_MS + HOUR_MS)  # fmt: skip


async def test_an_hour_read_in_part_is_read_again_for_a_wider_window(tmp_path: Path) -> None:
    async with SqliteStore(tmp_path / "air.db") as store:
        hour_start = (NOW_MS // HOUR_MS - 10) * HOUR_MS
        records = [CallRecord(ts_ms=hour_start + m * 60_000, server="shop", tool="get_user",
                              layer=Layer.L2, latency_ms=10.0, ok=True, request_id=f"m{m}")
                   for m in (5, 50)]  # fmt: skip
        records += _calls([0, -1])
        await _write(store, records)
        reader = RollupReader(store)
        narrow = await reader.snapshot(since=hour_start + 30 * 60_000, until=NOW_MS + HOUR_MS)
        assert narrow.total_calls == 3  # minute 50 of that hour, and the two newest
        wide = await reader.snapshot(since=hour_start, until=NOW_MS + HOUR_MS)
        assert wide.total_calls == 4  # minute 5 too: the hour read in part was not kept as whole


async def test_a_late_write_reaches_a_file_stores_disk_before_its_token(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # FileStore commits a loop turn's namespaces in the order it first opened them; the token
    # goes in a later turn, so a reader in another process never sees it before the minutes
    from airstore import _kvspace
    from airstore.file import FileStore

    committed: list[str] = []  # a namespace, or "tokens" for the commit that holds them
    commit = _kvspace.KVSpace.commit

    def recording(space: Any) -> int:
        if space.journal.pending:
            tokens = REVISIONS_KEY_PREFIX.encode() in space.journal.pending
            committed.append("tokens" if tokens else space.ns)
        return commit(space)

    monkeypatch.setattr(_kvspace.KVSpace, "commit", recording)
    async with FileStore(tmp_path / "data") as store:
        sink = StoreSink(store, writer="w")
        await sink.write(_calls([0]))
        await sink.persist()  # meter.rollups is now opened before any older hour's namespace
        await asyncio.sleep(0.01)
        committed.clear()
        await sink.write(_calls([-5], tag="late"))
        await sink.persist()
        await asyncio.sleep(0.01)
        await sink.close()
    late = hour_namespace(NOW_MS // HOUR_MS - 5)
    assert late in committed
    assert "tokens" in committed
    assert committed.index(late) < committed.index("tokens")


async def test_two_writers_of_one_hour_each_revise_it_for_a_kept_evaluator() -> None:
    store = MemoryStore()
    await _write(store, _calls([-5, -5]), writer="a")
    await _write(store, _calls([-5], tag="b"), writer="b")
    warm = SloEvaluator(store, OBJECTIVES, clock=lambda: NOW_MS / 1000)
    assert [(s.valid_calls, s.bad_calls) for s in await warm.evaluate()] == [(3, 0)]
    await _write(store, _calls([-5, -5], fail=True, tag="b2"), writer="b")  # only b writes
    assert [(s.valid_calls, s.bad_calls) for s in await warm.evaluate()] == [(5, 2)]
    await _write(store, _calls([-5], fail=True, tag="a2"), writer="a")  # then only a
    assert [(s.valid_calls, s.bad_calls) for s in await warm.evaluate()] == [(6, 3)]


async def test_tokens_expire_before_the_rollups_and_old_days_are_not_looked_at() -> None:
    now = [NOW_MS / 1000]
    store = MemoryStore(clock=lambda: now[0])
    await _write(store, _calls([-30 * 24, -3]))
    old, recent = NOW_MS // HOUR_MS - 30 * 24, NOW_MS // HOUR_MS - 3
    revisions = await stored_revisions(store)
    assert revisions[old] is not None
    assert revisions[recent] is not None
    only_recent = await stored_revisions(store, from_hour=recent)
    assert only_recent[old] is None
    assert only_recent[recent] == revisions[recent]
    now[0] += REVISIONS_TTL + 1  # the tokens are gone; the rollups (400 days) are not
    later = await stored_revisions(store)
    assert set(later) == {old, recent}
    assert later[old] is None
    assert later[recent] is None


async def test_an_hour_before_from_hour_has_no_revision_even_on_its_day() -> None:
    store = MemoryStore()
    day_start = (NOW_MS // HOUR_MS // 24) * 24  # hours of one day, before and after from_hour
    await _write(store, [CallRecord(ts_ms=h * HOUR_MS, server="shop", tool="get_user",
                                    layer=Layer.L2, latency_ms=1.0, ok=True, request_id=str(h))
                         for h in (day_start + 1, day_start + 5)])  # fmt: skip
    revisions = await stored_revisions(store, from_hour=day_start + 3)
    assert revisions[day_start + 1] is None
    assert revisions[day_start + 5] is not None
    assert await stored_hours(store) == [day_start + 1, day_start + 5]


async def test_odd_tokens_in_the_index_are_ignored() -> None:
    store = MemoryStore()
    await _write(store, _calls([-2]))
    hour = NOW_MS // HOUR_MS - 2
    for key, value in [("revs:w:notaday", {str(hour): "x"}), ("revs:w", {"1" * 5000: "x"}),
                       ("revs:w:1", {"²": "x", str(hour): 7}), ("revs:w:2", ["x"])]:  # fmt: skip
        await store.set(ROLLUPS_NAMESPACE, key, value)
    revisions = await stored_revisions(store)
    assert revisions[hour] is not None  # its own token, still read
    assert [
        s.valid_calls
        for s in await SloEvaluator(store, OBJECTIVES, clock=lambda: NOW_MS / 1000).evaluate()
    ] == [1]


def test_a_document_the_cache_takes_in_unmarks_its_hour() -> None:
    cache = reader_module._DocCache()
    doc = {"format": 2, "minute": 0, "rows": []}
    cache.rows(7, "k1", doc)
    cache.marks[7] = (None, 0.0)
    cache.rows(7, "k1", doc)  # the same document: the mark stands
    assert 7 in cache.marks
    cache.rows(7, "k2", {"format": 2, "minute": 0, "rows": []})  # one no whole read saw
    assert 7 not in cache.marks


async def test_a_damaged_minute_document_counts_nothing_and_breaks_no_snapshot() -> None:
    store = MemoryStore()
    await _write(store, _calls([-2, -2]))
    hour = NOW_MS // HOUR_MS - 2
    for n, doc in enumerate([{"format": 2, "rows": []}, {"format": 2, "minute": "x", "rows": []},
                             {"format": 2, "minute": 0, "rows": [7]}]):  # fmt: skip
        await store.set(hour_namespace(hour), f"{hour * HOUR_MS:013d}:junk{n}", doc)
    evaluator = SloEvaluator(store, OBJECTIVES, clock=lambda: NOW_MS / 1000)
    assert [s.valid_calls for s in await evaluator.evaluate()] == [2]
    view = await snapshot(store, since=NOW_MS - 5 * HOUR_MS, until=NOW_MS)
    assert view.total_calls == 2


async def test_a_snapshot_reads_the_hour_being_written_even_behind_future_stamped_hours() -> None:
    import time

    store = _Counting(MemoryStore())
    wall = int(time.time() * 1000)
    current = wall // HOUR_MS
    stamped = [CallRecord(ts_ms=wall + h * HOUR_MS, server="shop", tool="get_user",
                          layer=Layer.L2, latency_ms=1.0, ok=True, request_id=f"f{h}")
               for h in (-3, 0, 3, 4)]  # two hours stamped ahead of the clock  # fmt: skip
    await _write(store, stamped)
    window = {"since": wall - 5 * HOUR_MS, "until": wall + 6 * HOUR_MS}
    reader = RollupReader(store)  # type: ignore[arg-type]
    await reader.snapshot(**window)
    store.read.clear()
    await reader.snapshot(**window)
    assert hour_namespace(current) in store.read
    assert hour_namespace(current - 3) not in store.read
