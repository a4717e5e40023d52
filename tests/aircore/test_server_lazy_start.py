"""``server.call_tool()`` before ``async with server``: the server starts at once and meters."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from aircore import ToolContext, define_server, define_tool
from airstore import FileStore


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
