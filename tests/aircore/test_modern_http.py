"""Raw 2026-07-28 JSON-RPC over real HTTP against tests/aircore/fixtures/modern_server.py: the
requestState is tamper-proof, removed methods are 404, headers are checked (custom ones too),
tasks work across separate HTTP requests, listen streams acknowledge first and tag every
notification."""

from __future__ import annotations

import asyncio
import base64
import json
from collections.abc import AsyncIterator, Iterator
from typing import Any

import anyio
import httpx
import pytest

from tests.aircore.conftest import MODERN, HttpServer

V = "2026-07-28"
TASKS = "io.modelcontextprotocol/tasks"
CAPS = {"elicitation": {}, "sampling": {}}
WAIT = 20.0


def meta(caps: dict[str, Any] | None = None) -> dict[str, Any]:
    return {
        "io.modelcontextprotocol/protocolVersion": V,
        "io.modelcontextprotocol/clientCapabilities": CAPS if caps is None else caps,
    }


def with_tasks(caps: dict[str, Any] | None = None) -> dict[str, Any]:
    return meta({**(CAPS if caps is None else caps), "extensions": {TASKS: {}}})


@pytest.fixture(scope="module")
def server() -> Iterator[HttpServer]:
    srv = HttpServer(MODERN)
    try:
        yield srv
    finally:
        assert srv.close() == 0


@pytest.fixture
async def http(server: HttpServer) -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(base_url=server.base, timeout=WAIT) as client:
        yield client


_ids = iter(range(1, 1_000_000))
NAME_FIELD = {"tools/call": "name", "prompts/get": "name", "resources/read": "uri"}


def _headers(method: str, params: dict[str, Any], extra: dict[str, str]) -> dict[str, str]:
    hdrs = {
        "content-type": "application/json",
        "accept": "application/json, text/event-stream",
        "mcp-protocol-version": V,
        "mcp-method": method,
    }
    field = NAME_FIELD.get(method) or ("taskId" if method.startswith("tasks/") else None)
    if field is not None and isinstance(params.get(field), str):
        hdrs["mcp-name"] = params[field]
    return {**hdrs, **extra}


def _answer(r: httpx.Response) -> Any:
    if r.headers["content-type"].startswith("text/event-stream"):
        data = [line[5:] for line in r.text.splitlines() if line.startswith("data:")]
        return json.loads(data[-1])
    return r.json()


async def rpc(
    http: httpx.AsyncClient,
    method: str,
    params: dict[str, Any],
    *,
    headers: dict[str, str] | None = None,
    status: int = 200,
) -> dict[str, Any]:
    """One request on its own HTTP exchange; returns the JSON-RPC answer."""
    params = {"_meta": meta(), **params}
    body = {"jsonrpc": "2.0", "id": next(_ids), "method": method, "params": params}
    r = await http.post("/mcp", json=body, headers=_headers(method, params, headers or {}))
    assert r.status_code == status, r.text
    answer: dict[str, Any] = _answer(r)
    assert answer["id"] == body["id"]
    return answer


async def call(
    http: httpx.AsyncClient, name: str, *, status: int = 200, **params: Any
) -> dict[str, Any]:
    return await rpc(http, "tools/call", {"name": name, "arguments": {}, **params}, status=status)


async def runs(http: httpx.AsyncClient) -> dict[str, int]:
    out = await call(http, "runs")
    return dict(json.loads(out["result"]["content"][0]["text"]))


# ---- input_required rounds -------------------------------------------------------------------


async def test_a_round_trip_carries_earlier_answers_in_the_request_state(
    http: httpx.AsyncClient,
) -> None:
    first = (await call(http, "two_rounds"))["result"]
    assert first["resultType"] == "input_required"
    assert "ttlMs" not in first  # interim results are not cacheable
    assert list(first["inputRequests"]) == ["first"]
    second = (
        await call(
            http,
            "two_rounds",
            requestState=first["requestState"],
            inputResponses={"first": {"action": "accept", "content": {"name": "Ada"}}},
        )
    )["result"]
    assert second["resultType"] == "input_required"
    assert list(second["inputRequests"]) == ["input-0"]
    assert second["requestState"] != first["requestState"]
    done = (
        await call(
            http,
            "two_rounds",
            requestState=second["requestState"],
            # a stale answer for a key not asked this round is ignored
            inputResponses={
                "input-0": {"action": "accept", "content": {"color": "red"}},
                "first": {"action": "accept", "content": {"name": "Mallory"}},
            },
        )
    )["result"]
    assert done["content"][0]["text"] == "Ada/red"


@pytest.mark.parametrize(
    "forge",
    [
        lambda s: s + "-TAMPERED",
        lambda s: s[:-2] + ("AA" if not s.endswith("AA") else "BB"),
        lambda s: s.split(".")[0] + "." + s.split(".")[1][::-1] + "." + s.split(".")[2],
        lambda s: "v2" + s[2:],
        lambda _s: "",
        lambda _s: "x" * 70_000,
    ],
)
async def test_a_tampered_request_state_is_refused_and_runs_nothing(
    http: httpx.AsyncClient, forge: Any
) -> None:
    first = (await call(http, "greet_after_asking"))["result"]
    before = (await runs(http)).get("greet_after_asking", 0)
    refused = await call(
        http,
        "greet_after_asking",
        requestState=forge(first["requestState"]),
        inputResponses={"name": {"action": "accept", "content": {"name": "Eve"}}},
        status=400,
    )
    assert refused["error"]["code"] == -32602
    assert refused["error"]["message"] == "Invalid or expired requestState"
    assert (await runs(http)).get("greet_after_asking", 0) == before


async def test_a_request_state_only_works_for_the_request_it_was_minted_for(
    http: httpx.AsyncClient,
) -> None:
    first = (await call(http, "greet_after_asking"))["result"]
    answer = {"name": {"action": "accept", "content": {"name": "Eve"}}}
    other_tool = await call(
        http, "two_rounds", requestState=first["requestState"], inputResponses=answer, status=400
    )
    assert other_tool["error"]["data"]["reason"] == "minted for another request"
    other_args = await call(
        http,
        "greet_after_asking",
        arguments={"extra": 1},
        requestState=first["requestState"],
        inputResponses=answer,
        status=400,
    )
    assert other_args["error"]["code"] == -32602


@pytest.mark.parametrize("responses", [None, [], "x", {"name": 12345}, {"name": None}])
async def test_malformed_input_responses_are_a_protocol_error(
    http: httpx.AsyncClient, responses: Any
) -> None:
    out = await call(http, "greet_after_asking", inputResponses=responses, status=400)
    assert out["error"]["code"] == -32602


async def test_missing_answers_are_asked_again_and_extra_ones_ignored(
    http: httpx.AsyncClient,
) -> None:
    again = (await call(http, "greet_after_asking", inputResponses={"wrong": {"x": 1}}))["result"]
    assert again["resultType"] == "input_required"
    assert list(again["inputRequests"]) == ["name"]
    answered = await call(
        http,
        "greet_after_asking",
        inputResponses={"name": {"action": "accept", "content": {"name": "Ada"}}, "x": {}},
    )
    assert answered["result"]["content"][0]["text"] == "Hello, Ada!"


async def test_input_is_only_asked_for_with_the_capability_declared(
    http: httpx.AsyncClient,
) -> None:
    out = await call(http, "list_my_roots", status=400)
    assert out["error"]["code"] == -32021
    assert out["error"]["data"] == {"requiredCapabilities": {"roots": {}}}


async def test_a_prompt_asks_in_rounds_too(http: httpx.AsyncClient) -> None:
    params = {"name": "asking", "arguments": {"style": "prose"}}
    first = (await rpc(http, "prompts/get", params))["result"]
    ((key, request),) = first["inputRequests"].items()
    assert request["method"] == "elicitation/create"
    done = await rpc(
        http,
        "prompts/get",
        {
            **params,
            "requestState": first["requestState"],
            "inputResponses": {key: {"action": "accept", "content": {"topic": "tea"}}},
        },
    )
    assert done["result"]["messages"][0]["content"]["text"] == "Write about tea in prose"


# ---- methods, headers, cache hints --------------------------------------------------------


@pytest.mark.parametrize(
    "method",
    ["initialize", "ping", "logging/setLevel", "resources/subscribe", "tasks/list", "no/such"],
)
async def test_methods_the_era_removed_are_404_method_not_found(
    http: httpx.AsyncClient, method: str
) -> None:
    out = await rpc(http, method, {"level": "info", "uri": "res://a"}, status=404)
    assert out["error"]["code"] == -32601


async def test_resources_read_carries_cache_hints(http: httpx.AsyncClient) -> None:
    out = (await rpc(http, "resources/read", {"uri": "res://a"}))["result"]
    assert (out["ttlMs"], out["cacheScope"], out["resultType"]) == (0, "private", "complete")


async def test_header_values_are_compared_without_surrounding_whitespace(
    server: HttpServer,
) -> None:
    # httpx refuses such header values, so this request is written on a plain socket
    params = {"_meta": meta(), "name": "routed", "arguments": {"region": "eu"}}
    body = json.dumps({"jsonrpc": "2.0", "id": 5, "method": "tools/call", "params": params})
    host, port = server.base.removeprefix("http://").rsplit(":", 1)
    head = (
        f"POST /mcp HTTP/1.1\r\nHost: {host}:{port}\r\nContent-Type: application/json\r\n"
        "Accept: application/json, text/event-stream\r\nConnection: close\r\n"
        f"MCP-Protocol-Version:  {V} \r\nMcp-Method: \ttools/call  \r\n"
        "Mcp-Name:   routed\t\r\nMcp-Param-Region:  eu \r\n"
        f"Content-Length: {len(body)}\r\n\r\n"
    )
    with anyio.fail_after(WAIT):
        reader, writer = await asyncio.open_connection(host, int(port))
        writer.write(head.encode() + body.encode())
        await writer.drain()
        raw = await reader.read()
        writer.close()
    status_line, _, rest = raw.partition(b"\r\n")
    assert status_line.split()[1] == b"200", raw
    answer = json.loads(rest.partition(b"\r\n\r\n")[2])
    assert answer["result"]["content"][0]["text"] == "eu:None:None"


def _b64(text: str) -> str:
    return "=?base64?" + base64.b64encode(text.encode()).decode() + "?="


@pytest.mark.parametrize(
    ("arguments", "param_headers", "accepted"),
    [
        ({"region": "eu"}, {"Region": "eu"}, True),
        ({"region": "eu"}, {"REGION": "eu"}, True),
        ({"region": "Grüße"}, {"Region": _b64("Grüße")}, True),
        ({"region": " pad "}, {"Region": _b64(" pad ")}, True),
        ({"region": "eu", "shard": 42}, {"Region": "eu", "Shard": "42.0"}, True),
        ({"region": "eu", "dry": False}, {"Region": "eu", "Dry-Run": "false"}, True),
        ({"region": "SGVsbG8="}, {"Region": "SGVsbG8="}, True),  # no sentinel: literal
        ({"region": "eu"}, {}, False),  # value in the body, header missing
        ({"region": "eu"}, {"Region": "us"}, False),
        ({"region": "Hello"}, {"Region": "=?base64?SGVsbG8?="}, False),  # bad padding
        ({"region": "Hello"}, {"Region": "=?base64?SGVs!!!bG8=?="}, False),
        ({"region": "eu", "shard": 42}, {"Region": "eu", "Shard": "41"}, False),
        ({"region": "eu", "dry": True}, {"Region": "eu", "Dry-Run": "True"}, False),
        ({"region": "eu"}, {"Region": "eu", "Shard": "1"}, False),  # header without a value
    ],
)
async def test_custom_param_headers_must_match_the_arguments(
    http: httpx.AsyncClient,
    arguments: dict[str, Any],
    param_headers: dict[str, str],
    accepted: bool,
) -> None:
    extra = {f"Mcp-Param-{k}": v for k, v in param_headers.items()}
    params = {"name": "routed", "arguments": arguments}
    out = await rpc(http, "tools/call", params, headers=extra, status=200 if accepted else 400)
    if accepted:
        assert out["result"]["isError"] is False if "isError" in out["result"] else True
    else:
        assert out["error"]["code"] == -32020


# ---- tasks ----------------------------------------------------------------------------------


async def task_call(http: httpx.AsyncClient, name: str, **arguments: Any) -> dict[str, Any]:
    out = await rpc(
        http, "tools/call", {"name": name, "arguments": arguments, "_meta": with_tasks()}
    )
    return dict(out["result"])


async def task_rpc(
    http: httpx.AsyncClient, method: str, status: int = 200, **params: Any
) -> dict[str, Any]:
    return await rpc(http, method, {"_meta": with_tasks(), **params}, status=status)


async def until(http: httpx.AsyncClient, task_id: str, *statuses: str) -> dict[str, Any]:
    """Poll tasks/get (each on its own HTTP request) until the task reaches a status."""
    with anyio.fail_after(WAIT):
        while True:
            task = (await task_rpc(http, "tasks/get", taskId=task_id))["result"]
            if task["status"] in statuses:
                return dict(task)
            await anyio.sleep(0.02)


async def test_a_call_becomes_a_task_followed_across_http_requests(
    http: httpx.AsyncClient,
) -> None:
    created = await task_call(http, "background")
    assert created["resultType"] == "task"
    assert created["status"] == "working"
    assert created["statusMessage"] == "started"
    assert len(created["taskId"]) >= 32
    assert {"createdAt", "lastUpdatedAt", "ttlMs", "pollIntervalMs"} <= set(created)
    assert "result" not in created
    assert "requestState" not in created
    done = await until(http, created["taskId"], "completed")
    assert done["result"]["content"][0]["text"] == "done as task=True"
    assert done["resultType"] == "complete"


async def test_without_the_extension_the_same_tool_answers_at_once(
    http: httpx.AsyncClient,
) -> None:
    out = (await call(http, "background"))["result"]
    assert out["content"][0]["text"] == "done as task=False"
    for method in ("tasks/get", "tasks/cancel"):
        refused = await rpc(http, method, {"taskId": "whatever"}, status=400)
        assert refused["error"]["code"] == -32021
    before = (await runs(http)).get("needs_task", 0)
    required = await call(http, "needs_task", status=400)
    assert required["error"]["code"] == -32021
    assert required["error"]["data"] == {"requiredCapabilities": {"extensions": {TASKS: {}}}}
    assert (await runs(http)).get("needs_task", 0) == before + 1  # refused at start_task


async def test_a_cancelled_task_ends_cancelled_and_cancelling_again_is_acknowledged(
    http: httpx.AsyncClient,
) -> None:
    created = await task_call(http, "background", forever=True)
    working = (await task_rpc(http, "tasks/get", taskId=created["taskId"]))["result"]
    assert working["status"] == "working"
    ack = (await task_rpc(http, "tasks/cancel", taskId=created["taskId"]))["result"]
    assert set(ack) == {"resultType", "_meta"}
    assert (await until(http, created["taskId"], "cancelled"))["status"] == "cancelled"
    again = (await task_rpc(http, "tasks/cancel", taskId=created["taskId"]))["result"]
    assert again["resultType"] == "complete"


async def test_a_task_waits_for_input_and_takes_partial_answers(http: httpx.AsyncClient) -> None:
    created = await task_call(http, "confirm_in_task")
    waiting = await until(http, created["taskId"], "input_required")
    with anyio.fail_after(WAIT):
        while len(waiting["inputRequests"]) < 2:
            waiting = await until(http, created["taskId"], "input_required")
    first, second = sorted(waiting["inputRequests"])
    assert waiting["inputRequests"][first]["method"] == "elicitation/create"
    ack = await task_rpc(
        http,
        "tasks/update",
        taskId=created["taskId"],
        inputResponses={first: {"action": "accept", "content": {"ok": True}}, "bogus": {}},
    )
    assert set(ack["result"]) == {"resultType", "_meta"}
    still = (await task_rpc(http, "tasks/get", taskId=created["taskId"]))["result"]
    assert still["status"] == "input_required"
    assert list(still["inputRequests"]) == [second]
    await task_rpc(
        http,
        "tasks/update",
        taskId=created["taskId"],
        inputResponses={second: {"action": "accept", "content": {"name": "Ada"}}},
    )
    done = await until(http, created["taskId"], "completed")
    assert done["result"]["content"][0]["text"] == "True:Ada"


async def test_tool_errors_complete_and_protocol_errors_fail_a_task(
    http: httpx.AsyncClient,
) -> None:
    broken = await task_call(http, "tool_error_in_task")
    completed = await until(http, broken["taskId"], "completed", "failed")
    assert completed["status"] == "completed"
    assert completed["result"]["isError"] is True
    protocol = await task_call(http, "protocol_error_in_task")
    failed = await until(http, protocol["taskId"], "completed", "failed")
    assert failed["status"] == "failed"
    assert failed["error"]["code"] == -32021
    assert "result" not in failed


@pytest.mark.parametrize("task_id", ["", "nope", "a" * 32, 7, None])
async def test_unknown_task_ids_are_invalid_params(http: httpx.AsyncClient, task_id: Any) -> None:
    out = await task_rpc(http, "tasks/get", taskId=task_id, status=400)
    assert out["error"]["code"] == -32602


async def test_a_task_id_header_must_name_the_task(http: httpx.AsyncClient) -> None:
    created = await task_call(http, "background")
    out = await rpc(
        http,
        "tasks/get",
        {"taskId": created["taskId"], "_meta": with_tasks()},
        headers={"mcp-name": "someone-else"},
        status=400,
    )
    assert out["error"]["code"] == -32020


# ---- listen streams -----------------------------------------------------------------------


async def test_a_listen_stream_is_acknowledged_first_and_tags_every_notification(
    server: HttpServer,
) -> None:
    params = {
        "_meta": with_tasks(),
        "notifications": {"resourceSubscriptions": ["res://b"], "toolsListChanged": True},
    }
    body = {"jsonrpc": "2.0", "id": "L1", "method": "subscriptions/listen", "params": params}
    async with httpx.AsyncClient(base_url=server.base, timeout=WAIT) as http:
        headers = _headers("subscriptions/listen", params, {})
        async with http.stream("POST", "/mcp", json=body, headers=headers) as stream:
            assert stream.headers["content-type"].startswith("text/event-stream")
            frames = stream.aiter_lines()
            with anyio.fail_after(WAIT):
                ack = await _next_frame(frames)
                assert ack["method"] == "notifications/subscriptions/acknowledged"
                # tools do not change at runtime here, so only the resource is honored
                assert ack["params"]["notifications"] == {"resourceSubscriptions": ["res://b"]}
                assert ack["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"] == "L1"
                await call(http, "touch", arguments={"uri": "res://a"})
                await call(http, "touch", arguments={"uri": "res://b"})
                update = await _next_frame(frames)
            assert update["method"] == "notifications/resources/updated"
            assert update["params"]["uri"] == "res://b"
            assert update["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"] == "L1"


async def _next_frame(lines: Any) -> dict[str, Any]:
    async for line in lines:
        if line.startswith("data:"):
            return dict(json.loads(line[5:]))
    raise AssertionError("the stream ended")


@pytest.mark.parametrize(
    "notifications",
    [None, [], {"toolsListChanged": "yes"}, {"resourceSubscriptions": "res://a"}],
)
async def test_a_malformed_listen_filter_is_refused(
    http: httpx.AsyncClient, notifications: Any
) -> None:
    out = await rpc(http, "subscriptions/listen", {"notifications": notifications}, status=400)
    assert out["error"]["code"] == -32602


async def test_task_notifications_need_the_tasks_extension(http: httpx.AsyncClient) -> None:
    out = await rpc(http, "subscriptions/listen", {"notifications": {"taskIds": ["t"]}}, status=400)
    assert out["error"]["code"] == -32021


@pytest.mark.parametrize(
    ("params", "says"),
    [
        ({}, "params._meta must be an object carrying"),  # no envelope at all
        ({"_meta": 7}, "params._meta must be an object carrying"),
        (
            {"_meta": {**meta(), "io.modelcontextprotocol/clientCapabilities": "x"}},
            "clientCapabilities'] must be an object",
        ),
    ],
)
async def test_a_2026_request_with_a_bad_envelope_is_told_what_is_wrong(
    http: httpx.AsyncClient, params: dict[str, Any], says: str
) -> None:
    """With the 2026-07-28 header but no envelope the answer was -32600 "Unsupported
    MCP-Protocol-Version: 2026-07-28" (a version this server speaks); capabilities that are no
    object were taken as none."""
    body = {"jsonrpc": "2.0", "id": next(_ids), "method": "tools/list", "params": params}
    r = await http.post("/mcp", json=body, headers=_headers("tools/list", params, {}))
    assert r.status_code == 400, r.text
    error = r.json()["error"]
    assert error["code"] == -32602
    assert says in error["message"]
