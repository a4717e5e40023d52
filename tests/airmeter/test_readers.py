"""The call-log readers: recent calls come back as CallRecord objects, filtered, newest first,
from a store another process wrote (opened read-only)."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest

from airmeter import CallRecord, Layer, MeterConfigError, StoreSink, has_calls, recent_calls
from airstore import FileStore, MemoryStore
from tests.airmeter.helpers import T0


def _rec(i: int, tool: str, layer: Layer, *, ok: bool = True, etype: str | None = None,
         server: str = "demo", instance: str = "i-1") -> CallRecord:  # fmt: skip
    return CallRecord(
        ts_ms=T0 + i * 1000, server=server, tool=tool, layer=layer, latency_ms=float(i), ok=ok,
        error_type=etype, request_id=str(i), instance_id=instance,
    )  # fmt: skip


RECORDS = [
    _rec(0, "get_user", Layer.L2),
    _rec(1, "fetch_url", Layer.L5, ok=False, etype="tool_error"),
    _rec(2, "fetch_url", Layer.L5, ok=False, etype="-32602", server="other"),
    _rec(3, "get_user", Layer.L2, ok=False, etype="ValueError", instance="i-2"),
    _rec(4, "fetch_url", Layer.L5),
    _rec(5, "get_user", Layer.L2, ok=False, etype="-32001"),
]


async def test_recent_calls_are_records_newest_first_with_every_filter(tmp_path: Path) -> None:
    data = tmp_path / "data"
    async with FileStore(data) as writer:
        sink = StoreSink(writer, writer="w")
        assert not await has_calls(writer)
        await sink.write(RECORDS)
        await sink.close()
    async with FileStore(data, read_only=True) as store:
        assert await has_calls(store)
        everything = await recent_calls(store, limit=100)
        assert everything == list(reversed(RECORDS))
        assert all(isinstance(r, CallRecord) for r in everything)

        def ids(recs: list[CallRecord]) -> list[str | None]:
            return [r.request_id for r in recs]

        assert ids(await recent_calls(store, tool="fetch_url")) == ["4", "2", "1"]
        assert ids(await recent_calls(store, layer="L2", ok=False)) == ["5", "3"]
        assert ids(await recent_calls(store, layer=Layer.L5, ok=True)) == ["4"]
        assert ids(await recent_calls(store, server="other")) == ["2"]
        assert ids(await recent_calls(store, instance="i-2")) == ["3"]
        assert ids(await recent_calls(store, limit=2)) == ["5", "4"]
        assert ids(await recent_calls(store, since=T0 + 2000, until=T0 + 4000)) == ["3", "2"]
        since = await recent_calls(store, since=timedelta(seconds=2), now_ms=T0 + 5000)
        assert ids(since) == ["5", "4", "3"]
        assert ids(await recent_calls(store, error_class="exception")) == ["3"]
        assert ids(await recent_calls(store, error_class="refused")) == ["2"]
        assert ids(await recent_calls(store, error_class="timeout")) == ["5"]
        assert ids(await recent_calls(store, error_class="tool_error", tool="get_user")) == []


async def test_entries_that_are_not_records_are_skipped() -> None:
    store = MemoryStore()
    await store.append("meter.calls", {"_ts": T0, "note": "not a call"})
    await StoreSink(store, writer="w").write(RECORDS[:1])
    assert await recent_calls(store) == RECORDS[:1]


@pytest.mark.parametrize(
    "kwargs",
    [
        {"limit": 0},
        {"limit": 10_001},
        {"layer": "L9"},
        {"error_class": "oops"},
        {"since": "yesterday"},
    ],
)
async def test_bad_reader_arguments_are_typed_errors(kwargs: dict[str, object]) -> None:
    with pytest.raises(MeterConfigError):
        await recent_calls(MemoryStore(), **kwargs)  # type: ignore[arg-type]
