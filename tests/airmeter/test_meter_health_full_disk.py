"""Meter health on a full disk (issue 31, item 12): a real 1 MiB tmpfs that fills while a meter
records 8,000 calls into a FileStore. ``meter_health`` said ``delivered=8000, dropped=0`` while
a few hundred records reached the disk; the loss showed only as ``sink_errors``. Records a sink
could not persist are counted as dropped, not delivered, and the dashboard's badge says so."""

from __future__ import annotations

import os
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from airmeter import CALLS_NAMESPACE, CallRecord, Layer, Meter
from airstore import FileStore
from dashboard.meter_watch import health_alerts

CALLS = 8000


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    """A 1 MiB tmpfs with about 160 KiB left (delete ``filler`` to give the space back)."""
    if os.geteuid() != 0:
        pytest.skip("mounting a tmpfs needs root; CI runs the suite as root")
    mnt = tmp_path / "small"
    mnt.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(mnt)], check=True)
    try:
        with open(mnt / "filler", "wb") as fh:
            fh.write(b"\0" * (1024 * 1024 - 160 * 1024))
        yield mnt
    finally:
        subprocess.run(["umount", "-l", str(mnt)], check=False)


def _record(i: int) -> CallRecord:
    return CallRecord(ts_ms=int(time.time() * 1000), server="shop", tool="get_user",
                      layer=Layer.L2, latency_ms=3.0, ok=True, request_id=f"request-{i:06d}",
                      error_message=None)  # fmt: skip


async def test_records_the_disk_refused_are_dropped_not_delivered(small_disk: Path) -> None:
    data = small_disk / "data"
    async with FileStore(data) as store:
        meter = Meter(store=store, server="shop", instance_id="shop-1", max_pending=CALLS,
                      flush_interval=3600)  # fmt: skip
        await meter.start()
        for i in range(CALLS):
            meter.record(_record(i))
            if i % 500 == 499:
                await meter.flush()
        await meter.stop()
        health = meter.health
    (small_disk / "filler").unlink()  # room again to read (and for the health document)
    async with FileStore(data) as store:
        on_disk = len(await store.query(CALLS_NAMESPACE, limit=CALLS * 2))
    assert 0 < on_disk < CALLS  # the disk really filled
    assert health.recorded == CALLS
    assert health.delivered + health.dropped + health.pending == CALLS
    assert health.delivered <= on_disk
    assert health.dropped >= CALLS - on_disk
    assert health.degraded
    (badge,) = health_alerts([health])
    assert f"{health.dropped:,} records dropped" in badge.text
