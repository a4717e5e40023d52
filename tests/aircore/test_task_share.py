"""One client cannot hold every task slot (issue 31, item 8): two official mcp clients over
HTTP against a real ``air serve``; the one that fills its share gets a clear error, the other
still runs its task-required tools."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator, Sequence
from contextlib import asynccontextmanager
from typing import Any

import anyio
import mcp.types as mt
import pytest
from mcp import Client
from mcp.client.extension import ClaimContext, ClientExtension, ResultClaim

from aircore.protocol.tasks import MAX_TASKS, MAX_TASKS_PER_CALLER
from tests.aircore.conftest import MODERN, HttpServer
from tests.aircore.test_official_client_tasks import TASKS, TaskCreated, TasksExtension

WAIT = 60.0


class StartOnly(ClientExtension):
    """Takes a ``CreateTaskResult`` as the call's answer (the task runs on)."""

    identifier = TASKS

    def claims(self) -> Sequence[ResultClaim[Any]]:
        return [ResultClaim(result_type="task", model=TaskCreated, resolve=self._started)]

    async def _started(self, created: TaskCreated, _ctx: ClaimContext) -> mt.CallToolResult:
        return mt.CallToolResult(content=[mt.TextContent(type="text", text=created.task_id)])


@pytest.fixture
def http() -> Iterator[HttpServer]:
    server = HttpServer(MODERN)
    try:
        yield server
    finally:
        assert server.close() == 0


@asynccontextmanager
async def _client(url: str, name: str, extension: ClientExtension) -> AsyncIterator[Client]:
    info = mt.Implementation(name=name, version="1.0")
    async with Client(url, client_info=info, extensions=[extension]) as client:
        yield client


async def test_a_client_past_its_share_of_tasks_gets_a_clear_error_and_others_go_on(
    http: HttpServer,
) -> None:
    started = 0
    async with _client(http.url, "hog", StartOnly()) as hog:
        with anyio.fail_after(WAIT):
            for _ in range(MAX_TASKS + 1):  # every slot, once, and one more
                result = await hog.call_tool("hold_task", {})
                if result.is_error:
                    break
                started += 1
        assert result.is_error is True  # a tool error the model can read, saying why
        text = result.content[0].text  # type: ignore[union-attr]
        assert started == MAX_TASKS_PER_CALLER, text
        assert text.startswith("[-32603] this client holds 128 running tasks, its share")
        async with _client(http.url, "polite", TasksExtension()) as polite:
            with anyio.fail_after(WAIT):
                done = await polite.call_tool("needs_task", {})
                assert done.content[0].text == "ran as a task"  # type: ignore[union-attr]
                held = await polite.call_tool("background", {})  # may still start tasks
                assert done.is_error is not True
                assert held.content[0].text == "done as task=True"  # type: ignore[union-attr]
