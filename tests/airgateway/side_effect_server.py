"""An aircore server whose ``record`` tool has a side effect: it appends ``<REPLICA> <id>`` to
the file ``SIDE_LOG`` names (one ``write`` with ``O_APPEND``, so a line survives a SIGKILL
right after it), then takes ``seconds`` to answer. No ``readOnlyHint`` / ``idempotentHint``:
the gateway must never run one ``id`` twice. ``peek`` is the read-only control."""

from __future__ import annotations

import asyncio
import os
from typing import Any

from aircore import define_server, define_tool

REPLICA = os.environ.get("REPLICA", "solo")
LOG = os.environ.get("SIDE_LOG", "side.log")


async def record(p: dict[str, Any]) -> str:
    fd = os.open(LOG, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, f"{REPLICA} {p['id']}\n".encode())
    finally:
        os.close(fd)
    await asyncio.sleep(float(p.get("seconds", 0.0)))
    return f"{REPLICA}:{p['id']}"


def peek(_p: dict[str, Any]) -> str:
    return REPLICA


server = define_server(
    name="side",
    tools=[
        define_tool("record", handler=record, params={"id": "string", "seconds": "number?"}),
        define_tool("peek", handler=peek, annotations={"readOnlyHint": True}),
    ],
)
