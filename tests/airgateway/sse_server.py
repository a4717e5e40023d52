"""A legacy HTTP+SSE upstream on the official SDK (``python sse_server.py PORT``)."""

from __future__ import annotations

import sys

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


if __name__ == "__main__":
    app.run("sse", host="127.0.0.1", port=int(sys.argv[1]))
