"""A raw stdio MCP server (legacy era, no SDK) that misbehaves on purpose, for the gateway.

Tools: ``ok`` answers its pid; ``badid`` first writes answers whose ``id`` is a list and an
object (garbage no request asked for), then its real answer; ``big`` answers one line of
``mb`` MiB; ``die`` exits mid-call; ``flood`` answers, then writes ``n``
``tools/list_changed`` notifications; ``lists`` answers how many ``tools/list`` it got.
``NTOOLS`` adds that many more tools (``t0`` …).
With argv[1] ``hang`` it never answers ``initialize``. With ``MARK_DIR`` set it leaves a file
named by its pid there when it starts.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

HANG = sys.argv[1:] == ["hang"]
EXTRA = int(os.environ.get("NTOOLS", "0"))
NAMES = ["ok", "badid", "big", "die", "flood", "lists", *(f"t{i}" for i in range(EXTRA))]
TOOLS = [{"name": n, "inputSchema": {"type": "object"}} for n in NAMES]
LISTED = [0]


def out(message: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


def text(msg_id: Any, value: str) -> None:
    out({"jsonrpc": "2.0", "id": msg_id, "result": {"content": [{"type": "text", "text": value}]}})


def call(msg_id: Any, params: dict[str, Any]) -> None:
    name = params.get("name")
    if name == "badid":
        out({"jsonrpc": "2.0", "id": [msg_id], "result": {}})
        out({"jsonrpc": "2.0", "id": {"id": msg_id}, "result": {}})
        text(msg_id, "after badid")
    elif name == "big":
        text(msg_id, "x" * (int(params.get("arguments", {}).get("mb", 1)) << 20))
    elif name == "die":
        os._exit(3)
    elif name == "lists":
        text(msg_id, str(LISTED[0]))
    elif name == "flood":
        text(msg_id, "flooding")
        note = {"jsonrpc": "2.0", "method": "notifications/tools/list_changed"}
        for _ in range(int(params.get("arguments", {}).get("n", 1000))):
            out(note)
    else:
        text(msg_id, str(os.getpid()))


def main() -> None:
    if "MARK_DIR" in os.environ:
        (Path(os.environ["MARK_DIR"]) / str(os.getpid())).touch()
    for line in sys.stdin:
        message = json.loads(line)
        method, msg_id = message.get("method"), message.get("id")
        if msg_id is None:
            continue
        if method == "initialize" and not HANG:
            info = {"name": "raw", "version": "1"}
            out({"jsonrpc": "2.0", "id": msg_id, "result": {"protocolVersion": "2025-06-18",
                 "capabilities": {"tools": {}}, "serverInfo": info}})  # fmt: skip
        elif method == "initialize":
            continue
        elif method == "ping":
            out({"jsonrpc": "2.0", "id": msg_id, "result": {}})
        elif method == "tools/list":
            LISTED[0] += 1
            out({"jsonrpc": "2.0", "id": msg_id, "result": {"tools": TOOLS}})
        elif method == "tools/call":
            call(msg_id, message.get("params", {}))
        else:
            out({"jsonrpc": "2.0", "id": msg_id, "error": {"code": -32601, "message": method}})


if __name__ == "__main__":
    main()
