"""Context cost through a real aircore server: the tokens each tool definition (as tools/list
sends it) and each result add to a model's context, exact with the tokens extra, counted off
the call path, reported per server and tool; the estimate says it is one."""

from __future__ import annotations

import asyncio
import math
from pathlib import Path
from typing import Any

import orjson
import pytest

from aircore import define_server, define_tool
from airmeter import MeterMiddleware
from airmeter.context_cost import context_report, oversized_definitions
from airmeter.tokens import EstimateCounter, context_text, shared_counting
from airstore import FileStore

bpe_openai = pytest.importorskip("bpe_openai", reason="the tokens extra is not installed")
ENC = bpe_openai.get_encoding("o200k_base")  # the independent count


def _tools() -> list[Any]:
    def search_notes(params: dict[str, Any]) -> dict[str, Any]:
        return {"hits": [{"id": i, "title": f"note {i} about {params['q']}"} for i in range(3)]}

    def get_weather(params: dict[str, Any]) -> str:
        return f"It is sunny in {params['city']} and 21 degrees."

    return [
        define_tool("search_notes", description="Search the user's notes by a free-text query.",
                    params={"q": "string"}, handler=search_notes, meta={"category_key": "notes"}),
        define_tool("get_weather", description="Today's weather in a city.",
                    params={"city": "string"}, handler=get_weather),
    ]  # fmt: skip


async def _wait_for_definitions(data: Path, server: str) -> Any:
    async with FileStore(data, read_only=True) as store:
        async with asyncio.timeout(20):
            while True:
                report = await context_report(store)
                if report.tools and all(t.definition_tokens for t in report.tools):
                    return report
                await asyncio.sleep(0.05)


async def test_definitions_and_results_are_counted_exactly_per_server_and_tool(
    tmp_path: Path,
) -> None:
    await shared_counting().ready()  # so every record below carries its count
    data = tmp_path / "data"
    hook = MeterMiddleware(count_tokens="exact")
    server = define_server(name="notes", tools=_tools(), storage=f"file://{data}", meter=hook)
    cities = ["Oslo", "Lima", "Kyoto", "Quito", "Nairobi"]
    async with server:
        for city in cities:
            await server.call_tool("get_weather", {"city": city})
        await server.call_tool("search_notes", {"q": "budget"})
        listed = {t.name: t.describe() for t in server.tools.values()}
    report = await _wait_for_definitions(data, "notes")
    assert report.exact
    assert report.tokenizer == "o200k_base"
    by_tool = {(t.server, t.tool): t for t in report.tools}
    for name, definition in listed.items():
        sent = {k: v for k, v in definition.items() if k != "_meta"}
        assert "_meta" in definition or name == "get_weather"
        want = len(ENC.encode_ordinary(orjson.dumps(sent).decode()))
        assert by_tool[("notes", name)].definition_tokens == want
    assert report.definition_tokens_total == sum(t.definition_tokens or 0 for t in report.tools)
    weather = [len(ENC.encode_ordinary(f"It is sunny in {c} and 21 degrees.")) for c in cities]
    row = by_tool[("notes", "get_weather")]
    assert row.result_tokens_total == sum(weather)
    assert row.results_counted == len(cities)
    assert row.result_tokens_p50 is not None
    assert math.isclose(row.result_tokens_p50, sorted(weather)[2], rel_tol=0.02)
    hits = {"hits": [{"id": i, "title": f"note {i} about budget"} for i in range(3)]}
    notes = by_tool[("notes", "search_notes")]
    assert notes.result_tokens_total == len(ENC.encode_ordinary(context_text(hits)))
    block = report.to_dict()
    assert set(block["tools"]) == {"notes/get_weather", "notes/search_notes"}
    assert set(block["tools"]["notes/get_weather"]) == {
        "definition_tokens",
        "result_tokens_p50",
        "result_tokens_p95",
        "result_tokens_total",
    }


async def test_the_estimate_says_it_is_one(tmp_path: Path) -> None:
    data = tmp_path / "data"
    hook = MeterMiddleware(count_tokens="estimate")
    server = define_server(name="est", tools=_tools(), storage=f"file://{data}", meter=hook)
    async with server:
        await server.call_tool("get_weather", {"city": "Oslo"})
        (rec,) = hook.meter.recent()
    assert rec.result_tokens == EstimateCounter().count("It is sunny in Oslo and 21 degrees.")
    report = await _wait_for_definitions(data, "est")
    assert report.tokenizer == "estimate"
    assert report.exact is False
    assert report.to_dict()["exact"] is False


async def test_counting_off_records_no_tokens() -> None:
    hook = MeterMiddleware(count_tokens="off")
    server = define_server(name="off", tools=_tools(), meter=hook)
    async with server:
        await server.call_tool("get_weather", {"city": "Oslo"})
        (rec,) = hook.meter.recent()
    assert rec.result_tokens is None


def test_definitions_above_a_token_budget_are_named_largest_first() -> None:
    server = define_server(name="big", tools=_tools())
    listed = [t.describe() for t in server.tools.values()]
    counter = EstimateCounter()
    assert oversized_definitions(listed, budget=10_000, counter=counter) == []
    over = oversized_definitions(listed, budget=1, counter=counter)
    assert [name for name, _ in over] == ["search_notes", "get_weather"]
    assert over[0][1] >= over[1][1] > 1


async def test_exact_result_counts_are_made_on_a_worker_thread_never_on_the_loop(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import threading

    counter = await shared_counting().ready()
    on_loop_thread: list[bool] = []
    count = type(counter).count

    def recording(self: Any, text: str) -> int:
        if text.startswith("It is sunny"):  # a result's text (not a definition's)
            on_loop_thread.append(threading.current_thread() is threading.main_thread())
        return count(self, text)

    monkeypatch.setattr(type(counter), "count", recording)
    hook = MeterMiddleware(count_tokens="exact")
    server = define_server(name="offpath", tools=_tools(), meter=hook)
    async with server:
        for city in ("Oslo", "Lima", "Kyoto"):
            await server.call_tool("get_weather", {"city": city})
        await hook.meter.flush()
        records = hook.meter.recent()
    assert on_loop_thread == [False, False, False]  # counted, each on a worker thread
    assert all(r.result_tokens for r in records)
