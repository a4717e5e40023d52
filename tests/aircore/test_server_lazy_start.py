"""``server.call_tool()`` before ``async with server``: the server starts at once and meters."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import orjson

from aircore import ToolContext, define_server, define_tool
from airstore import FileStore
from tests.air_process import run_air


async def _save(params: dict[str, Any], ctx: ToolContext) -> str:
    assert ctx.store is not None
    await ctx.store.set("notes", "latest", params["text"])
    return "saved"


def _server(**storage: Any) -> Any:
    tool = define_tool("save_note", params={"text": "string"}, handler=_save)
    return define_server(name="lazy", tools=[tool], meter=True, **storage)


async def test_the_first_in_process_call_starts_the_server_and_is_metered(tmp_path: Path) -> None:
    data = tmp_path / "data"
    server = _server(storage=f"file://{data}")
    first = await server.call_tool("save_note", {"text": "one"}, request_id="1")
    second = await server.call_tool("save_note", {"text": "two"}, request_id="2")
    assert first == second == {"content": [{"type": "text", "text": "saved"}]}
    await server.stop()  # delivers what the meter holds
    async with FileStore(data, read_only=True) as store:
        assert await store.get("notes", "latest") == "two"
        calls = await store.query("meter.calls", limit=10)
    assert sorted((c["request_id"], c["ok"]) for c in calls) == [("1", True), ("2", True)]


async def test_a_metered_server_without_storage_keeps_calls_in_the_default_location() -> None:
    server = _server()
    await server.call_tool("save_note", {"text": "kept"}, request_id="1")
    location = server.store_location
    await server.stop()
    assert location is not None
    assert location.source == "environment"  # AIR_DATA_DIR, set for every test
    assert location.path == Path(os.environ["AIR_DATA_DIR"])
    async with FileStore(location.path, read_only=True) as store:
        assert [c["tool"] for c in await store.query("meter.calls", limit=10)] == ["save_note"]


async def test_a_server_that_does_not_meter_and_names_no_store_stays_in_memory() -> None:
    tool = define_tool("save_note", params={"text": "string"}, handler=_save)
    server = define_server(name="plain", tools=[tool])
    async with server:
        await server.call_tool("save_note", {"text": "gone"})
        assert server.store_location is None
    assert os.listdir(os.environ["AIR_DATA_DIR"]) == []


_SCRIPT = """
import asyncio, sys
from aircore import define_server

server = define_server(name="lazy", meter=True, storage=sys.argv[1])


@server.tool
def double(x: int) -> int:
    return x * 2


for x in range(int(sys.argv[2])):
    asyncio.run(server.call_tool("double", {"x": x}))  # never stopped, never `async with`
"""


def test_calls_of_a_server_never_stopped_count_in_the_meter_report(tmp_path: Path) -> None:
    """``asyncio.run(server.call_tool(...))`` in a script that never stops the server: the call
    log was flushed at exit but the per-minute rollups the report reads were not, so
    ``air meter report`` said "No calls recorded" for calls that were in the log; and a call in
    a second ``asyncio.run`` went to a meter whose delivery task had died with the first loop."""
    url = f"file://{tmp_path / 'data'}"
    for calls in (1, 3):  # a second script adds to the first one's minute
        done = subprocess.run(
            [sys.executable, "-c", _SCRIPT, url, str(calls)],
            capture_output=True, text=True, timeout=60, check=False,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
    report = run_air("meter", "report", "--store", url, "--since", "all", "--format", "json")
    assert report.returncode == 0, report.stderr
    assert orjson.loads(report.stdout)["total_calls"] == 4
