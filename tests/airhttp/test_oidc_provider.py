"""End to end: a real authorization server (oidc-provider, OpenID Certified, under Node 22),
``air serve --auth-config`` over Streamable HTTP, and the official ``mcp`` client's
``ClientCredentialsOAuthProvider``: discovery through the 401, metadata, token, calls."""

from __future__ import annotations

import asyncio
import os
import re
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.airhttp.oauth_client import oauth_client, signing_keys
from tests.airhttp.oidc_setup import NOTES

ROOT = Path(__file__).resolve().parents[2]
NODE = ROOT / ".oidc" / "node_modules" / ".bin" / "node"
PROVIDER = Path(__file__).with_name("oidc_provider.mjs")
START_TIMEOUT = 60.0

if not NODE.exists() and os.environ.get("AIR_TEST_OIDC") == "require":  # set by make test
    raise RuntimeError("oidc-provider is not installed in .oidc/: scripts/oidc.sh did not run")


@pytest.fixture(scope="module", autouse=True)
def _oidc_provider_installed() -> None:
    """A missing provider fails these tests (as tests/airgateway/test_gateway_oauth.py does):
    never a silent skip of what they prove."""
    if not NODE.exists():
        pytest.fail("oidc-provider is not installed: run scripts/oidc.sh (make test does)")


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _ready(proc: subprocess.Popen[str], pattern: str) -> str:
    assert proc.stdout is not None
    for line in proc.stdout:
        found = re.search(pattern, line)
        if found:
            return found.group(1)
    raise RuntimeError(f"process exited without {pattern!r}")


class Setup:
    def __init__(self, issuer: str, resource: str, url: str, data: Path) -> None:
        self.issuer = issuer
        self.resource = resource
        self.url = url
        self.data = data


@pytest.fixture(scope="module")
def setup(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Setup]:
    tmp = tmp_path_factory.mktemp("oauth")
    port = _free_port()
    resource = f"http://127.0.0.1:{port}/mcp"
    provider = subprocess.Popen(
        [str(NODE), str(PROVIDER)],
        env={
            **os.environ,
            "PORT": "0",
            "RESOURCE": resource,
            "JWKS": signing_keys(),
            "OIDC_PROVIDER": str(NODE.parents[1] / "oidc-provider"),
        },
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    server = None
    try:
        issuer = _ready(provider, r"ready (\S+)")
        (tmp / "notes.py").write_text(NOTES)
        (tmp / "auth.yml").write_text(
            f"issuer: {issuer}\n"
            f"resource: {resource}\n"
            "scopes: [mcp:tools]\n"
            'tools: {"delete_*": [notes:write]}\n'
        )
        server = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "aircli",
                "serve",
                str(tmp / "notes.py"),
                "--transport",
                "http",
                "--port",
                str(port),
                "--store",
                f"file://{tmp / 'data'}",
                "--auth-config",
                str(tmp / "auth.yml"),
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            stdin=subprocess.DEVNULL,
            text=True,
            cwd=ROOT,
        )
        assert server.stderr is not None
        line = server.stderr.readline()
        assert "http://" in line, line
        yield Setup(issuer, resource, resource, tmp / "data")
    finally:
        for proc in (server, provider):
            if proc is not None and proc.poll() is None:
                proc.terminate()
                proc.wait(timeout=30)
            for pipe in (proc.stdout, proc.stderr) if proc is not None else ():
                if pipe is not None:
                    pipe.close()


def _client(setup: Setup, client_id: str, scope: str) -> Any:
    return oauth_client(setup.url, setup.issuer, client_id, scope)


async def test_the_official_client_discovers_gets_a_token_and_calls(setup: Setup) -> None:
    async with _client(setup, "air-writer", "mcp:tools notes:write") as client:
        # the 401 asked for the server-wide scope only (least privilege): delete_note needs more
        names = {tool.name for tool in (await client.list_tools()).tools}
        assert names == {"read_note"}
        result = await client.call_tool("read_note", {"id": "7"})
        assert result.content[0].text == "note 7"
        # 403 insufficient_scope names notes:write; the client steps up and calls again
        result = await client.call_tool("delete_note", {"id": "7"})
        assert result.content[0].text == "deleted 7"
        names = {tool.name for tool in (await client.list_tools()).tools}
        assert names == {"read_note", "delete_note"}


async def test_a_client_without_the_tool_scope_neither_sees_nor_calls_it(setup: Setup) -> None:
    async with _client(setup, "air-reader", "mcp:tools") as client:
        names = {tool.name for tool in (await client.list_tools()).tools}
        assert names == {"read_note"}
    # the 403 names notes:write; the client tries to step up and the server refuses it that scope
    with pytest.raises(BaseException) as info:  # an ExceptionGroup of the SDK's
        async with _client(setup, "air-reader", "mcp:tools") as client:
            await client.call_tool("delete_note", {"id": "7"})
    assert "invalid_scope" in _messages(info.value)


def _messages(exc: BaseException) -> str:
    """Every message in an exception, its causes and (for groups) its members."""
    parts = [repr(exc)]
    for inner in getattr(exc, "exceptions", ()):
        parts.append(_messages(inner))
    if exc.__cause__ is not None:
        parts.append(_messages(exc.__cause__))
    return " ".join(parts)


async def test_without_a_token_the_challenge_leads_to_the_metadata(setup: Setup) -> None:
    async with httpx.AsyncClient() as http:
        answer = await http.post(setup.url, json={"jsonrpc": "2.0", "id": 1, "method": "ping"})
        assert answer.status_code == 401
        challenge = answer.headers["www-authenticate"]
        found = re.search(r'resource_metadata="([^"]+)"', challenge)
        assert found is not None
        metadata = (await http.get(found.group(1))).json()
        assert metadata["resource"] == setup.resource
        assert metadata["authorization_servers"] == [setup.issuer]
        server_meta = (await http.get(f"{setup.issuer}/.well-known/openid-configuration")).json()
        assert server_meta["issuer"] == setup.issuer


async def test_the_meter_records_who_called(setup: Setup) -> None:
    from airmeter import CALLS_NAMESPACE
    from airstore import create_storage

    async with _client(setup, "air-writer", "mcp:tools") as client:
        await client.call_tool("read_note", {"id": "meter"})
    for _ in range(300):  # the server delivers records within its flush interval
        store = await create_storage(f"file://{setup.data}", read_only=True)
        try:
            records = await store.query(CALLS_NAMESPACE, limit=1000)
        finally:
            await store.close()
        mine = [r for r in records if r.get("client_id") == "air-writer"]
        if mine:
            break
        await asyncio.sleep(0.1)
    assert mine, records
    record = mine[0]
    assert record["auth"] == "oauth"
    assert record["subject"].startswith("p:")  # pseudonymised: the raw sub is "air-writer"
    assert "air-writer" not in record["subject"]
