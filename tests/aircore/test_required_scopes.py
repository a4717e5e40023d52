"""A tool definition's own ``required_scopes``: ``air serve --auth-config`` (a real process, a
local issuer's tokens, the official ``mcp`` client over Streamable HTTP) answers 403
``insufficient_scope`` for them like the configured globs and lists only the tools a caller may
call; without any authorization an HTTP server refuses to start; over stdio they do not apply."""

from __future__ import annotations

import re
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from mcp import MCPError
from mcp.client import Client
from mcp.client.stdio import StdioServerParameters, stdio_client

from aircore import DefinitionError, define_server, define_tool
from tests.air_process import run_air
from tests.airhttp.oauth_serve import OAuthServed, bearer_client, oauth_serving, serving_http

# real air serve processes, a local issuer and the official client: make test, not test-fast
pytestmark = pytest.mark.slow

SERVER = """
from aircore import define_server, define_tool

def read_note(params):
    return "note " + params["id"]

def delete_note(params):
    return "deleted " + params["id"]

server = define_server(
    name="notes",
    meter=True,
    tools=[
        define_tool(name="read_note", params={"id": "string"}, handler=read_note),
        define_tool(name="delete_note", params={"id": "string"}, handler=delete_note,
                    required_scopes=["notes:write"]),
    ],
)

@server.tool(required_scopes=["notes:admin"])
def purge_notes() -> str:
    return "purged"
"""


def _noop(params: Any) -> str:
    return "ok"


def test_required_scopes_must_be_a_list_of_scope_names() -> None:
    with pytest.raises(DefinitionError, match="must be a list"):
        define_tool("t", handler=_noop, required_scopes="notes:write")
    with pytest.raises(DefinitionError, match="is not a scope name"):
        define_tool("t", handler=_noop, required_scopes=["notes write"])
    with pytest.raises(DefinitionError, match="is not a scope name"):
        define_tool("t", handler=_noop, required_scopes=[""])
    tool = define_tool("t", handler=_noop, required_scopes=["a", "b", "a"])
    assert tool.required_scopes == frozenset({"a", "b"})
    server = define_server(name="s")

    @server.tool(required_scopes=["notes:admin"])
    def purge() -> str:
        return "purged"

    assert server.tools["purge"].required_scopes == frozenset({"notes:admin"})


@pytest.fixture
async def served(tmp_path: Path) -> AsyncIterator[OAuthServed]:
    # no tools: globs in the configuration: every per-tool scope here comes from the definitions
    async with oauth_serving(tmp_path, SERVER) as found:
        yield found


async def _names(served: OAuthServed, scope: str) -> set[str]:
    async with bearer_client(served.url, served.token(scope)) as client:
        names = {tool.name for tool in (await client.list_tools()).tools}
        for name in names:  # every tool listed is one the caller may call
            args = {} if name == "purge_notes" else {"id": "1"}
            assert not (await client.call_tool(name, args)).is_error
        return names


async def test_tools_list_shows_only_the_tools_the_callers_scopes_allow(
    served: OAuthServed,
) -> None:
    assert await _names(served, "mcp:tools") == {"read_note"}
    assert await _names(served, "mcp:tools notes:write") == {"read_note", "delete_note"}
    everything = "mcp:tools notes:write notes:admin"
    assert await _names(served, everything) == {"read_note", "delete_note", "purge_notes"}


async def test_calling_a_tool_without_its_required_scope_is_403_insufficient_scope(
    served: OAuthServed,
) -> None:
    body = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {"name": "delete_note", "arguments": {"id": "7"}},
    }
    headers = {
        "Authorization": f"Bearer {served.token('mcp:tools')}",
        "Accept": "application/json, text/event-stream",
        "MCP-Protocol-Version": "2025-06-18",
    }
    async with httpx.AsyncClient(timeout=30) as http:
        answer = await http.post(served.url, json=body, headers=headers)
        assert answer.status_code == 403
        challenge = answer.headers["www-authenticate"]
        assert 'error="insufficient_scope"' in challenge
        assert re.search(r'scope="[^"]*notes:write', challenge), challenge
        # the metadata announces the definitions' scopes, so a client knows what to ask for
        well_known = "/.well-known/oauth-protected-resource/mcp"
        meta = await http.get(served.url.replace("/mcp", well_known))
        assert {"mcp:tools", "notes:write", "notes:admin"} <= set(meta.json()["scopes_supported"])


def test_an_http_server_without_authorization_refuses_to_start(tmp_path: Path) -> None:
    (tmp_path / "notes.py").write_text(SERVER)
    done = run_air(
        "serve", str(tmp_path / "notes.py"), "--transport", "http", "--port", "0",
        "--store", "memory://", cwd=tmp_path,
    )  # fmt: skip
    assert done.returncode == 1, done.stderr
    assert "delete_note, purge_notes require OAuth scopes" in done.stderr
    assert "--auth-config" in done.stderr


async def test_over_stdio_required_scopes_do_not_apply(tmp_path: Path) -> None:
    (tmp_path / "notes.py").write_text(SERVER)
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "aircli", "serve", str(tmp_path / "notes.py"), "--transport", "stdio",
              "--store", "memory://"],
        cwd=str(tmp_path),
    )  # fmt: skip
    with (tmp_path / "stderr.txt").open("w", encoding="utf-8") as err:
        async with Client(stdio_client(params, err)) as client:
            names = {tool.name for tool in (await client.list_tools()).tools}
            assert names == {"read_note", "delete_note", "purge_notes"}
            result = await client.call_tool("delete_note", {"id": "7"})
            assert not result.is_error


DYNAMIC = """
from aircore import define_server, define_tool

def purge(params):
    return "PURGED"

def enable(params):
    server.add_tool(define_tool(name="purge_all", handler=purge, required_scopes=["notes:admin"]))
    return "enabled"

server = define_server(name="dyn", tools=[define_tool(name="enable_admin", handler=enable)])
"""


async def _legacy_call(http: httpx.AsyncClient, url: str, name: str) -> httpx.Response:
    headers = {
        "Accept": "application/json, text/event-stream",
        "MCP-Protocol-Version": "2025-06-18",
    }
    hello = {"protocolVersion": "2025-06-18", "capabilities": {},
             "clientInfo": {"name": "raw", "version": "1"}}  # fmt: skip
    opened = await http.post(
        url, json={"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": hello},
        headers=headers,
    )  # fmt: skip
    headers["Mcp-Session-Id"] = opened.headers["mcp-session-id"]
    call = {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
            "params": {"name": name, "arguments": {}}}  # fmt: skip
    return await http.post(url, json=call, headers=headers)


async def test_a_scoped_tool_added_after_start_is_refused_over_http_without_authorization(
    tmp_path: Path,
) -> None:
    """The server starts (no tool asks for a scope yet); one added later is neither listed nor
    run for anyone reaching the port: the official client (JSON, the fast path) and a raw
    legacy-era session alike."""
    async with serving_http(tmp_path, DYNAMIC) as url:
        async with Client(url) as client:
            assert (await client.call_tool("enable_admin", {})).content[0].text == "enabled"
            names = {tool.name for tool in (await client.list_tools()).tools}
            assert names == {"enable_admin"}
            with pytest.raises(MCPError, match=r"purge_all.*requires OAuth scopes"):
                await client.call_tool("purge_all", {})
        async with httpx.AsyncClient(timeout=30) as http:
            answer = await _legacy_call(http, url, "purge_all")
            assert "PURGED" not in answer.text
            assert "requires OAuth scopes" in answer.text, answer.text


async def test_with_a_static_token_a_scoped_tool_added_after_start_runs(tmp_path: Path) -> None:
    """``--token`` holds every scope, for tools added later too (as documented)."""
    async with (
        serving_http(tmp_path, DYNAMIC, "--token", "s3cret-token") as url,
        bearer_client(url, "s3cret-token") as client,
    ):
        await client.call_tool("enable_admin", {})
        assert "purge_all" in {tool.name for tool in (await client.list_tools()).tools}
        assert (await client.call_tool("purge_all", {})).content[0].text == "PURGED"
