"""``airmeter.client_usage``: sums per client from a real FileStore's call log."""

from __future__ import annotations

from pathlib import Path

import pytest

from airmeter import CallRecord, Layer, MeterConfigError, client_usage
from airmeter.store_sink import StoreSink
from airstore import FileStore

T0 = 1_800_000_000_000


def _rec(
    i: int,
    *,
    client: str | None,
    auth: str | None,
    subject: str | None = None,
    ok: bool = True,
    layer: Layer = Layer.L2,
    cost: float | None = None,
) -> CallRecord:
    return CallRecord(
        ts_ms=T0 + i, server="s", tool=f"t{i % 2}", layer=layer, latency_ms=float(i), ok=ok,
        error_type=None if ok else "tool_error", client_id=client, subject=subject, auth=auth,
        cost=cost,
    )  # fmt: skip


async def test_calls_without_a_client_are_grouped_by_how_they_were_admitted(
    tmp_path: Path,
) -> None:
    records = [
        _rec(0, client=None, auth=None),
        _rec(1, client=None, auth="none"),
        _rec(2, client="token", auth="token"),
        _rec(3, client="app", auth="oauth", subject="p:a", layer=Layer.L5),
        _rec(4, client="app", auth="oauth", subject="p:b", ok=False, cost=2.5),
    ]
    async with FileStore(tmp_path / "data") as store:
        sink = StoreSink(store, writer="w")
        await sink.write(records)
        await sink.close()
        usage = await client_usage(store, since=None, now_ms=T0 + 10)
    rows = {row.client: row for row in usage.clients}
    assert set(rows) == {"(none)", "token", "app"}
    assert rows["(none)"].calls == 2
    assert rows["(none)"].subjects == 0
    app = rows["app"]
    assert (app.calls, app.errors, app.subjects, app.auth) == (2, 1, 2, "oauth")
    assert app.cost == 20 + 2.5  # L5's weight, then the record's own cost
    assert usage.subjects == 2
    assert usage.calls == 5
    assert not usage.truncated


async def test_the_read_is_bounded_and_says_when_it_stopped(tmp_path: Path) -> None:
    async with FileStore(tmp_path / "data") as store:
        sink = StoreSink(store, writer="w")
        await sink.write([_rec(i, client=f"c{i}", auth="oauth") for i in range(20)])
        await sink.close()
        usage = await client_usage(store, limit=5, now_ms=T0 + 100)
        assert usage.truncated
        assert usage.calls == 5
        assert {row.client for row in usage.clients} == {f"c{i}" for i in range(15, 20)}
        with pytest.raises(MeterConfigError):
            await client_usage(store, limit=0)
