"""The gateway's own credentials per upstream (issue 34 §2), end to end: a real authorization
server (oidc-provider under Node 22), an upstream ``air serve --auth-config`` that requires
tokens for its own resource, and ``air gateway`` (itself a resource server) in front of it
with ``oauth:`` client credentials for that upstream. Recording proxies in front of each
upstream prove what reached it: the gateway's token (cached, refreshed ahead of its expiry),
never the caller's; the caller's identity in ``params._meta["io.air/caller"]`` only for the
upstream that opted in (``send_caller``). Plus the configuration errors."""

from __future__ import annotations

import asyncio
import base64
import json
import re
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from airgateway.config import parse_config
from airgateway.errors import ConfigError
from tests.airgateway.procs import air, free_port, started
from tests.airgateway.recorder import Recorder
from tests.airgateway.rpc import envelope, modern_call
from tests.airhttp.oauth_client import oauth_client
from tests.airhttp.oidc_setup import (
    NOTES,
    ProviderProcess,
    issue_token,
    key_set,
    require_node,
    serve_notes,
    stop,
)

GATEWAY_SECRET = "air-gateway-secret"  # as tests/airhttp/oidc_provider.mjs registers it
TOKEN_TTL_S = 8  # the provider's client-credentials lifetime here
REFRESH_AHEAD_S = 4

PLAIN = """
from aircore import define_server, define_tool

server = define_server(
    name="plain",
    tools=[define_tool(name="echo", params={"text": "string"}, handler=lambda p: p["text"])],
)
"""


# ---- configuration -------------------------------------------------------------------------
def _config(server_extra: str) -> Any:
    text = "servers:\n  - name: a\n    url: 'http://127.0.0.1:9/mcp'\n" + server_extra
    return parse_config(text, environ={"SECRET": "s3cret"})


def test_an_upstream_oauth_section_reads_its_secret_from_the_environment() -> None:
    config = _config(
        "    oauth:\n"
        "      issuer: https://login.example.com/\n"
        "      client_id: gw\n"
        "      client_secret: {env: SECRET}\n"
        "      scope: [mcp:tools, notes:write]\n"
        "    send_caller: true\n"
    )
    server = config.servers[0]
    assert server.oauth is not None
    assert server.oauth.client_secret == "s3cret"
    assert server.oauth.scope == "mcp:tools notes:write"
    assert server.oauth.resource == "http://127.0.0.1:9/mcp"  # default: the upstream's url
    assert server.send_caller is True
    assert "s3cret" not in repr(server)


@pytest.mark.parametrize(
    ("extra", "key"),
    [
        ("    oauth: {client_id: gw, client_secret_env: SECRET}\n", "servers[0].oauth"),
        ("    oauth: {issuer: 'https://a/', token_endpoint: 'https://a/t', client_id: gw, "
         "client_secret_env: SECRET}\n", "servers[0].oauth"),
        ("    oauth: {issuer: 'https://a/', client_id: gw, client_secret: s3cret}\n",
         "servers[0].oauth.client_secret"),
        ("    oauth: {issuer: 'https://a/', client_id: gw}\n", "servers[0].oauth.client_secret"),
        ("    oauth: {issuer: 'https://a/', client_id: gw, client_secret_env: NOPE}\n",
         "servers[0].oauth.client_secret_env"),
        ("    oauth: {issuer: 'http://login.example.com/', client_id: gw, "
         "client_secret_env: SECRET}\n", "servers[0].oauth.issuer"),
        ("    oauth: {issuer: 'https://a/', client_secret_env: SECRET}\n",
         "servers[0].oauth.client_id"),
        ("    oauth: {issuer: 'https://a/', client_id: gw, client_secret_env: SECRET, x: 1}\n",
         "servers[0].oauth.x"),
        ("    headers: {Authorization: {env: SECRET}}\n    oauth: {issuer: 'https://a/', "
         "client_id: gw, client_secret_env: SECRET}\n", "servers[0].oauth"),
        ("    transport: sse\n    send_caller: true\n", "servers[0].send_caller"),
        ("  - {name: a, url: 'http://127.0.0.1:8/mcp', send_caller: true}\n", "servers[1]"),
    ],
)  # fmt: skip
def test_a_bad_upstream_oauth_or_send_caller_names_its_key(extra: str, key: str) -> None:
    with pytest.raises(ConfigError) as info:
        _config(extra)
    assert info.value.key == key, info.value
    assert "s3cret" not in str(info.value)


def test_an_upstream_with_oauth_is_neither_published_nor_adopted_from_the_store() -> None:
    # its token is a secret of this configuration: never sent to a URL that came from the store
    from airgateway.shared_registry import publishable

    config = _config(
        "    oauth: {issuer: 'https://a/', client_id: gw, client_secret_env: SECRET}\n"
        "  - {name: b, url: 'http://127.0.0.1:8/mcp'}\n"
    )
    assert set(publishable(config.servers)) == {"b"}


# ---- end to end ----------------------------------------------------------------------------
class World:
    def __init__(self, **parts: Any) -> None:
        self.__dict__.update(parts)
        self.issuer: str
        self.url: str
        self.notes_resource: str
        self.notes: Recorder
        self.plain: Recorder


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    if not require_node():
        pytest.fail("oidc-provider is not installed: run scripts/oidc.sh (make test does)")
    tmp = tmp_path_factory.mktemp("upoauth")
    gateway_port, notes_port = free_port(), free_port()
    resource = f"http://127.0.0.1:{gateway_port}/mcp"
    notes_resource = f"http://127.0.0.1:{notes_port}/mcp"
    provider = ProviderProcess(
        resource, env={"RESOURCES": notes_resource, "CC_TTL": str(TOKEN_TTL_S)}
    )
    notes = None
    try:
        issuer = provider.start(list(key_set("es-1")[1].values()))
        notes = serve_notes(  # the upstream is a resource server of its own
            NOTES,
            f"issuer: {issuer}\nresource: {notes_resource}\nscopes: [mcp:tools]\n"
            'tools: {"delete_*": [notes:write]}\n',
            notes_port,
            tmp,
        )
        (tmp / "plain.py").write_text(PLAIN)
        plain_argv = air("serve", str(tmp / "plain.py"), "--transport", "http", "--port", "0")
        with started(plain_argv) as plain:
            notes_rec = Recorder(notes_port)
            plain_rec = Recorder(int(plain.url.split(":")[2].split("/")[0]))
            (tmp / "gateway.yml").write_text(
                "servers:\n"
                f"  - name: notes\n    url: 'http://127.0.0.1:{notes_rec.port}/mcp'\n"
                "    send_caller: true\n"
                "    oauth:\n"
                f"      issuer: {issuer}\n"
                "      client_id: air-gateway\n"
                "      client_secret: {env: GATEWAY_SECRET}\n"
                "      scope: mcp:tools notes:write\n"
                f"      resource: {notes_resource}\n"
                f"      refresh_ahead_s: {REFRESH_AHEAD_S}\n"
                f"  - {{name: plain, url: 'http://127.0.0.1:{plain_rec.port}/mcp'}}\n"
                f"auth:\n  issuer: {issuer}\n  resource: {resource}\n  scopes: [mcp:tools]\n"
            )
            argv = air("gateway", "--config", str(tmp / "gateway.yml"), "--port",
                       str(gateway_port), "--store", f"file://{tmp / 'data'}")  # fmt: skip
            try:
                with started(argv, env={"GATEWAY_SECRET": GATEWAY_SECRET}) as gateway:
                    assert gateway.url == resource, gateway.lines
                    yield World(issuer=issuer, url=resource, notes_resource=notes_resource,
                                notes=notes_rec, plain=plain_rec)  # fmt: skip
            finally:
                notes_rec.close()
                plain_rec.close()
    finally:
        stop(notes)
        provider.stop()


def _sent(recorder: Recorder) -> bytes:
    with recorder.lock:
        return bytes(recorder.sent)


def _bearers(sent: bytes) -> list[str]:
    """The bearer tokens of the recorded requests, in order."""
    return re.findall(rb"(?i)\r\nauthorization: bearer ([A-Za-z0-9._~+/=-]+)\r\n", sent)  # type: ignore[return-value]


def _claims(token: str | bytes) -> dict[str, Any]:
    body = (token.decode() if isinstance(token, bytes) else token).split(".")[1]
    value = json.loads(base64.urlsafe_b64decode(body + "=" * (-len(body) % 4)))
    assert isinstance(value, dict)
    return value


async def _caller_token(world: World, client_id: str = "air-writer") -> str:
    return await issue_token(world.issuer, client_id, "mcp:tools", world.url)


async def test_the_upstream_refuses_a_request_without_its_own_token(world: World) -> None:
    ping = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
    token = await _caller_token(world)
    async with httpx.AsyncClient(timeout=30) as http:
        assert (await http.post(world.notes_resource, json=ping)).status_code == 401
        # a caller's token for the gateway is no token for the upstream (its aud)
        direct = await http.post(
            world.notes_resource, json=ping, headers={"authorization": f"Bearer {token}"}
        )
        assert direct.status_code == 401


async def test_the_gateway_calls_the_upstream_with_its_own_token_never_the_callers(
    world: World,
) -> None:
    callers = []
    async with httpx.AsyncClient(timeout=30) as http:
        for n in range(3):
            token = await _caller_token(world)
            callers.append(token)
            answer = await modern_call(http, world.url, "read_note", {"id": f"c{n}"}, token=token)
            assert answer["result"]["content"][0]["text"] == f"note c{n}", answer
            # notes:write is the gateway's own scope at the upstream, not the caller's
            answer = await modern_call(http, world.url, "delete_note", {"id": f"c{n}"},
                                       token=token)  # fmt: skip
            assert answer["result"]["content"][0]["text"] == f"deleted c{n}", answer
    # the official client, through discovery at the gateway, too
    async with oauth_client(world.url, world.issuer, "air-reader", "mcp:tools") as client:
        result = await client.call_tool("read_note", {"id": "sdk"})
        assert result.content[0].text == "note sdk"
    sent = _sent(world.notes)
    assert b'"sdk"' in sent
    for token in callers:
        assert token.encode() not in sent
        assert token.split(".")[2].encode() not in sent  # not even its signature
    bearers = _bearers(sent)
    assert bearers
    for bearer in bearers:
        claims = _claims(bearer)
        assert claims["client_id"] == "air-gateway"
        assert claims["aud"] == world.notes_resource
    # cached: far fewer tokens than requests
    assert len(set(bearers)) < len(bearers)
    # the upstream without oauth: gets no Authorization at all
    assert b"authorization:" not in _sent(world.plain).lower()


async def test_the_token_is_refreshed_ahead_of_its_expiry(world: World) -> None:
    first = _bearers(_sent(world.notes))
    assert first  # the handshake and the calls above
    old = first[-1]
    old_exp = _claims(old)["exp"]
    answered = 0
    async with httpx.AsyncClient(timeout=30) as http:
        for _ in range(600):  # bounded: the token lives TOKEN_TTL_S; refreshed before
            token = await _caller_token(world)
            answer = await modern_call(http, world.url, "read_note", {"id": "r"}, token=token)
            assert answer["result"]["content"][0]["text"] == "note r", answer
            answered += 1
            later = _bearers(_sent(world.notes))
            new = [b for b in later[len(first) :] if b != old]
            if new:
                break
            await asyncio.sleep(0.1)
    assert new, "the gateway never replaced its token"
    claims = _claims(new[0])
    assert claims["client_id"] == "air-gateway"
    # taken before the old one expired (a refresh on expiry would have iat >= its exp), and
    # every call was answered (asserted in the loop); the old one served many requests
    assert claims["iat"] < old_exp
    assert _bearers(_sent(world.notes)).count(old) >= 2
    assert answered >= 1


async def test_the_caller_reaches_only_the_upstream_that_opted_in(world: World) -> None:
    token = await _caller_token(world, "air-reader")
    spoof = {"io.air/caller": {"client_id": "admin", "subject": "root"}, "keep": "me"}
    async with httpx.AsyncClient(timeout=30) as http:
        for name, args in (("read_note", {"id": "who"}), ("echo", {"text": "who"})):
            body = {
                "jsonrpc": "2.0",
                "id": 1,
                "method": "tools/call",
                "params": {"name": name, "arguments": args, "_meta": spoof},
            }
            enveloped, headers = envelope("tools/call", body["params"])
            headers["authorization"] = f"Bearer {token}"
            answer = (await http.post(world.url, json=enveloped, headers=headers)).json()
            assert "result" in answer, answer
    notes = _request(_sent(world.notes), b'"who"')
    caller = {"client_id": "air-reader", "subject": "air-reader"}
    assert notes["params"]["_meta"]["io.air/caller"] == caller  # the gateway's, not the spoof
    assert notes["params"]["_meta"]["keep"] == "me"  # the rest of its _meta goes on
    plain = _request(_sent(world.plain), b'"who"')
    assert "io.air/caller" not in plain["params"]["_meta"]  # not opted in: nothing at all
    assert plain["params"]["_meta"]["keep"] == "me"
    assert b"io.air/caller" not in _sent(world.plain)
    # the official client's call (the other test) carried its caller too
    sdk = _request(_sent(world.notes), b'"sdk"')
    assert sdk["params"]["_meta"]["io.air/caller"]["client_id"] == "air-reader"


def _request(sent: bytes, marker: bytes) -> dict[str, Any]:
    """The JSON body of the one recorded request holding ``marker``."""
    found = [part for part in sent.split(b"\r\n\r\n") if marker in part]
    assert len(found) == 1, found
    body = found[0][: found[0].rindex(b"}") + 1]
    value = json.loads(body[: body.index(b"POST ")] if b"POST " in body else body)
    assert isinstance(value, dict)
    return value
