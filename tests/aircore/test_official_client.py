"""The official mcp 2.x client against examples/demo_server.py over real stdio and real HTTP,
in both protocol eras (``auto`` probes server/discover → 2026-07-28; ``legacy`` initializes)."""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import mcp.types as mt
import pytest
from mcp import Client, StdioServerParameters
from mcp.shared.exceptions import MCPError

from tests.aircore.conftest import DEMO, HttpServer

# the official client against real air serve processes: make test, not test-fast
pytestmark = pytest.mark.slow

MODES = ["auto", "legacy"]
TRANSPORTS = ["stdio", "http"]
WAIT = 20.0


async def _accept(_ctx: Any, _params: Any) -> mt.ElicitResult:
    return mt.ElicitResult(action="accept", content={"confirmed": True})


@asynccontextmanager
async def _client(
    transport: str, mode: str, http: HttpServer, logs: list[Any] | None = None
) -> AsyncIterator[Client]:
    target: Any
    if transport == "stdio":
        target = StdioServerParameters(
            command=sys.executable,
            args=["-m", "aircli", "serve", DEMO, "--store", "memory://"],
        )
    else:
        target = http.url

    async def on_log(params: Any) -> None:
        if logs is not None:
            logs.append(params.data)

    async with Client(
        target, mode=mode, elicitation_callback=_accept, logging_callback=on_log, log_level="info"
    ) as client:
        yield client


def _text(result: Any) -> str:
    return str(result.content[0].text)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_official_client_uses_every_feature(
    transport: str, mode: str, demo_http: HttpServer
) -> None:
    logs: list[Any] = []
    async with _client(transport, mode, demo_http, logs) as client:
        era = client.session.discover_result is not None
        assert era is (mode == "auto")
        tools = (await client.list_tools()).tools
        names = {t.name for t in tools}
        assert len(names) >= 10
        assert {
            "ping",
            "get_user",
            "convert_units",
            "summarize_text",
            "fetch_url",
            "generate_text",
            "plan_trip",
            "always_fails",
            "slow_task",
        } <= names
        by_name = {t.name: t for t in tools}
        assert by_name["delete_note"].annotations is not None
        assert by_name["delete_note"].annotations.destructive_hint is True
        assert by_name["get_user"].output_schema is not None

        assert _text(await client.call_tool("ping", {})) == "pong"
        user = await client.call_tool("get_user", {"user_id": "u1"})
        assert user.structured_content == {"name": "Alice", "email": "alice@example.com", "age": 30}
        assert '"email": "alice@example.com"' in _text(user)

        bad = await client.call_tool("convert_units", {"value": "ten", "from_unit": "parsec"})
        assert bad.is_error is True
        assert "value: must be number" in _text(bad)
        assert "to_unit: required field is missing" in _text(bad)
        assert "from_unit" in _text(bad)

        fails = await client.call_tool("always_fails", {})
        assert fails.is_error is True
        assert _text(fails) == "[-32603] this tool always fails"

        with pytest.raises(MCPError) as info:
            await client.call_tool("no_such_tool", {})
        assert info.value.error.code == -32602

        progress: list[float] = []

        async def on_progress(value: float, total: float | None, message: str | None) -> None:
            progress.append(value)

        plan = await client.call_tool(
            "plan_trip", {"destination": "Rome"}, progress_callback=on_progress
        )
        assert plan.is_error is not True
        assert progress == [1, 2, 3, 4]

        deploy = await client.call_tool("confirm_deploy", {"env": "staging"})
        assert _text(deploy) == "deployed to staging"

        await client.call_tool("save_note", {"note_id": "n1", "text": "buy milk"})
        resources = (await client.list_resources()).resources
        assert [str(r.uri) for r in resources] == ["demo://readme"]
        templates = (await client.list_resource_templates()).resource_templates
        assert templates[0].uri_template == "notes://{note_id}"
        note = await client.read_resource("notes://n1")
        assert note.contents[0].text == "buy milk"

        prompts = (await client.list_prompts()).prompts
        assert prompts[0].name == "review_code"
        got = await client.get_prompt("review_code", {"code": "x = 1", "language": "python"})
        assert got.messages[0].content.text == "Please review this python:\nx = 1"


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_cancelling_a_call_cancels_the_handler(
    transport: str, mode: str, demo_http: HttpServer
) -> None:
    async with _client(transport, mode, demo_http) as client:
        before = _text(await client.call_tool("get_stats", {}))
        started = anyio.Event()

        async def on_progress(value: float, total: float | None, message: str | None) -> None:
            started.set()

        async with anyio.create_task_group() as tg:

            async def slow() -> None:
                await client.call_tool("slow_task", {"seconds": 60}, progress_callback=on_progress)

            tg.start_soon(slow)
            with anyio.fail_after(WAIT):
                await started.wait()
            tg.cancel_scope.cancel()

        def counts(stats: Any) -> dict[str, int]:
            return dict(stats.get("slow_task", {})) if stats else {}

        base = counts(_parse(before))
        with anyio.fail_after(WAIT):
            while True:  # the server cancels asynchronously; ask until it reports it
                now = counts(_parse(_text(await client.call_tool("get_stats", {}))))
                if now.get("cancelled", 0) > base.get("cancelled", 0):
                    break
                await anyio.sleep(0.05)
        assert now.get("finished", 0) == base.get("finished", 0)
        assert _text(await client.call_tool("ping", {})) == "pong"


def _parse(value: Any) -> Any:
    import json

    return json.loads(value) if isinstance(value, str) else value
