"""Deeply nested JSON sent to the dashboard's callback route is a client's mistake: 400 with
the reason, never 500 and a ``RecursionError`` traceback (a real dashboard server)."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterator

import httpx
import pytest

from airmeter import CALLS_NAMESPACE
from airstore import FileStore
from dashboard.callback_body import MAX_DEPTH, parse_callback_body
from dashboard.reader import SyncReader
from dashboard.server import DashboardServer

WAIT_S = 20.0
ROUTE = "/_dash-update-component"


@pytest.fixture(scope="module")
def dashboard(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    data = tmp_path_factory.mktemp("deep") / "data"

    async def create() -> None:
        async with FileStore(data) as store:
            await store.append(CALLS_NAMESPACE, {"tool": "echo", "layer": "L1", "ok": True})

    asyncio.run(create())
    url = f"file://{data}"
    with DashboardServer(SyncReader.open(url), store_url=url, port=0) as server:
        yield f"http://127.0.0.1:{server.port}"


def _callback(value: object) -> dict[str, object]:
    return {"output": "custom-range.style", "outputs": {"id": "custom-range", "property": "style"},
            "inputs": [{"id": "range", "property": "value", "value": value}],
            "changedPropIds": ["range.value"]}  # fmt: skip


def _nested(depth: int) -> bytes:
    return b"[" * depth + b"]" * depth


@pytest.mark.parametrize(
    "body",
    [
        _nested(1000),
        _nested(100_000),
        b'{"a":' * 5000 + b"1" + b"}" * 5000,
        b'{"output":"custom-range.style","inputs":[{"id":"range","property":"value","value":'
        + _nested(2000)
        + b"}]}",
    ],
    ids=["array-1000", "array-100k", "object-5000", "deep-value-in-a-callback"],
)
def test_deep_json_to_the_callback_route_is_answered_400_without_a_traceback(
    dashboard: str, body: bytes, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.ERROR)
    with httpx.Client(base_url=dashboard, timeout=WAIT_S) as http:
        answer = http.post(ROUTE, content=body, headers={"content-type": "application/json"})
        assert answer.status_code == 400, answer.text[:200]
        assert "nested" in answer.text
        assert http.post(ROUTE, json=_callback("1h")).status_code == 200  # still serving
    assert not [r for r in caplog.records if "Recursion" in r.getMessage() or r.exc_info]


def test_a_callback_body_within_the_depth_bound_is_read() -> None:
    shallow = b"[" * MAX_DEPTH + b"]" * MAX_DEPTH
    body, problem = parse_callback_body(shallow)
    assert problem is None
    assert isinstance(body, list)
    body, problem = parse_callback_body(b"[" * (MAX_DEPTH + 1) + b"]" * (MAX_DEPTH + 1))
    assert body is None
    assert problem == f"the body is nested deeper than {MAX_DEPTH} levels"
    assert parse_callback_body(b"{not json") == (None, "the body is not JSON")
