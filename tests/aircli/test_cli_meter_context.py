"""``air meter report``: errors by class and the context-token block, from a real server's
store, in the JSON and table formats."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import orjson
import pytest

from aircli import main
from aircore import define_server, define_tool
from airmeter import MeterMiddleware


def _server(data: Path) -> Any:
    def lookup(params: dict[str, Any]) -> str:
        if params["n"] < 0:
            raise ValueError("negative")
        return "found " * params["n"]

    return define_server(
        name="shop", storage=f"file://{data}", meter=MeterMiddleware(count_tokens="estimate"),
        tools=[define_tool("lookup", description="Find n things.", params={"n": "integer"},
                           handler=lookup)],
    )  # fmt: skip


async def test_the_json_report_has_errors_by_class_and_the_context_block(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = tmp_path / "data"
    server = _server(data)
    async with server:
        for n in (1, 2, 3, 4):
            await server.call_tool("lookup", {"n": n})
        await server.call_tool("lookup", {"n": -1})  # exception
        await server.call_tool("lookup", {"n": "x"})  # refused
    argv = ["meter", "report", "--store", f"file://{data}", "--since", "all"]
    assert await asyncio.to_thread(main, [*argv, "--format", "json"]) == 0
    report = orjson.loads(capsys.readouterr().out)
    assert report["errors_by_class"] == {"exception": 1, "refused": 1}
    context = report["context"]
    assert context["tokenizer"] == "estimate"
    assert context["exact"] is False
    row = context["tools"]["shop/lookup"]
    assert set(context) >= {"definition_tokens_total", "tools"}  # the shape
    assert set(row) == {"definition_tokens", "result_tokens_p50", "result_tokens_p95",
                        "result_tokens_total"}  # fmt: skip
    assert row["result_tokens_p50"] <= row["result_tokens_p95"] <= 6
    assert row["definition_tokens"] > 0
    assert context["definition_tokens_total"] == row["definition_tokens"]
    # four results "found " x n: 6, 12, 18, 24 bytes -> 2 + 3 + 5 + 6 estimated tokens
    assert row["result_tokens_total"] == 16
    assert await asyncio.to_thread(main, argv) == 0
    table = capsys.readouterr().out
    assert "errors by class" in table
    assert "context tokens (estimated): definitions" in table
    assert "estimate)" not in table  # said once, not "(estimated, estimate)"
    assert "shop/lookup" in table
