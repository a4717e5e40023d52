"""A legacy HTTP+SSE upstream on the official SDK (``python sse_server.py PORT``)."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

from mcp.server.mcpserver import MCPServer

app = MCPServer("legacy-sse")


@app.tool()
def shout(text: str) -> str:
    """Upper-case the text."""
    return text.upper()


@app.tool()
def echo(text: str) -> str:
    """The same name as the HTTP upstream's echo (a conflict the first server wins)."""
    return f"sse:{text}"


@app.tool()
async def held(path: str) -> str:
    """Answer once the file at ``path`` exists (a call a test keeps in flight)."""
    while not await asyncio.to_thread(Path(path).exists):  # noqa: ASYNC110 - another process
        await asyncio.sleep(0.01)
    return f"released:{Path(path).name}"


if __name__ == "__main__":
    app.run("sse", host="127.0.0.1", port=int(sys.argv[1]))
