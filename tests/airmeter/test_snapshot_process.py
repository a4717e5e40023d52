"""A snapshot taken by another process from a read-only FileStore while the writer runs."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

import orjson

from airmeter import CALLS_NAMESPACE, Meter
from airstore.file import FileStore
from tests.airmeter.helpers import close, independent, make_records

READER = """
import asyncio, sys
from airmeter import snapshot
from airstore.file import FileStore

async def main() -> None:
    async with FileStore(sys.argv[1], read_only=True) as store:
        snap = await snapshot(store, tool=sys.argv[2] or None)
        print(snap.to_json())

asyncio.run(main())
"""


async def _read_in_child(path: Path, tool: str = "") -> dict[str, object]:
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-c",
        READER,
        str(path),
        tool,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await asyncio.wait_for(proc.communicate(), 60)
    assert proc.returncode == 0, err.decode()
    data: dict[str, object] = orjson.loads(out)
    return data


async def test_reader_process_sees_what_the_writer_recorded(tmp_path: Path) -> None:
    records = make_records(3000, servers=("a", "b"))
    async with FileStore(tmp_path / "data") as store:
        meter = Meter(store=store, instance_id="writer-1")
        async with meter:
            for r in records:
                meter.record(r)
        # the writer is still open (holding the lock) while the other process reads
        raw = await store.query(CALLS_NAMESPACE, limit=10_000)
        assert len(raw) == 3000
        exp = independent(raw)
        data = await _read_in_child(tmp_path / "data")
        assert data["total_calls"] == exp["total"]
        assert data["error_count"] == exp["errors"]
        assert data["errors_by_type"] == exp["by_type"]
        for q in ("p50", "p95", "p99"):
            assert close(data[f"{q}_ms"], exp[q]), q  # type: ignore[arg-type]
        tools = data["tools"]
        assert isinstance(tools, list)
        assert {t["tool"]: t["calls"] for t in tools} == {
            k: len(v) for k, v in exp["by_tool"].items()
        }
        part = await _read_in_child(tmp_path / "data", "fetch_url")
        assert part["total_calls"] == len(exp["by_tool"]["fetch_url"])
