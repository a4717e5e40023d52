"""SdkMeterMiddleware over real Streamable HTTP (uvicorn on 127.0.0.1, a free port)."""

from __future__ import annotations

import asyncio
import socket
from collections.abc import AsyncIterator
from typing import Any

import pytest
import uvicorn
from mcp import Client
from mcp.server.mcpserver import MCPServer

from airmeter import Layer
from airmeter.integrations import instrument_mcp_server
from tests.airmeter.integrations.conftest import ListRecorder


class _Server(uvicorn.Server):
    """uvicorn with a ready event (set once it listens)."""

    def __init__(self, config: uvicorn.Config) -> None:
        super().__init__(config)
        self.ready = asyncio.Event()

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        await super().startup(sockets=sockets)
        self.ready.set()


@pytest.fixture
async def served(recorder: ListRecorder) -> AsyncIterator[str]:
    mcp: MCPServer[Any] = MCPServer("http-demo")

    @mcp.tool()
    def get_user(user_id: str) -> str:
        return f"user {user_id}"

    instrument_mcp_server(mcp, recorder)
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    config = uvicorn.Config(mcp.streamable_http_app(), log_level="warning", lifespan="on")
    server = _Server(config)
    task = asyncio.create_task(server.serve(sockets=[sock]))
    try:
        await asyncio.wait_for(server.ready.wait(), 20)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        server.should_exit = True
        await asyncio.wait_for(task, 20)
        sock.close()


@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_http_calls_record_transport_and_session(
    served: str, recorder: ListRecorder, mode: str
) -> None:
    async with Client(served, mode=mode) as client:
        assert not (await client.call_tool("get_user", {"user_id": "42"})).is_error
    (rec,) = recorder.records
    assert (rec.server, rec.tool, rec.layer, rec.ok) == ("http-demo", "get_user", Layer.L2, True)
    assert rec.transport == "http"
    if mode == "legacy":  # the handshake era has sessions; 2026-07-28 is stateless
        assert rec.session_id
        assert rec.protocol_version != "2026-07-28"
    else:
        assert rec.protocol_version == "2026-07-28"
