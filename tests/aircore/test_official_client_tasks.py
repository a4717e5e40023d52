"""The tasks extension driven by the official mcp 2.x client over real stdio and HTTP.

The client has no built-in tasks support; its extension interface (``ClientExtension`` with a
``ResultClaim`` on ``resultType: "task"``) is how a client opts in, so the client below is the
smallest real one: it advertises ``io.modelcontextprotocol/tasks``, follows a ``CreateTaskResult``
with ``tasks/get`` (``Mcp-Name`` carries the task id), answers ``input_required`` through
``tasks/update`` and hands the task's ``CallToolResult`` back from ``call_tool``. Legacy-era
clients never see a task: the same tools answer inline.
"""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator, Iterator, Sequence
from contextlib import asynccontextmanager
from typing import Any, ClassVar, Literal

import anyio
import mcp.types as mt
import pytest
from mcp import Client, StdioServerParameters
from mcp.client.extension import ClaimContext, ClientExtension, ResultClaim
from mcp.shared.exceptions import MCPError

from tests.aircore.conftest import MODERN, HttpServer

WAIT = 30.0
TASKS = "io.modelcontextprotocol/tasks"
ANSWERS: dict[str, dict[str, Any]] = {"Proceed?": {"ok": True}, "Name?": {"name": "Ada"}}


class TaskCreated(mt.Result):
    """A ``CreateTaskResult``: the ``Task`` fields with ``resultType: "task"``."""

    result_type: Literal["task"]
    task_id: str
    status: str
    poll_interval_ms: int | None = None


class TaskState(mt.Result):
    """What ``tasks/get`` answers (a ``DetailedTask``)."""

    task_id: str
    status: str
    poll_interval_ms: int | None = None
    result: dict[str, Any] | None = None
    error: dict[str, Any] | None = None
    input_requests: dict[str, dict[str, Any]] | None = None


class TaskIdParams(mt.RequestParams):
    task_id: str


class TaskUpdateParams(TaskIdParams):
    input_responses: dict[str, dict[str, Any]]


class TasksGet(mt.Request[TaskIdParams, Literal["tasks/get"]]):
    method: Literal["tasks/get"] = "tasks/get"
    name_param: ClassVar[str | None] = "taskId"


class TasksUpdate(mt.Request[TaskUpdateParams, Literal["tasks/update"]]):
    method: Literal["tasks/update"] = "tasks/update"
    name_param: ClassVar[str | None] = "taskId"


async def _elicit(_ctx: Any, params: Any) -> mt.ElicitResult:
    return mt.ElicitResult(action="accept", content=ANSWERS[params.message])


def _answer(request: dict[str, Any]) -> dict[str, Any]:
    assert request["method"] == "elicitation/create", request
    return {"action": "accept", "content": ANSWERS[request["params"]["message"]]}


class TasksExtension(ClientExtension):
    """Follows every task to its end; records the statuses it saw."""

    identifier = TASKS

    def __init__(self) -> None:
        self.seen: list[str] = []

    def claims(self) -> Sequence[ResultClaim[Any]]:
        return [ResultClaim(result_type="task", model=TaskCreated, resolve=self._follow)]

    async def _follow(self, created: TaskCreated, ctx: ClaimContext) -> mt.CallToolResult:
        self.seen.append(created.status)
        with anyio.fail_after(WAIT):
            while True:
                state = await ctx.session.send_request(
                    TasksGet(params=TaskIdParams(task_id=created.task_id)), TaskState
                )
                assert state.task_id == created.task_id
                if not self.seen or self.seen[-1] != state.status:
                    self.seen.append(state.status)
                if state.status == "completed":
                    assert state.result is not None
                    return mt.CallToolResult.model_validate(state.result)
                if state.status in ("failed", "cancelled"):
                    raise MCPError.from_error_data(mt.ErrorData.model_validate(state.error))
                if state.status == "input_required" and state.input_requests:
                    answers = {k: _answer(r) for k, r in state.input_requests.items()}
                    params = TaskUpdateParams(task_id=created.task_id, input_responses=answers)
                    await ctx.session.send_request(TasksUpdate(params=params), mt.Result)
                    continue
                await anyio.sleep((state.poll_interval_ms or 50) / 1000 / 10)


@pytest.fixture(scope="module")
def modern_http() -> Iterator[HttpServer]:
    server = HttpServer(MODERN)
    try:
        yield server
    finally:
        assert server.close() == 0


@asynccontextmanager
async def _client(
    transport: str, http: HttpServer, *, mode: str = "auto", tasks: TasksExtension | None = None
) -> AsyncIterator[Client]:
    target: Any = (
        StdioServerParameters(
            command=sys.executable,
            args=["-m", "aircli", "serve", MODERN, "--store", "memory://"],
        )
        if transport == "stdio"
        else http.url
    )
    extensions = [] if tasks is None else [tasks]
    async with Client(
        target, mode=mode, extensions=extensions, elicitation_callback=_elicit
    ) as client:
        yield client


def _text(result: Any) -> str:
    return str(result.content[0].text)


@pytest.mark.parametrize("transport", ["stdio", "http"])
async def test_the_official_client_follows_a_task_to_its_result_and_answers_its_input(
    transport: str, modern_http: HttpServer
) -> None:
    tasks = TasksExtension()
    async with _client(transport, modern_http, tasks=tasks) as client:
        assert client.session.discover_result is not None  # 2026-07-28
        with anyio.fail_after(WAIT):
            done = await client.call_tool("background", {})
            assert _text(done) == "done as task=True"
            assert tasks.seen[0] == "working"
            assert tasks.seen[-1] == "completed"
            tasks.seen.clear()
            confirmed = await client.call_tool("confirm_in_task", {})
            assert _text(confirmed) == "True:Ada"
            assert "input_required" in tasks.seen
            required = await client.call_tool("needs_task", {})
            assert _text(required) == "ran as a task"
            broken = await client.call_tool("tool_error_in_task", {})
            assert broken.is_error is True
            assert "broken on purpose" in _text(broken)
            with pytest.raises(MCPError) as failed:  # the task failed with a protocol error
                await client.call_tool("protocol_error_in_task", {})
            assert failed.value.error.code == -32021


@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_a_client_without_the_extension_gets_answers_inline_or_a_capability_error(
    mode: str, modern_http: HttpServer
) -> None:
    async with _client("http", modern_http, mode=mode) as client:
        with anyio.fail_after(WAIT):
            assert _text(await client.call_tool("background", {})) == "done as task=False"
            if mode == "auto":  # 2026-07-28: -32021 naming the extension
                with pytest.raises(MCPError) as info:
                    await client.call_tool("needs_task", {})
                assert info.value.error.code == -32021
                assert TASKS in str(info.value.error.data)
            else:  # the legacy era knows neither the extension nor -32021: an isError result
                refused = await client.call_tool("needs_task", {})
                assert refused.is_error is True
                assert _text(refused).startswith("[-32603]")
                assert "runs only as a task" in _text(refused)
