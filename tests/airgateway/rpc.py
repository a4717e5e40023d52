"""Raw 2026-07-28 and legacy JSON-RPC over HTTP for the gateway tests (httpx)."""

from __future__ import annotations

import itertools
from typing import Any

import httpx

MODERN = "2026-07-28"
_ids = itertools.count(1)


def envelope(
    method: str, params: dict[str, Any] | None = None, *, capabilities: dict[str, Any] | None = None
) -> tuple[dict[str, Any], dict[str, str]]:
    """A 2026-07-28 request body and its headers."""
    params = dict(params or {})
    params["_meta"] = {
        **params.get("_meta", {}),
        "io.modelcontextprotocol/protocolVersion": MODERN,
        "io.modelcontextprotocol/clientCapabilities": capabilities or {},
    }
    headers = {"mcp-protocol-version": MODERN, "mcp-method": method,
               "accept": "application/json, text/event-stream"}  # fmt: skip
    if method == "tools/call":
        headers["mcp-name"] = params["name"]
    elif method.startswith("tasks/"):
        headers["mcp-name"] = params["taskId"]
    return {"jsonrpc": "2.0", "id": next(_ids), "method": method, "params": params}, headers


async def modern_call(
    client: httpx.AsyncClient, url: str, name: str, arguments: dict[str, Any] | None = None,
    *, token: str | None = None,
) -> dict[str, Any]:  # fmt: skip
    """One stateless ``tools/call``; returns the whole JSON-RPC response."""
    body, headers = envelope("tools/call", {"name": name, "arguments": arguments or {}})
    if token is not None:
        headers["authorization"] = f"Bearer {token}"
    resp = await client.post(url, json=body, headers=headers)
    out: dict[str, Any] = resp.json()
    return out


async def legacy_request(
    client: httpx.AsyncClient, url: str, method: str, params: dict[str, Any], sid: str | None
) -> httpx.Response:
    """One legacy-era request (JSON answer)."""
    headers = {"accept": "application/json"}
    if sid is not None:
        headers["mcp-session-id"] = sid
    body = {"jsonrpc": "2.0", "id": next(_ids), "method": method, "params": params}
    return await client.post(url, json=body, headers=headers)
