"""An MCPServer metered by SdkMeterMiddleware, run over real stdio by the tests.

Each record is appended as one JSON line to the file named by argv[1].
"""

from __future__ import annotations

import sys

import orjson
from mcp.server.mcpserver import MCPServer

from airmeter import CallRecord
from airmeter.integrations import instrument_mcp_server


class FileRecorder:
    def __init__(self, path: str) -> None:
        self._path = path

    def record(self, record: CallRecord) -> None:
        with open(self._path, "ab") as f:
            f.write(orjson.dumps(record.to_log()) + b"\n")


mcp: MCPServer = MCPServer("stdio-demo")


@mcp.tool()
def get_user(user_id: str) -> str:
    """Look a user up."""
    return f"user {user_id}"


@mcp.tool()
def divide(a: float, b: float) -> float:
    """Divide."""
    return a / b


if __name__ == "__main__":
    instrument_mcp_server(mcp, FileRecorder(sys.argv[1]))
    mcp.run("stdio")
