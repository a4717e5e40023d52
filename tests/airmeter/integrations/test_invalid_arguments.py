"""Both adapters record a call whose arguments the server rejects before the tool runs as
aircore does: ``error_type`` ``"-32602"``, class ``refused``, cost 0, outside the tool's error
rate; the client's answer is the server's own, unchanged. The README's quick-start servers
over real stdio with the official client, read back from the store."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path
from typing import Any

import pytest
from mcp import Client, StdioServerParameters

from airmeter import CALLS_NAMESPACE, Snapshot, snapshot
from airstore.file import FileStore

HERE = Path(__file__).parent
ROOT = HERE.parents[2]


async def _read_back(data: Path, calls: int) -> tuple[list[dict[str, Any]], Snapshot]:
    """The call log and the snapshot another process writes, once both hold ``calls`` calls
    (30 s at most)."""
    async with asyncio.timeout(30):
        while True:
            async with FileStore(data, read_only=True) as store:
                logged = await store.query(CALLS_NAMESPACE, limit=calls + 1)
                snap = await snapshot(store, since=None)
            if len(logged) >= calls and snap.total_calls >= calls:
                return logged, snap
            await asyncio.sleep(0.05)


@pytest.mark.parametrize("kind", ["mcpserver", "fastmcp"])
async def test_invalid_arguments_are_refused_free_and_outside_the_error_rate(
    tmp_path: Path, kind: str
) -> None:
    data = tmp_path / "data"
    params = StdioServerParameters(
        command=sys.executable,
        args=[str(HERE / "quickstart_server.py"), kind, f"file://{data}"],
        cwd=str(ROOT),
        env={"PYTHONPATH": str(ROOT)},
    )
    async with Client(params) as client:
        missing = await client.call_tool("add_note", {})
        ill_typed = await client.call_tool("add_note", {"text": 5})
        ok = await client.call_tool("add_note", {"text": "milk"})
    assert missing.is_error
    assert ill_typed.is_error
    assert not ok.is_error
    logged, snap = await _read_back(data, 3)
    refused = [e for e in logged if not e["ok"]]
    assert [(e["tool"], e["error_type"], e["error_class"], e.get("cost")) for e in refused] == [
        ("add_note", "-32602", "refused", 0.0),
        ("add_note", "-32602", "refused", 0.0),
    ]
    assert all("text" in e["error_message"] for e in refused)
    (tool,) = snap.tools
    assert (tool.calls, tool.errors, tool.error_rate) == (3, 2, 0.0)
    assert dict(tool.errors_by_class) == {"refused": 2}
    assert tool.cost == tool.layer.weight  # only the call that ran is charged
