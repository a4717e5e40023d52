"""``air serve --auth-config`` as a real process in front of the local issuer
(tests/airhttp/issuer.py), for the tests of what OAuth callers see and what the meter records."""

from __future__ import annotations

import asyncio
import re
import sys
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.airhttp.issuer import Issuer, running_issuer

__all__ = ["OAuthServed", "bearer_client", "oauth_serving", "serving_http"]


@dataclass
class OAuthServed:
    """A running ``air serve``: its issuer, endpoint URL, resource URI and store URL."""

    issuer: Issuer
    url: str
    resource: str
    store: str

    def token(self, scope: str = "mcp:tools", **claims: Any) -> str:
        """A token of the issuer for this server (claims such as ``client_id``, ``sub``)."""
        return self.issuer.token(resource=self.resource, scope=scope, **claims)


async def _line_with_url(stream: asyncio.StreamReader) -> str:
    while True:
        line = (await stream.readline()).decode()
        if not line:
            raise RuntimeError("air serve exited before it served")
        found = re.search(r"(http://\S+)", line)
        if found:
            return found.group(1)


async def _free_port() -> int:
    probe = await asyncio.start_server(lambda r, w: None, "127.0.0.1", 0)
    port = int(probe.sockets[0].getsockname()[1])
    probe.close()
    await probe.wait_closed()
    return port


@asynccontextmanager
async def oauth_serving(
    tmp_path: Path,
    source: str,
    *,
    auth_yaml: str = "scopes: [mcp:tools]\n",
    store: str | None = None,
    extra: Sequence[str] = (),
    env: dict[str, str] | None = None,
) -> AsyncIterator[OAuthServed]:
    """Serve ``source`` (a server module's text) over HTTP with OAuth from a local issuer; the
    configuration is ``issuer:`` and ``resource:`` plus ``auth_yaml``."""
    async with running_issuer() as issuer:
        (tmp_path / "served.py").write_text(source)
        port = await _free_port()
        resource = f"http://127.0.0.1:{port}/mcp"
        (tmp_path / "auth.yml").write_text(f"issuer: {issuer.url}\nresource: {resource}\n"
                                           + auth_yaml)  # fmt: skip
        store_url = store or f"file://{tmp_path / 'data'}"
        proc = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "aircli", "serve", str(tmp_path / "served.py"),
            "--transport", "http", "--port", str(port), "--store", store_url,
            "--auth-config", str(tmp_path / "auth.yml"), *extra,
            stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.DEVNULL,
            stderr=asyncio.subprocess.PIPE, env=env,
        )  # fmt: skip
        try:
            assert proc.stderr is not None
            url = await asyncio.wait_for(_line_with_url(proc.stderr), 60)
            yield OAuthServed(issuer, url, resource, store_url)
        finally:
            if proc.returncode is None:
                proc.terminate()
                await asyncio.wait_for(proc.wait(), 30)


@asynccontextmanager
async def serving_http(tmp_path: Path, source: str, *extra: str) -> AsyncIterator[str]:
    """Serve ``source`` (a server module's text) over HTTP with no OAuth (``extra``: more
    ``air serve`` options, such as ``--token``); yield the endpoint URL."""
    (tmp_path / "served.py").write_text(source)
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "aircli", "serve", str(tmp_path / "served.py"),
        "--transport", "http", "--port", str(await _free_port()), "--store", "memory://",
        *extra, stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.DEVNULL,
        stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    try:
        assert proc.stderr is not None
        yield await asyncio.wait_for(_line_with_url(proc.stderr), 60)
    finally:
        if proc.returncode is None:
            proc.terminate()
            await asyncio.wait_for(proc.wait(), 30)


@asynccontextmanager
async def bearer_client(url: str, token: str) -> AsyncIterator[Any]:
    """The official ``mcp`` client on ``url`` sending ``token`` as its bearer token."""
    import httpx2
    from mcp.client import Client
    from mcp.client.streamable_http import streamable_http_client

    async with (
        httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=30) as http,
        Client(streamable_http_client(url, http_client=http)) as client,
    ):
        yield client


async def stored_calls(store_url: str) -> int:
    """How many call records the store at ``store_url`` holds (opened read-only)."""
    from airmeter.record import CALLS_NAMESPACE
    from airstore import create_storage

    store = await create_storage(store_url, read_only=True)
    try:
        return len(await store.query(CALLS_NAMESPACE, limit=1000))
    finally:
        await store.close()
