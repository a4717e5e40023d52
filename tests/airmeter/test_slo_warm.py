"""A kept (warm) SLO evaluator sees every change a fresh one sees: new calls in the open hour,
late calls rewritten into an hour long closed, a moving clock, on a FileStore read by a
read-only reader (same documents: identity) and on SQLite (documents decoded afresh: equality).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from airmeter import CallRecord, Layer, StoreSink
from airmeter.outcome import RATE_CLASSES, error_class_of
from airmeter.slo import SloEvaluator, SloStatus, evaluate_slos
from airmeter.slo_config import Objective
from airstore import FileStore, MemoryStore, SqliteStore
from airstore.types import Store

NOW_MS = 1_800_000_000_000  # a minute boundary
MIN = 60_000
HOUR = 3_600_000
OBJECTIVES = [Objective(availability=0.99, period="7d"), Objective(latency_p95_ms=100)]


def _calls(n: int, *, start_ms: int, span_ms: int, tool: str, fail_every: int, slow_every: int,
           seed: int) -> list[CallRecord]:  # fmt: skip
    out = []
    for i in range(n):
        bad = i % fail_every == 0
        refused = i % 37 == 5  # not the tool's doing: never counted
        out.append(CallRecord(
            ts_ms=start_ms + (i * span_ms) // n, server="shop", tool=tool, layer=Layer.L2,
            latency_ms=250.0 if i % slow_every == 1 and not refused else 20.0,
            ok=not (bad or refused),
            error_type="tool_error" if bad else "-32602" if refused else None,
            request_id=f"{seed}-{i}",
        ))  # fmt: skip
    return out


def _expected(records: Sequence[CallRecord], now_ms: int) -> dict[tuple[str, str], tuple[Any, ...]]:
    """Per (tool, kind): valid and bad calls over the period and each window, counted from the
    records themselves."""
    out: dict[tuple[str, str], tuple[Any, ...]] = {}
    for tool in sorted({r.tool for r in records}):
        mine = [r for r in records if r.tool == tool and r.error_type != "-32602"]
        for kind, allowed, bad_of in (
            ("availability", 0.01, lambda r: not r.ok),
            ("latency", 0.05, lambda r: r.latency_ms > 100),
        ):
            rates = []
            for minutes in (5, 30, 60, 360):
                inside = [r for r in mine if now_ms - minutes * MIN <= r.ts_ms < now_ms + MIN]
                bad = sum(1 for r in inside if bad_of(r))
                rates.append(pytest.approx(bad / len(inside) / allowed) if inside else 0.0)
            out[(tool, kind)] = (len(mine), sum(1 for r in mine if bad_of(r)), *rates)
    return out


def _got(statuses: Sequence[SloStatus]) -> dict[tuple[str, str], tuple[Any, ...]]:
    return {(s.tool, s.kind): (s.valid_calls, s.bad_calls, s.burn_rate_5m, s.burn_rate_30m,
                               s.burn_rate_1h, s.burn_rate_6h) for s in statuses}  # fmt: skip


async def _write(store: Store, records: list[CallRecord], writer: str) -> None:
    sink = StoreSink(store, writer=writer)
    await sink.write(records)
    await sink.close()


async def _check_warm_follows_changes(
    writer: Store, reader: Store, later: Callable[[], Any] | None = None
) -> None:
    now = [NOW_MS]
    records = _calls(4000, start_ms=NOW_MS - 8 * HOUR, span_ms=8 * HOUR, tool="get_user",
                     fail_every=50, slow_every=10, seed=0)  # fmt: skip
    await _write(writer, records, "w")
    warm = SloEvaluator(reader, OBJECTIVES, clock=lambda: now[0] / 1000)
    assert _got(await warm.evaluate()) == _expected(records, now[0])

    # new calls in the open hour (another tool, failing often), then late calls into an hour
    # closed five hours ago, rewritten by the same writer (its minute documents change)
    steps = [
        _calls(300, start_ms=NOW_MS - 20 * MIN, span_ms=20 * MIN, tool="pay", fail_every=3,
               slow_every=2, seed=1),
        _calls(500, start_ms=NOW_MS - 5 * HOUR - 30 * MIN, span_ms=10 * MIN, tool="get_user",
               fail_every=2, slow_every=3, seed=2),
    ]  # fmt: skip
    for extra in steps:
        await _write(writer, extra, "w")
        records += extra
        if later is not None:
            await later()
        before = _got(await warm.evaluate())
        assert before == _expected(records, now[0])
        assert before == _got(await evaluate_slos(reader, OBJECTIVES, clock=lambda: now[0] / 1000))
    for step in (30 * MIN, 2 * HOUR, 3 * HOUR):  # the windows move on
        now[0] += step
        assert _got(await warm.evaluate()) == _expected(records, now[0])


async def test_a_warm_evaluator_follows_new_late_and_aged_calls_through_a_file_reader(
    tmp_path: Path,
) -> None:
    async with (
        FileStore(tmp_path / "data") as writer,
        FileStore(tmp_path / "data", read_only=True) as reader,
    ):
        await _check_warm_follows_changes(writer, reader, later=writer.flush)


async def test_a_warm_evaluator_follows_new_late_and_aged_calls_on_sqlite(tmp_path: Path) -> None:
    async with SqliteStore(tmp_path / "air.db") as store:
        await _check_warm_follows_changes(store, store)


async def test_the_burn_rate_history_is_what_an_evaluation_at_each_instant_gives(
    tmp_path: Path,
) -> None:
    records = _calls(6000, start_ms=NOW_MS - 9 * HOUR, span_ms=9 * HOUR, tool="get_user",
                     fail_every=40, slow_every=7, seed=0)  # fmt: skip
    records += _calls(400, start_ms=NOW_MS - 3 * HOUR, span_ms=40 * MIN, tool="get_user",
                      fail_every=2, slow_every=2, seed=1)  # an incident  # fmt: skip
    records += _calls(200, start_ms=NOW_MS - 20 * MIN, span_ms=20 * MIN, tool="pay",
                      fail_every=3, slow_every=3, seed=2)  # only lately  # fmt: skip
    async with FileStore(tmp_path / "data") as store:
        await _write(store, records, "w")
        evaluator = SloEvaluator(store, OBJECTIVES, clock=lambda: NOW_MS / 1000)
        assert await evaluator.burn_rate_history([NOW_MS]) == {}  # nothing evaluated yet
        statuses = await evaluator.evaluate()
        instants = [NOW_MS - k * 15 * MIN for k in range(23, 0, -1)]
        history = await evaluator.burn_rate_history(instants)
        assert set(history) == {s.key for s in statuses}
        for n, at in enumerate(instants):
            then = await evaluate_slos(store, OBJECTIVES, clock=lambda at=at: at / 1000)
            expected = {s.key: s.burn_rate_1h for s in then}
            assert expected == {key: series[n][1] for key, series in history.items()}
            assert all(series[n][0] == at for series in history.values())
        assert max(b for _, b in history[statuses[0].key]) > 14.4  # the incident shows


_ETYPES = (None, None, None, "tool_error", "RuntimeError", "-32001", "-32602", "-32600")
_EXCLUDED_FROM = 6  # refused and protocol failures: never slow here (the rollups' latency
# histograms do not tell them apart, so a latency objective would count them)
_Call = tuple[int, int, int, bool]  # offset ms from NOW_MS, tool, error type index, slow


def _count(calls: Sequence[_Call], now_ms: int) -> dict[tuple[str, str], tuple[Any, ...]]:
    """Per (tool, kind), straight from the calls: valid and bad calls over the period (whole
    hours back to its start, none cut at ``now``) and each window (whole minutes from the one
    holding its start, up to the one holding ``now``)."""
    out: dict[tuple[str, str], tuple[Any, ...]] = {}
    for tool in sorted({f"t{c[1]}" for c in calls}):
        mine = []
        for offset, t, e, slow in calls:
            etype = _ETYPES[e]
            cls = None if etype is None else error_class_of(etype)
            if f"t{t}" == tool and cls not in ("refused", "protocol"):
                mine.append((NOW_MS + offset, cls in RATE_CLASSES, slow and e < _EXCLUDED_FROM))
        for kind, allowed, index, period_ms in (("availability", 0.01, 1, 7 * 24 * HOUR),
                                                ("latency", 0.05, 2, 30 * 24 * HOUR)):  # fmt: skip
            period = [c for c in mine if (c[0] // HOUR + 1) * HOUR > now_ms - period_ms]
            rates = []
            for minutes in (5, 30, 60, 360):
                start = now_ms - minutes * MIN
                first = start - start % MIN
                inside = [c for c in mine if first <= c[0] - c[0] % MIN <= now_ms]
                bad = sum(1 for c in inside if c[index])
                rates.append(pytest.approx(bad / len(inside) / allowed) if inside else 0.0)
            bad = sum(1 for c in period if c[index])
            out[(tool, kind)] = (len(period), bad, *rates)
    return out


_calls_strategy = st.lists(
    st.tuples(
        st.integers(-9 * HOUR, 10 * MIN),
        st.integers(0, 1),
        st.integers(0, len(_ETYPES) - 1),
        st.booleans(),
    ),
    min_size=1,
    max_size=60,
)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    first=_calls_strategy,
    later=_calls_strategy,
    moves=st.lists(st.integers(-2 * HOUR, 2 * HOUR), min_size=1, max_size=4),
)
async def test_a_warm_evaluator_counts_what_the_calls_say_whatever_the_writes_and_clock(
    first: list[_Call], later: list[_Call], moves: list[int]
) -> None:
    store = MemoryStore()
    now = [NOW_MS + 12_345]  # not on a minute boundary

    def records(calls: Sequence[_Call], writer: int) -> list[CallRecord]:
        return [CallRecord(ts_ms=NOW_MS + offset, server="shop", tool=f"t{t}", layer=Layer.L2,
                           latency_ms=250.0 if slow and e < _EXCLUDED_FROM else 20.0,
                           ok=_ETYPES[e] is None,
                           error_type=_ETYPES[e], request_id=f"{writer}-{i}")
                for i, (offset, t, e, slow) in enumerate(calls)]  # fmt: skip

    await _write(store, records(first, 0), "w")
    warm = SloEvaluator(store, OBJECTIVES, clock=lambda: now[0] / 1000)
    assert _got(await warm.evaluate()) == _count(first, now[0])
    await _write(store, records(later, 1), "w")  # into the same minutes: documents rewritten
    for move in moves:
        now[0] += move
        assert _got(await warm.evaluate()) == _count(first + later, now[0])


@pytest.mark.parametrize("now_ms", [NOW_MS, NOW_MS + 30_000, NOW_MS + HOUR - 1])
async def test_calls_on_the_first_and_last_minute_of_every_window_count_and_the_next_do_not(
    now_ms: int,
) -> None:
    # failing calls at both ends of each window (the minute holding its start, the minute
    # holding now) and one minute beyond each end, and two healthy calls. ``NOW_MS`` is an
    # hour boundary: the minute holding now opens a new hour.
    calls: list[_Call] = [(-90 * MIN, 0, 0, False), (-2 * MIN, 0, 0, False)]
    now_minute = now_ms - now_ms % MIN
    for minutes in (5, 30, 60, 360):
        start = now_ms - minutes * MIN
        first = start - start % MIN
        calls += [(first - NOW_MS, 0, 3, True), (first - MIN - NOW_MS, 0, 3, True)]
    calls += [(now_minute - NOW_MS, 0, 3, True), (now_minute + MIN - NOW_MS, 0, 3, True)]
    store = MemoryStore()
    await _write(store, [CallRecord(ts_ms=NOW_MS + offset, server="shop", tool="t0",
                                    layer=Layer.L2, latency_ms=250.0 if slow else 20.0,
                                    ok=_ETYPES[e] is None, error_type=_ETYPES[e],
                                    request_id=f"edge-{i}")
                         for i, (offset, _, e, slow) in enumerate(calls)], "w")  # fmt: skip
    got = _got(await SloEvaluator(store, OBJECTIVES, clock=lambda: now_ms / 1000).evaluate())
    assert got == _count(calls, now_ms)
