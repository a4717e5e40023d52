"""A minimal Server-Sent Events reader over an async iterator of lines."""

from __future__ import annotations

from collections.abc import AsyncIterator

__all__ = ["MAX_EVENT_BYTES", "events"]

MAX_EVENT_BYTES = 16 * 1024 * 1024
"""The largest event accepted from an upstream; a bigger one ends the stream."""


async def events(lines: AsyncIterator[bytes]) -> AsyncIterator[tuple[str, str]]:
    """Yield ``(event, data)`` pairs (``event`` defaults to ``"message"``).

    Raises:
        ValueError: an event grew past :data:`MAX_EVENT_BYTES`.
    """
    name = "message"
    data: list[str] = []
    size = 0
    async for raw in lines:
        line = raw.decode("utf-8", "replace").rstrip("\r\n")
        if not line:
            if data:
                yield name, "\n".join(data)
            name, data, size = "message", [], 0
            continue
        if line.startswith(":"):
            continue
        field, _, value = line.partition(":")
        value = value.removeprefix(" ")
        if field == "event":
            name = value
        elif field == "data":
            size += len(value)
            if size > MAX_EVENT_BYTES:
                raise ValueError(f"an SSE event over {MAX_EVENT_BYTES} bytes")
            data.append(value)
    if data:
        yield name, "\n".join(data)
