"""The official mcp 2.x client against tests/aircore/fixtures/modern_server.py over real stdio and
HTTP: input requests in both eras (2026-07-28 input_required rounds the client drives itself;
legacy server→client requests) and subscriptions/listen."""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import mcp.types as mt
import pytest
from mcp import Client, StdioServerParameters
from mcp.client.subscriptions import ResourceUpdated

from tests.aircore.conftest import MODERN, HttpServer

WAIT = 20.0


@pytest.fixture(scope="module")
def modern_http() -> Iterator[HttpServer]:
    server = HttpServer(MODERN)
    try:
        yield server
    finally:
        assert server.close() == 0


ANSWERS = {
    "What is your name?": {"name": "Ada"},
    "Name?": {"name": "Ada"},
    "Who?": {"name": "Ada"},
    "Color?": {"color": "blue"},
    "Topic?": {"topic": "tides"},
}


async def _elicit(_ctx: Any, params: Any) -> mt.ElicitResult:
    return mt.ElicitResult(action="accept", content=ANSWERS[params.message])


async def _sample(_ctx: Any, params: Any) -> mt.CreateMessageResult:
    asked = params.messages[0].content.text
    return mt.CreateMessageResult(
        role="assistant",
        content=mt.TextContent(type="text", text=asked.upper()),
        model="echo",
        stop_reason="endTurn",
    )


async def _roots(_ctx: Any) -> mt.ListRootsResult:
    return mt.ListRootsResult(roots=[mt.Root(uri="file:///work", name="work")])


@asynccontextmanager
async def _client(transport: str, mode: str, http: HttpServer) -> AsyncIterator[Client]:
    target: Any = (
        StdioServerParameters(
            command=sys.executable,
            args=["-m", "aircli", "serve", MODERN, "--store", "memory://"],
        )
        if transport == "stdio"
        else http.url
    )
    async with Client(
        target,
        mode=mode,
        elicitation_callback=_elicit,
        sampling_callback=_sample,
        list_roots_callback=_roots,
    ) as client:
        yield client


def _text(result: Any) -> str:
    return str(result.content[0].text)


@pytest.mark.parametrize("mode", ["auto", "legacy"])
@pytest.mark.parametrize("transport", ["stdio", "http"])
async def test_tools_and_prompts_get_their_answers_from_the_official_client(
    transport: str, mode: str, modern_http: HttpServer
) -> None:
    async with _client(transport, mode, modern_http) as client:
        modern = client.session.discover_result is not None
        assert modern is (mode == "auto")
        with anyio.fail_after(WAIT):
            assert _text(await client.call_tool("greet_after_asking", {})) == "Hello, Ada!"
            assert _text(await client.call_tool("two_rounds", {})) == "Ada/blue"
            three = await client.call_tool("ask_three", {"word": "hi"})
            assert _text(three) == "Ada|SAY HI|file:///work"
            assert _text(await client.call_tool("list_my_roots", {})) == "file:///work"
            prompt = await client.get_prompt("asking", {"style": "haiku"})
            assert prompt.messages[0].content.text == "Write about tides in haiku"  # type: ignore[union-attr]


@pytest.mark.parametrize("transport", ["stdio", "http"])
async def test_a_listen_stream_gets_only_the_resources_it_asked_for(
    transport: str, modern_http: HttpServer
) -> None:
    async with _client(transport, "auto", modern_http) as client:
        with anyio.fail_after(WAIT):
            async with client.listen(resource_subscriptions=["res://a"]) as sub:
                assert sub.honored.resource_subscriptions == ["res://a"]
                assert _text(await client.call_tool("touch", {"uri": "res://b"})) == "notified 0"
                assert _text(await client.call_tool("touch", {"uri": "res://a"})) == "notified 1"
                event = await sub.__anext__()
                assert event == ResourceUpdated(uri="res://a")
            # leaving the block closes the stream (the server learns it a moment later): then
            # nobody listens any more
            for _ in range(int(WAIT / 0.05)):
                if _text(await client.call_tool("touch", {"uri": "res://a"})) == "notified 0":
                    break
                await anyio.sleep(0.05)
            else:
                raise AssertionError("the closed stream still gets notifications")
