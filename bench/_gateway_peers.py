"""Processes for ``bench/gateway_bench.py``: fastmcp's proxy in front of an upstream.

Run as ``python bench/_gateway_peers.py fastmcp-proxy UPSTREAM_URL PORT``.
"""

from __future__ import annotations

import asyncio
import logging
import sys

logging.basicConfig(level=logging.ERROR, stream=sys.stderr)


def fastmcp_proxy(upstream: str, port: int) -> None:
    """fastmcp's ``create_proxy`` in front of ``upstream``, served over Streamable HTTP."""
    import uvicorn
    from fastmcp.server import create_proxy

    proxy = create_proxy(upstream)
    app = proxy.http_app(json_response=True)
    config = uvicorn.Config(app, host="127.0.0.1", port=port, log_level="error")
    server = uvicorn.Server(config)

    async def main() -> None:
        task = asyncio.ensure_future(server.serve())
        while not server.started:  # noqa: ASYNC110 - uvicorn exposes no started event
            await asyncio.sleep(0.02)
        print(f"http://127.0.0.1:{port}/mcp", file=sys.stderr, flush=True)
        await task

    asyncio.run(main())


if __name__ == "__main__":
    if sys.argv[1] != "fastmcp-proxy":
        raise SystemExit(f"unknown peer {sys.argv[1]!r}")
    fastmcp_proxy(sys.argv[2], int(sys.argv[3]))
