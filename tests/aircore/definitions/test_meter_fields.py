"""The meter records each call with its definition's category_key, version and layer."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from aircore import define_server, define_tool
from airmeter import CALLS_NAMESPACE, CallRecord
from airstore import MemoryStore
from tests.aircore.definitions.fixtures import clean_definition, write_definition


async def test_metered_call_carries_category_version_and_layer(tmp_path: Path) -> None:
    data = clean_definition()
    data["layer"] = "L3"  # the name alone would classify as a lookup (L2)
    write_definition(tmp_path, data)

    def search(params: dict[str, Any]) -> dict[str, Any]:
        return {"hits": []}

    store = MemoryStore()
    server = define_server(
        name="metered-defs",
        tools=[define_tool("search_documents", handler=search)],
        storage=store,
        meter=True,
        definitions=tmp_path,
    )
    async with server:
        result = await server.call_tool("search_documents", {"query": "tax"}, request_id="r1")
    assert result.get("isError") is not True
    (entry,) = await store.query(CALLS_NAMESPACE, limit=10)
    record = CallRecord.from_log(entry)
    assert (record.tool, record.category, record.tool_version) == (
        "search_documents", "docs", "1.2.0",
    )  # fmt: skip
    assert record.layer.code == "L3"
    await store.close()
