"""Values orjson rounds or refuses and exceptions that are hard to handle, through the official
client over real stdio and HTTP: the client gets every answer, integers beyond 64 bits exactly
(as from the SDK's ``MCPServer``), and the server keeps serving."""

from __future__ import annotations

import asyncio
import logging
import sys
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import pytest
from mcp import Client, StdioServerParameters
from mcp.shared.exceptions import MCPError

from aircore import define_server
from tests.aircore.conftest import ROOT, HttpServer

ODD = str(ROOT / "tests" / "aircore" / "fixtures" / "odd_values_server.py")
WAIT = 20.0
BIG = 12345678901234567890123  # beyond 64 bits, and not a float exactly


@pytest.fixture(scope="module")
def odd_http() -> Iterator[HttpServer]:
    server = HttpServer(ODD)
    try:
        yield server
    finally:
        assert server.close() == 0


@asynccontextmanager
async def _client(transport: str, http: HttpServer) -> AsyncIterator[Client]:
    target: Any = http.url
    if transport == "stdio":
        args = ["-m", "aircli", "serve", ODD, "--store", "memory://"]
        target = StdioServerParameters(command=sys.executable, args=args, cwd=str(ROOT))
    async with Client(target, mode="auto") as client:
        yield client


@pytest.mark.parametrize("transport", ["stdio", "http"])
async def test_integers_beyond_64_bits_arrive_and_return_exactly(
    transport: str, odd_http: HttpServer
) -> None:
    async with _client(transport, odd_http) as client:
        with anyio.fail_after(WAIT):
            summed = await client.call_tool("add", {"a": BIG, "b": 1})
            doubled = await client.call_tool("wei", {"amount": BIG})
    assert not summed.is_error
    assert summed.structured_content == {"result": BIG + 1}
    assert summed.content[0].text == str(BIG + 1)  # type: ignore[union-attr]
    assert doubled.structured_content == {"amount": BIG, "doubled": 2 * BIG}


@pytest.mark.parametrize("transport", ["stdio", "http"])
async def test_a_lone_surrogate_in_a_result_is_answered_as_a_replacement_character(
    transport: str, odd_http: HttpServer
) -> None:
    async with _client(transport, odd_http) as client:
        with anyio.fail_after(WAIT):
            result = await client.call_tool("file_names", {})
            after = await client.call_tool("add", {"a": 1, "b": 2})
    assert not result.is_error
    assert result.structured_content == {"result": ["caf\ufffd.txt", "plain.txt"]}
    assert after.structured_content == {"result": 3}


@pytest.mark.parametrize("transport", ["stdio", "http"])
async def test_a_response_that_cannot_be_json_is_answered_with_an_internal_error(
    transport: str, odd_http: HttpServer
) -> None:
    async with _client(transport, odd_http) as client:
        with anyio.fail_after(WAIT):
            with pytest.raises(MCPError) as refused:
                await client.call_tool("cyclic_content", {})
            after = await client.call_tool("add", {"a": 1, "b": 2})
    assert refused.value.error.code == -32603
    assert "circular reference" in refused.value.error.message
    assert after.structured_content == {"result": 3}


@pytest.mark.parametrize("transport", ["stdio", "http"])
async def test_odd_exceptions_from_a_tool_are_error_results_and_the_server_keeps_serving(
    transport: str, odd_http: HttpServer
) -> None:
    async with _client(transport, odd_http) as client:
        with anyio.fail_after(WAIT):
            unprintable = await client.call_tool("unprintable", {})
            library_exit = await client.call_tool("library_exit", {})
            stray_cancel = await client.call_tool("stray_cancel", {})
            after = await client.call_tool("add", {"a": 1, "b": 2})
    texts = [r.content[0].text for r in (unprintable, library_exit, stray_cancel)]  # type: ignore[union-attr]
    assert all(r.is_error for r in (unprintable, library_exit, stray_cancel))
    assert texts == [
        "[-32603] UnprintableError (its message cannot be printed)",
        "[-32603] LibraryExit: worker gone",
        "[-32603] tool 'stray_cancel' raised CancelledError without being cancelled",
    ]
    assert after.structured_content == {"result": 3}


@pytest.mark.parametrize("transport", ["stdio", "http"])
async def test_odd_exceptions_from_a_resource_are_internal_errors(
    transport: str, odd_http: HttpServer
) -> None:
    async with _client(transport, odd_http) as client:
        with anyio.fail_after(WAIT):
            with pytest.raises(MCPError) as unprintable:
                await client.read_resource("odd://unprintable")
            with pytest.raises(MCPError) as library_exit:
                await client.read_resource("odd://exit")
            after = await client.call_tool("add", {"a": 1, "b": 2})
    assert unprintable.value.error.code == library_exit.value.error.code == -32603
    assert "UnprintableError (its message cannot be printed)" in unprintable.value.error.message
    assert "LibraryExit: worker gone" in library_exit.value.error.message
    assert after.structured_content == {"result": 3}


@pytest.mark.parametrize("transport", ["stdio", "http"])
async def test_a_float_overflow_in_a_typed_result_is_an_error_naming_its_place(
    transport: str, odd_http: HttpServer
) -> None:
    async with _client(transport, odd_http) as client:
        with anyio.fail_after(WAIT):
            scalar = await client.call_tool("area", {"width": 1e200, "height": 1e200})
            nested = await client.call_tool("areas", {"width": 1e200, "heights": [1, 1e200]})
            finite = await client.call_tool("area", {"width": 2, "height": 3})
    assert scalar.is_error
    assert nested.is_error
    assert scalar.content[0].text == (  # type: ignore[union-attr]
        "[-32603] the tool returned a value that is not JSON: result is inf (JSON has no NaN "
        "or Infinity; return None or a string instead)"
    )
    assert "result['1e+200'] is inf" in nested.content[0].text  # type: ignore[union-attr]
    assert finite.structured_content == {"result": 6.0}


async def test_closing_a_pending_tool_coroutine_is_not_a_tool_failure(
    caplog: pytest.LogCaptureFixture,
) -> None:
    server = define_server(name="closing")
    started = asyncio.Event()

    @server.tool
    async def wait() -> str:
        started.set()
        await asyncio.Event().wait()
        return "never"

    async with server:
        call = server.call_tool("wait", {})
        call.send(None)  # the call runs up to the tool's first suspension
        assert started.is_set()
        call.close()  # what the garbage collector does to a task destroyed while pending
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR]


@pytest.mark.parametrize("transport", ["stdio", "http"])
async def test_nan_or_infinity_in_an_untyped_or_plain_text_result_is_an_error_naming_its_place(
    transport: str, odd_http: HttpServer
) -> None:
    """Without an output schema a NaN went out as ``null`` inside JSON text (the value changed,
    silently) and a bare one as the text ``nan``; now every result refuses them alike."""
    async with _client(transport, odd_http) as client:
        with anyio.fail_after(WAIT):
            empty = await client.call_tool("mean", {"values": []})
            fine = await client.call_tool("mean", {"values": [1, 2]})
            divided = await client.call_tool("ratio", {"a": 1, "b": 0})
            read = await client.call_tool("reading", {"value": 1})
            small = await client.call_tool("reading", {"value": 1e-300})
    texts = [r.content[0].text for r in (empty, divided, read)]  # type: ignore[union-attr]
    assert all(r.is_error for r in (empty, divided, read))
    assert "result['mean'] is nan (JSON has no NaN or Infinity" in texts[0]
    assert "result is inf (JSON has no NaN or Infinity" in texts[1]
    assert "result.value is inf (JSON has no NaN or Infinity" in texts[2]
    assert not fine.is_error
    assert '"mean": 1.5' in fine.content[0].text  # type: ignore[union-attr]
    assert not small.is_error
