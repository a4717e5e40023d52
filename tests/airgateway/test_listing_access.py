"""``tools/list`` and ``prompts/list`` through the gateway show each client only what its
token's allow list lets it use: real official clients with different tokens, in both eras,
against a real gateway process and a real upstream."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import httpx2
import pytest
from mcp import Client, MCPError
from mcp.client.streamable_http import streamable_http_client

from tests.airgateway.procs import air, free_port, http_replica, started

pytestmark = pytest.mark.slow
TOKENS = {"ci": "ci-token-123", "ops": "ops-token-456", "greeter": "greeter-token-789"}
ALL_TOOLS = {
    "whoami", "echo", "slow_read", "slow_write", "fail", "pid", "progress", "ask", "muse",
    "linger", "grow", "background",
}  # fmt: skip
SEES = {
    "ci": ({"echo", "whoami"}, set()),
    "ops": (ALL_TOOLS, {"greet"}),
    "greeter": (set(), {"greet"}),
}


@asynccontextmanager
async def _client(url: str, token: str, mode: str) -> AsyncIterator[Client]:
    http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=30)
    async with http, Client(streamable_http_client(url, http_client=http), mode=mode) as client:  # type: ignore[arg-type]
        yield client


@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_each_client_lists_only_the_tools_and_prompts_its_allow_list_lets_it_use(
    tmp_path: Path, mode: str
) -> None:
    port = free_port()
    config = tmp_path / "gw.yml"
    config.write_text(
        f"servers:\n  - name: notes\n    url: http://127.0.0.1:{port}/mcp\n"
        "clients:\n"
        "  - name: ci\n    token_env: GW_CI\n    allow: [echo, 'who*']\n"
        "  - name: ops\n    token_env: GW_OPS\n"
        "  - name: greeter\n    token_env: GW_GREETER\n    allow: [greet]\n"
    )
    env = {f"GW_{name.upper()}": token for name, token in TOKENS.items()}
    argv = air("gateway", "--config", str(config), "--port", "0", "--store", "memory://",
               "--no-meter")  # fmt: skip
    with started(http_replica("a", port), env={"REPLICA": "a"}), started(argv, env=env) as gw:
        for name, (tools, prompts) in SEES.items():
            async with _client(gw.url, TOKENS[name], mode) as client:
                listed = {t.name for t in (await client.list_tools()).tools}
                assert listed == tools, name
                assert {p.name for p in (await client.list_prompts()).prompts} == prompts, name
                for tool in ("echo", "slow_write"):  # what is listed is what may be called
                    if tool in listed:
                        await client.call_tool(tool, {"text": "x", "seconds": 0})
                        continue
                    with pytest.raises(MCPError) as raised:
                        await client.call_tool(tool, {"text": "x", "seconds": 0})
                    assert raised.value.error.code == -32004, (name, tool)
