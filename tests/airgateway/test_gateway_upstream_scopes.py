"""A gateway server's own ``scopes:`` (issue 34 §1: required scopes "per upstream" in the
gateway): a real ``air gateway`` with ``auth:`` (the local issuer of tests/airhttp/issuer.py) in
front of two real ``air serve`` upstreams, one of them needing ``admin:write``. A caller without
it does not see that upstream's tools and is refused them with 403 ``insufficient_scope``
(naming the scope, so it can step up); with it, they work. Plus the configuration errors."""

from __future__ import annotations

import asyncio
import contextlib
import signal
import time
from pathlib import Path
from typing import Any

import httpx
import pytest

from airgateway.config import parse_config
from airgateway.errors import ConfigError
from tests.airgateway.procs import air, free_port, started
from tests.airhttp.issuer import running_issuer

V = "2026-07-28"
PUBLIC = """
from aircore import define_server, define_tool
server = define_server(name="pub", tools=[
    define_tool(name="hello", params={}, handler=lambda p: "hello")])
"""
ADMIN = """
from aircore import define_prompt, define_resource, define_server, define_tool
server = define_server(name="admin",
    tools=[define_tool(name="purge", params={}, handler=lambda p: "purged")],
    resources=[define_resource("admin://secrets", handler=lambda *a: "the admin secrets",
                               name="secrets")],
    prompts=[define_prompt("admin_prompt", handler=lambda *a: "admin prompt text")])
"""


async def _post(url: str, token: str, method: str, params: dict[str, Any]) -> httpx.Response:
    meta = {"io.modelcontextprotocol/protocolVersion": V,
            "io.modelcontextprotocol/clientCapabilities": {}}  # fmt: skip
    body = {"jsonrpc": "2.0", "id": 1, "method": method, "params": {**params, "_meta": meta}}
    headers = {"Authorization": f"Bearer {token}", "MCP-Protocol-Version": V,
               "Accept": "application/json, text/event-stream", "Mcp-Method": method}  # fmt: skip
    if method in ("tools/call", "prompts/get"):
        headers["Mcp-Name"] = params["name"]
    elif method == "resources/read":
        headers["Mcp-Name"] = params["uri"]
    async with httpx.AsyncClient(timeout=30) as http:
        return await http.post(url, json=body, headers=headers)


async def test_an_upstreams_scopes_hide_and_refuse_its_tools_to_callers_without_them(
    tmp_path: Path,
) -> None:
    (tmp_path / "pub.py").write_text(PUBLIC)
    (tmp_path / "admin.py").write_text(ADMIN)
    port = free_port()
    resource = f"http://127.0.0.1:{port}/mcp"
    async with running_issuer() as issuer, contextlib.AsyncExitStack() as stack:

        def start(argv: list[str]) -> Any:
            return stack.enter_context(started(argv))

        upstreams = []
        for name in ("pub", "admin"):
            argv = air("serve", str(tmp_path / f"{name}.py"), "--transport", "http", "--port",
                       "0", "--store", "memory://")  # fmt: skip
            upstreams.append(await asyncio.to_thread(start, argv))
        (tmp_path / "gw.yml").write_text(
            "servers:\n"
            f"  - {{name: pub, url: '{upstreams[0].url}'}}\n"
            f"  - {{name: admin, url: '{upstreams[1].url}', scopes: [admin:write]}}\n"
            f"auth:\n  issuer: {issuer.url}\n  resource: {resource}\n  scopes: [mcp:tools]\n"
        )
        argv = air("gateway", "--config", str(tmp_path / "gw.yml"), "--port", str(port),
                   "--store", "memory://")  # fmt: skip
        gateway = await asyncio.to_thread(start, argv)
        url = gateway.url

        plain = issuer.token(resource=resource, scope="mcp:tools")
        listed = await _post(url, plain, "tools/list", {})
        assert listed.status_code == 200, listed.text
        assert [t["name"] for t in listed.json()["result"]["tools"]] == ["hello"]
        assert (await _post(url, plain, "tools/call", {"name": "hello", "arguments": {}})
                ).json()["result"]["content"][0]["text"] == "hello"  # fmt: skip
        refused = await _post(url, plain, "tools/call", {"name": "purge", "arguments": {}})
        assert refused.status_code == 403
        challenge = refused.headers["www-authenticate"]
        assert 'error="insufficient_scope"' in challenge
        assert "admin:write" in challenge

        # the server's resources and prompts are its too: hidden, and refused
        for method in ("resources/list", "prompts/list"):
            listed = await _post(url, plain, method, {})
            assert listed.status_code == 200, listed.text
            assert listed.json()["result"][method.split("/")[0]] == [], listed.text
        for method, params in (("resources/read", {"uri": "admin://secrets"}),
                               ("prompts/get", {"name": "admin_prompt"})):  # fmt: skip
            answer = (await _post(url, plain, method, params)).json()
            assert "result" not in answer, answer
            assert "insufficient_scope" in answer["error"]["message"]
            assert answer["error"]["data"]["scope"] == ["admin:write"]

        admin = issuer.token(resource=resource, scope="mcp:tools admin:write")
        read = (await _post(url, admin, "resources/read", {"uri": "admin://secrets"})).json()
        assert read["result"]["contents"][0]["text"] == "the admin secrets"
        got = (await _post(url, admin, "prompts/get", {"name": "admin_prompt"})).json()
        assert "admin prompt text" in str(got["result"])
        listed = await _post(url, admin, "resources/list", {})
        assert [r["uri"] for r in listed.json()["result"]["resources"]] == ["admin://secrets"]
        listed = await _post(url, admin, "tools/list", {})
        assert sorted(t["name"] for t in listed.json()["result"]["tools"]) == ["hello", "purge"]
        done = await _post(url, admin, "tools/call", {"name": "purge", "arguments": {}})
        assert done.status_code == 200, done.text
        assert done.json()["result"]["content"][0]["text"] == "purged"

        async with httpx.AsyncClient(timeout=30) as http:
            doc = (
                await http.get(f"http://127.0.0.1:{port}/.well-known/oauth-protected-resource/mcp")
            ).json()
        assert "admin:write" in doc["scopes_supported"]


@pytest.mark.parametrize(
    ("text", "key", "why"),
    [
        ("servers:\n  - {name: a, url: 'http://127.0.0.1:1/mcp', scopes: [x]}\n",
         "servers[0].scopes", "auth: section"),
        ("servers:\n  - {name: a, url: 'http://127.0.0.1:1/mcp', scopes: 5}\n"
         "auth:\n  issuer: https://login.example.com/\n  resource: https://gw.example.com/mcp\n",
         "servers[0].scopes", "list of scope names"),
        ("servers:\n  - {name: a, url: 'http://127.0.0.1:1/mcp', scopes: [x]}\n"
         "  - {name: a, url: 'http://127.0.0.1:2/mcp'}\n"
         "auth:\n  issuer: https://login.example.com/\n  resource: https://gw.example.com/mcp\n",
         "servers[1]", "scopes"),
    ],
)  # fmt: skip
def test_bad_server_scopes_name_their_key(text: str, key: str, why: str) -> None:
    with pytest.raises(ConfigError) as caught:
        parse_config(text)
    assert caught.value.key == key
    assert why in str(caught.value)


def test_a_server_with_scopes_is_not_published_for_other_gateways_to_serve_unscoped() -> None:
    from airgateway.shared_registry import publishable

    config = parse_config(
        "servers:\n"
        "  - {name: admin, url: 'http://127.0.0.1:1/mcp', scopes: [admin:write]}\n"
        "  - {name: pub, url: 'http://127.0.0.1:2/mcp'}\n"
        "auth:\n  issuer: https://login.example.com/\n  resource: https://gw.example.com/mcp\n"
    )
    assert set(publishable(config.servers)) == {"pub"}


async def test_scopes_a_reload_adds_are_required_at_once(tmp_path: Path) -> None:
    # without any scopes: the OAuth guard does not read call bodies for their tool; a reload
    # that adds a server's scopes: must turn that back on (the fast path included)
    (tmp_path / "admin.py").write_text(ADMIN)
    port = free_port()
    resource = f"http://127.0.0.1:{port}/mcp"
    config = tmp_path / "gw.yml"
    auth = f"auth:\n  issuer: {{issuer}}\n  resource: {resource}\n  scopes: [mcp:tools]\n"
    async with running_issuer() as issuer, contextlib.AsyncExitStack() as stack:

        def start(argv: list[str]) -> Any:
            return stack.enter_context(started(argv))

        argv = air("serve", str(tmp_path / "admin.py"), "--transport", "http", "--port", "0",
                   "--store", "memory://")  # fmt: skip
        upstream = await asyncio.to_thread(start, argv)
        server = f"  - {{name: admin, url: '{upstream.url}'"
        config.write_text(f"servers:\n{server}}}\n" + auth.format(issuer=issuer.url))
        argv = air("gateway", "--config", str(config), "--port", str(port), "--store",
                   "memory://", "--no-meter")  # fmt: skip
        gateway = await asyncio.to_thread(start, argv)
        plain = issuer.token(resource=resource, scope="mcp:tools")
        admin = issuer.token(resource=resource, scope="mcp:tools admin:write")
        call = {"name": "purge", "arguments": {}}
        for _ in range(3):  # the first call verifies the token, the next ones take the fast path
            done = await _post(gateway.url, plain, "tools/call", call)
            assert done.status_code == 200, done.text
            assert done.json()["result"]["content"][0]["text"] == "purged"

        config.write_text(
            f"servers:\n{server}, scopes: [admin:write]}}\n" + auth.format(issuer=issuer.url)
        )
        gateway.popen.send_signal(signal.SIGHUP)
        deadline = time.monotonic() + 30
        while True:  # until the reloaded entry's replica serves (the admin token sees purge)
            listed = (await _post(gateway.url, admin, "tools/list", {})).json()
            if any(t["name"] == "purge" for t in listed["result"]["tools"]):
                hidden = (await _post(gateway.url, plain, "tools/list", {})).json()
                if not hidden["result"]["tools"]:
                    break
            assert time.monotonic() < deadline, listed
            await asyncio.sleep(0.1)  # polling the reload: nothing to wait on
        for _ in range(3):
            refused = await _post(gateway.url, plain, "tools/call", call)
            assert refused.status_code == 403, refused.text
            assert 'error="insufficient_scope"' in refused.headers["www-authenticate"]
            assert "admin:write" in refused.headers["www-authenticate"]
        done = await _post(gateway.url, admin, "tools/call", call)
        assert done.json()["result"]["content"][0]["text"] == "purged"
