"""Real processes for the OAuth end-to-end tests: oidc-provider under Node 22 (restartable on its
port with new keys, for rotation), ``air serve --auth-config`` and a browser stand-in that fills
in oidc-provider's login and consent pages over HTTP (for authorization code + PKCE)."""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urljoin, urlsplit

import httpx

__all__ = [
    "NODE",
    "NOTES",
    "Browser",
    "ProviderProcess",
    "free_port",
    "issue_token",
    "key_set",
    "require_node",
    "serve_notes",
    "stop",
]

ROOT = Path(__file__).resolve().parents[2]
NODE = ROOT / ".oidc" / "node_modules" / ".bin" / "node"
SCRIPT = Path(__file__).with_name("oidc_provider.mjs")

NOTES = """
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
        define_tool(name="delete_note", params={"id": "string"}, handler=delete_note),
    ],
)
"""
"""The notes server every OAuth end-to-end test serves: ``delete_*`` is the tool that needs
``notes:write``."""


def require_node() -> bool:
    """Whether oidc-provider is installed; under ``make test`` (``AIR_TEST_OIDC=require``) its
    absence is an error, not a skip."""
    if not NODE.exists() and os.environ.get("AIR_TEST_OIDC") == "require":
        raise RuntimeError("oidc-provider is not installed in .oidc/: scripts/oidc.sh did not run")
    return NODE.exists()


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def key_set(*kids: str) -> tuple[str, dict[str, Any]]:
    """A private ES256 key set with one new key per ``kid`` (the first signs), as oidc-provider's
    ``JWKS`` variable, and the keys by kid (to reuse one in a later set)."""
    from joserfc.jwk import ECKey

    keys = {
        kid: ECKey.generate_key("P-256", parameters={"kid": kid, "alg": "ES256", "use": "sig"})
        for kid in kids
    }
    return _dump(list(keys.values())), keys


def _dump(keys: list[Any]) -> str:
    from joserfc.jwk import KeySet

    return json.dumps(KeySet(keys).as_dict(private=True))


def stop(proc: subprocess.Popen[str] | None) -> None:
    """Terminate ``proc`` (bounded) and close its pipes."""
    if proc is None:
        return
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=30)
    for pipe in (proc.stdin, proc.stdout, proc.stderr):
        if pipe is not None:
            pipe.close()


class ProviderProcess:
    """oidc-provider on 127.0.0.1; :meth:`restart` brings it back on the same port (so the same
    issuer URL) with other signing keys."""

    def __init__(self, resource: str, *, env: dict[str, str] | None = None) -> None:
        self.resource = resource
        self.env = dict(env or {})
        self.port = 0
        self.issuer = ""
        self.proc: subprocess.Popen[str] | None = None

    def start(self, keys: list[Any]) -> str:
        self.proc = subprocess.Popen(
            [str(NODE), str(SCRIPT)],
            env={
                **os.environ,
                **self.env,
                "PORT": str(self.port),
                "RESOURCE": self.resource,
                "JWKS": _dump(keys),
                "OIDC_PROVIDER": str(NODE.parents[1] / "oidc-provider"),
            },
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            stdin=subprocess.DEVNULL,
            text=True,
        )
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            found = re.search(r"ready (\S+)", line)
            if found:
                self.issuer = found.group(1)
                self.port = int(urlsplit(self.issuer).port or 0)
                return self.issuer
        raise RuntimeError("oidc-provider exited before it was ready")

    def restart(self, keys: list[Any]) -> str:
        self.stop()
        issuer = self.start(keys)
        assert issuer == self.issuer or not self.issuer
        return issuer

    def stop(self) -> None:
        stop(self.proc)
        self.proc = None


async def issue_token(
    issuer: str, client_id: str, scope: str, resource: str, *, secret: str | None = None
) -> str:
    """A client-credentials access token from oidc-provider for ``resource`` (RFC 8707)."""
    async with httpx.AsyncClient(timeout=30) as http:
        answer = await http.post(
            f"{issuer}/token",
            data={"grant_type": "client_credentials", "scope": scope, "resource": resource},
            auth=(client_id, secret or f"{client_id}-secret"),
        )
    answer.raise_for_status()
    return str(answer.json()["access_token"])


def serve_notes(
    source: str, auth_yml: str, port: int, tmp: Path, *, name: str = "notes"
) -> subprocess.Popen[str]:
    """``air serve <tmp>/<name>.py --transport http --auth-config`` on ``port``, started (its URL
    printed on stderr). Its meter goes to ``file://<tmp>/<name>-data``."""
    (tmp / f"{name}.py").write_text(source)
    (tmp / f"{name}-auth.yml").write_text(auth_yml)
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "aircli",
            "serve",
            str(tmp / f"{name}.py"),
            "--transport",
            "http",
            "--port",
            str(port),
            "--store",
            f"file://{tmp / f'{name}-data'}",
            "--auth-config",
            str(tmp / f"{name}-auth.yml"),
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
        text=True,
        cwd=ROOT,
    )
    assert proc.stderr is not None
    lines: list[str] = []
    for line in proc.stderr:  # its URL, after any warning (bounded: it exits or says it)
        lines.append(line)
        if "http://" in line or len(lines) > 50:
            break
    if not lines or "http://" not in lines[-1]:
        stop(proc)
        raise RuntimeError(f"air serve did not start: {''.join(lines)[-2000:]!r}")
    return proc


class _Form(HTMLParser):
    """The first ``<form>`` of a page: its action and its inputs."""

    def __init__(self) -> None:
        super().__init__()
        self.action: str | None = None
        self.inputs: list[dict[str, str]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        values = {k: v or "" for k, v in attrs}
        if tag == "form" and self.action is None:
            self.action = values.get("action", "")
        elif tag == "input" and self.action is not None:
            self.inputs.append(values)


class Browser:
    """What a person's browser does in the authorization code flow: opens the authorization URL,
    follows the redirects, fills in the login page (``login``, any password) and the consent
    page, and stops at the redirect URI, whose query is the callback's result.

    Attributes:
        pages: the ``prompt`` of each page filled in (``"login"``, ``"consent"``), in order.
    """

    def __init__(self, redirect_uri: str, *, login: str) -> None:
        self.redirect_uri = redirect_uri
        self.login = login
        self.pages: list[str] = []
        self.result: dict[str, str] | None = None
        self.http = httpx.AsyncClient(timeout=30, follow_redirects=False)  # keeps the cookies

    async def aclose(self) -> None:
        await self.http.aclose()

    async def open(self, url: str) -> None:
        """The SDK's ``redirect_handler``."""
        answer = await self.http.get(url)
        for _ in range(20):
            if answer.is_redirect:
                target = urljoin(str(answer.url), answer.headers["location"])
                if target.startswith(self.redirect_uri):
                    query = parse_qs(urlsplit(target).query)
                    self.result = {k: v[0] for k, v in query.items()}
                    return
                answer = await self.http.get(target)
            elif answer.status_code == 200 and "<form" in answer.text:
                answer = await self._submit(answer)
            else:
                text = re.sub(r"<style>.*?</style>|<[^>]+>", " ", answer.text, flags=re.S)
                raise AssertionError(
                    f"unexpected page {answer.status_code} at {answer.url}: "
                    + " ".join(text.split())[:500]
                )
        raise AssertionError("the authorization flow did not reach the redirect URI")

    async def _submit(self, page: httpx.Response) -> httpx.Response:
        form = _Form()
        form.feed(page.text)
        assert form.action is not None
        fields = {i["name"]: i.get("value", "") for i in form.inputs if i.get("name")}
        self.pages.append(fields.get("prompt", "?"))
        if "login" in fields:
            fields["login"] = self.login
        if "password" in fields:
            fields["password"] = "any password"
        return await self.http.post(urljoin(str(page.url), form.action), data=fields)

    async def callback(self) -> Any:
        """The SDK's ``callback_handler``: the code, state and ``iss`` of the redirect."""
        from mcp.shared.auth import AuthorizationCodeResult

        assert self.result is not None, "the redirect URI was not reached"
        result, self.result = self.result, None
        if "error" in result:
            raise AssertionError(f"the authorization server refused: {result}")
        return AuthorizationCodeResult(
            code=result["code"], state=result.get("state"), iss=result.get("iss")
        )
