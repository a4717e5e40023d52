"""Property: any JSON value sent as a frame gets a well-formed answer (or none, for a valid
notification or response), and the server never raises."""

from __future__ import annotations

import asyncio
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from aircore import define_server, define_tool
from aircore.protocol.framing import check, decode, encode

JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4)
    ),
    max_leaves=12,
)
METHODS = st.sampled_from(
    [
        "tools/call",
        "tools/list",
        "ping",
        "initialize",
        "server/discover",
        "prompts/get",
        "resources/read",
        "nope",
        "notifications/cancelled",
    ]
)
FRAMES = JSON | st.fixed_dictionaries(
    {"jsonrpc": st.sampled_from(["2.0", "1.0", 2]), "method": METHODS | JSON},
    optional={"id": st.integers() | st.text(max_size=4) | JSON, "params": JSON},
)
CODES = {-32700, -32600, -32601, -32602, -32603, -32020, -32021, -32022}

TOOL = define_tool("t", params={"a": "string"}, handler=lambda p: p["a"])


async def _answer(frame: Any) -> Any:
    async with define_server(name="p", tools=[TOOL]) as server:
        return await server.handle_message(frame)


@settings(max_examples=300, deadline=None)
@given(FRAMES)
def test_any_frame_gets_a_well_formed_answer_or_none(frame: Any) -> None:
    kind, error = check(frame)
    assert (kind == 0) == (error is not None)
    out = asyncio.run(_answer(frame))
    if out is None:
        assert kind in (2, 3)  # a notification, or a response from the client
        return
    assert out["jsonrpc"] == "2.0"
    assert "id" in out
    assert ("result" in out) != ("error" in out)
    if "error" in out:
        assert out["error"]["code"] in CODES
        assert isinstance(out["error"]["message"], str)


@given(st.integers(min_value=-(2**200), max_value=2**200), st.text(max_size=8))
def test_any_integer_survives_encode_and_decode_exactly(number: int, text: str) -> None:
    message = {"jsonrpc": "2.0", "id": 1, "result": {"n": number, "text": text, "big": [number]}}
    decoded = decode(encode(message))
    assert decoded == message
    assert type(decoded["result"]["n"]) is int
