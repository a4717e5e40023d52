"""A result whose dict keys are not strings (``{1: "x"}``) reaches the client as the JSON
aircore sends (``{"1": "x"}``); the meter sizes, counts and captures that same JSON, without
an error in the log."""

from __future__ import annotations

import logging
from typing import Any

import orjson
import pytest

from aircore import define_server, define_tool
from airmeter import MeterMiddleware
from airmeter.testing import MemorySink
from airmeter.tokens import EstimateCounter


async def test_a_result_with_int_keys_is_sized_and_counted_as_the_json_sent(
    caplog: pytest.LogCaptureFixture,
) -> None:
    sink = MemorySink()
    hook = MeterMiddleware(sinks=[sink], count_tokens="estimate", capture_results=True)
    tool = define_tool("lookup_codes", params={}, handler=lambda params: {1: "intkey", 2: [3]})
    server = define_server(name="keys", tools=[tool], meter=hook)
    with caplog.at_level(logging.WARNING, logger="airmeter"):
        async with server:
            reply: dict[str, Any] = await server.call_tool("lookup_codes", {}, request_id="k")
            (rec,) = await sink.wait_for(1)
    sent = reply["content"][0]["text"]
    assert orjson.loads(sent) == {"1": "intkey", "2": [3]}
    assert (rec.ok, rec.error_type) == (True, None)
    assert rec.output_bytes == len(orjson.dumps({"1": "intkey", "2": [3]}))
    assert rec.result_tokens == EstimateCounter().count(sent)
    assert rec.result == {"1": "intkey", "2": [3]}
    assert [r.getMessage() for r in caplog.records if r.name.startswith("airmeter")] == []
