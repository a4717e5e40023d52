"""The gateway as an OAuth 2.1 resource server (issue 34 §2), end to end: a real authorization
server (oidc-provider under Node 22), ``air gateway --config`` with ``auth:`` in front of a real
``air serve`` upstream (through a proxy that records every byte the gateway sends it), and the
official ``mcp`` client's ``ClientCredentialsOAuthProvider``. Plus the ``auth:`` and ``match:``
configuration errors."""

from __future__ import annotations

import asyncio
import os
import re
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from airgateway.config import parse_config
from airgateway.errors import ConfigError
from tests.airgateway.procs import air, free_port, started
from tests.airgateway.recorder import Recorder
from tests.airhttp.oauth_client import oauth_client, signing_keys

ROOT = Path(__file__).resolve().parents[2]
NODE = ROOT / ".oidc" / "node_modules" / ".bin" / "node"
PROVIDER = ROOT / "tests" / "airhttp" / "oidc_provider.mjs"
OPS_TOKEN = "ops-static-token-123"

NOTES = """
from aircore import define_server, define_tool

def read_note(params):
    return "note " + params["id"]

def delete_note(params):
    return "deleted " + params["id"]

server = define_server(
    name="notes",
    tools=[
        define_tool(name="read_note", params={"id": "string"}, handler=read_note),
        define_tool(name="delete_note", params={"id": "string"}, handler=delete_note),
    ],
)
"""

AUTH = """
auth:
  issuer: https://login.example.com/
  resource: https://gw.example.com/mcp
  scopes: [mcp:tools]
  group_claim: groups
"""


# ---- configuration -------------------------------------------------------------------------
def _config(text: str) -> Any:
    return parse_config("servers:\n  - {name: a, url: 'http://127.0.0.1:9/mcp'}\n" + text,
                        environ={"OPS": OPS_TOKEN})  # fmt: skip


def test_the_auth_section_takes_the_auth_config_keys() -> None:
    config = _config(AUTH + "clients:\n  - {name: ops, match: {groups: admins}, allow: [a*]}\n")
    assert config.auth is not None
    assert config.auth.resource == "https://gw.example.com/mcp"
    assert config.auth.scopes == frozenset({"mcp:tools"})
    assert config.clients[0].match == {"groups": "admins"}
    assert config.clients[0].token is None


@pytest.mark.parametrize(
    ("text", "key"),
    [
        ("auth:\n  issuer: https://login.example.com/\n", "auth.resource"),
        ("auth:\n  issuer: http://login.example.com/\n  resource: https://x/mcp\n",
         "auth.issuer"),
        (AUTH + "  colour: blue\n", "auth.colour"),
        ("auth: [1]\n", "auth"),
        ("clients:\n  - {name: a, match: {client_id: x}}\n", "clients[0].match"),
        (AUTH + "clients:\n  - {name: a, match: {email: x}}\n", "clients[0].match.email"),
        (AUTH + "clients:\n  - {name: a, match: {sub: [x]}}\n", "clients[0].match.sub"),
        (AUTH + "clients:\n  - {name: a}\n", "clients[0].token_env"),
    ],
)  # fmt: skip
def test_a_bad_auth_or_match_names_its_key(text: str, key: str) -> None:
    with pytest.raises(ConfigError) as info:
        _config(text)
    assert info.value.key == key, info.value


def test_an_oauth_caller_is_the_first_entry_its_claims_fit() -> None:
    from airgateway.access import Access, Unmatched
    from airhttp.identity import Identity
    from airstore import MemoryStore

    config = _config(
        AUTH + "clients:\n"
        "  - {name: admins, match: {groups: admins, scope: 'notes:write'}}\n"
        "  - {name: alice, match: {sub: alice}, allow: [read_*]}\n"
        "  - {name: ops, token_env: OPS}\n"
    )
    access = Access(config.clients, {}, token=None, store=MemoryStore())

    def caller(**claims: Any) -> Identity:
        scopes = frozenset(str(claims.get("scope", "mcp:tools")).split())
        return Identity(auth="oauth", client_id=claims.get("client_id"),
                        subject=claims.get("sub"), scopes=scopes, claims=claims)  # fmt: skip

    admin = caller(sub="bob", groups=["staff", "admins"], scope="mcp:tools notes:write")
    assert access.identify("jwt", admin) is config.clients[0]
    # the group alone is not enough: every claim of the match must fit
    with pytest.raises(Unmatched):
        access.identify("jwt", caller(sub="bob", groups=["admins"]))
    assert access.identify("jwt", caller(sub="alice", groups="admins")) is config.clients[1]
    # a static token names its client, an OAuth caller never matches a token-only entry
    assert access.identify(OPS_TOKEN, None) is config.clients[2]
    with pytest.raises(Unmatched):
        access.identify(OPS_TOKEN, caller(sub="carol"))
    # match: {} is a catch-all
    rest = _config(AUTH + "clients:\n  - {name: rest, match: {}, allow: [read_*]}\n").clients
    catch_all = Access(rest, {}, token=None, store=MemoryStore())
    assert catch_all.identify("jwt", caller(sub="carol")) is rest[0]


# ---- end to end ----------------------------------------------------------------------------
class World:
    def __init__(self, issuer: str, url: str, data: Path, recorder: Recorder) -> None:
        self.issuer = issuer
        self.url = url
        self.data = data
        self.recorder = recorder


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    if not NODE.exists():
        pytest.fail("oidc-provider is not installed: run scripts/oidc.sh (make test does)")
    tmp = tmp_path_factory.mktemp("gwoauth")
    port = free_port()
    resource = f"http://127.0.0.1:{port}/mcp"
    provider = subprocess.Popen(
        [str(NODE), str(PROVIDER)],
        env={**os.environ, "PORT": "0", "RESOURCE": resource, "JWKS": signing_keys(),
             "OIDC_PROVIDER": str(NODE.parents[1] / "oidc-provider")},
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
    )  # fmt: skip
    try:
        assert provider.stdout is not None
        issuer = ""
        for line in provider.stdout:
            found = re.search(r"ready (\S+)", line)
            if found:
                issuer = found.group(1)
                break
        assert issuer, "oidc-provider did not start"
        (tmp / "notes.py").write_text(NOTES)
        serve = air("serve", str(tmp / "notes.py"), "--transport", "http", "--port", "0",
                    "--store", f"file://{tmp / 'up'}")  # fmt: skip
        with started(serve) as upstream:
            recorder = Recorder(int(upstream.url.split(":")[2].split("/")[0]))
            (tmp / "gateway.yml").write_text(
                f"servers:\n  - {{name: notes, url: 'http://127.0.0.1:{recorder.port}/mcp'}}\n"
                f"auth:\n  issuer: {issuer}\n  resource: {resource}\n  scopes: [mcp:tools]\n"
                "clients:\n"
                "  - {name: readers, match: {client_id: air-reader}, allow: [read_*]}\n"
                "  - {name: ops, token_env: OPS_TOKEN}\n"
                "  - {name: writers, match: {client_id: air-writer, scope: 'mcp:tools'}}\n"
            )
            argv = air("gateway", "--config", str(tmp / "gateway.yml"), "--port", str(port),
                       "--store", f"file://{tmp / 'data'}")  # fmt: skip
            try:
                with started(argv, env={"OPS_TOKEN": OPS_TOKEN}) as gateway:
                    assert gateway.url == resource, gateway.lines
                    yield World(issuer, resource, tmp / "data", recorder)
            finally:
                recorder.close()
    finally:
        provider.terminate()
        provider.wait(timeout=30)
        if provider.stdout is not None:
            provider.stdout.close()


def _client(world: World, client_id: str, scope: str) -> Any:
    return oauth_client(world.url, world.issuer, client_id, scope)


async def test_the_official_client_lists_and_calls_through_the_gateway(world: World) -> None:
    async with _client(world, "air-writer", "mcp:tools notes:write") as client:
        names = {tool.name for tool in (await client.list_tools()).tools}
        assert names == {"read_note", "delete_note"}
        result = await client.call_tool("delete_note", {"id": "7"})
        assert result.content[0].text == "deleted 7"


async def test_a_caller_matching_a_restricted_entry_sees_and_calls_only_its_tools(
    world: World,
) -> None:
    async with _client(world, "air-reader", "mcp:tools") as client:
        names = {tool.name for tool in (await client.list_tools()).tools}
        assert names == {"read_note"}
        result = await client.call_tool("read_note", {"id": "3"})
        assert result.content[0].text == "note 3"
        with pytest.raises(BaseException) as info:  # an McpError (or the SDK's group)
            await client.call_tool("delete_note", {"id": "3"})
        assert "may not use" in repr(info.value) or "403" in repr(info.value), info.value


async def test_without_a_token_the_challenge_leads_to_the_gateways_metadata(
    world: World,
) -> None:
    async with httpx.AsyncClient() as http:
        answer = await http.post(world.url, json={"jsonrpc": "2.0", "id": 1, "method": "ping"})
        assert answer.status_code == 401
        found = re.search(r'resource_metadata="([^"]+)"', answer.headers["www-authenticate"])
        assert found is not None
        metadata = (await http.get(found.group(1))).json()
        assert metadata["resource"] == world.url
        assert metadata["authorization_servers"] == [world.issuer]
        bad = await http.get(world.url.replace("/mcp", "/status"),
                             headers={"authorization": "Bearer not-a-token"})  # fmt: skip
        assert bad.status_code == 401


async def test_a_static_client_token_still_works_beside_oauth(world: World) -> None:
    import httpx2
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    headers = {"authorization": f"Bearer {OPS_TOKEN}"}
    async with (
        httpx2.AsyncClient(headers=headers, timeout=30) as http,
        Client(streamable_http_client(world.url, http_client=http)) as client,
    ):
        result = await client.call_tool("read_note", {"id": "ops"})
        assert result.content[0].text == "note ops"


async def test_no_client_token_reaches_the_upstream_and_the_meter_knows_who_called(
    world: World,
) -> None:
    async with _client(world, "air-writer", "mcp:tools") as client:
        await client.call_tool("read_note", {"id": "meter"})
    with world.recorder.lock:
        sent = bytes(world.recorder.sent)
    assert b"read_note" in sent  # the upstream did get the calls
    assert b"authorization:" not in sent.lower()
    assert OPS_TOKEN.encode() not in sent
    assert b"eyJ" not in sent  # no JWT (header or body)

    from airmeter import CALLS_NAMESPACE
    from airstore import create_storage

    records: list[dict[str, Any]] = []
    for _ in range(300):  # the gateway delivers records within its flush interval
        store = await create_storage(f"file://{world.data}", read_only=True)
        try:
            records = await store.query(CALLS_NAMESPACE, limit=1000)
        finally:
            await store.close()
        if any(r.get("client_id") == "air-writer" for r in records) and any(
            r.get("auth") == "token" for r in records
        ):
            break
        await asyncio.sleep(0.1)
    writer = [r for r in records if r.get("client_id") == "air-writer"]
    assert writer, records
    assert writer[0]["auth"] == "oauth"
    assert writer[0]["client_name"] == "writers"  # the clients: entry its claims matched
    assert writer[0]["subject"].startswith("p:")  # pseudonymised
    assert "air-writer" not in writer[0]["subject"]
    ops = [r for r in records if r.get("auth") == "token"]
    assert ops, records
    assert ops[0]["client_id"] == "ops"


async def _token(world: World, client_id: str, scope: str) -> str:
    """A client-credentials access token for the gateway (resource indicator: its URL)."""
    async with httpx.AsyncClient() as http:
        found = await http.get(f"{world.issuer}/.well-known/openid-configuration")
        answer = await http.post(
            found.json()["token_endpoint"],
            data={"grant_type": "client_credentials", "scope": scope, "resource": world.url},
            auth=(client_id, f"{client_id}-secret"),
        )
        answer.raise_for_status()
        token: str = answer.json()["access_token"]
        return token


async def test_stateless_calls_with_a_jwt_take_both_paths_under_the_allow_list(
    world: World,
) -> None:
    from tests.airgateway.rpc import modern_call

    token = await _token(world, "air-reader", "mcp:tools")
    async with httpx.AsyncClient(timeout=30) as http:
        # the first call verifies the token (ASGI path); the next ones find it cached and go
        # the server's fast path: the same identity, the same allow list
        for n in range(3):
            answer = await modern_call(http, world.url, "read_note", {"id": f"f{n}"}, token=token)
            assert answer["result"]["content"][0]["text"] == f"note f{n}", answer
            refused = await modern_call(http, world.url, "delete_note", {"id": "x"}, token=token)
            assert "error" in refused, refused
            assert "may not use" in refused["error"]["message"]
        bad = await modern_call(
            http, world.url, "read_note", {"id": "x"}, token=token[:-4] + "AAAA"
        )
        assert "error" in bad
