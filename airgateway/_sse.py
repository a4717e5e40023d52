"""A minimal Server-Sent Events reader over an async iterator of lines, and the bounded
splitter that makes those lines from pieces of a stream."""

from __future__ import annotations

from collections.abc import AsyncIterator

__all__ = ["MAX_EVENT_BYTES", "MAX_LINE_BYTES", "events", "lines"]

MAX_EVENT_BYTES = 16 * 1024 * 1024
"""The largest event accepted from an upstream; a bigger one ends the stream."""
MAX_LINE_BYTES = 16 * 1024 * 1024
"""The longest line accepted from an upstream's stream; a longer one ends the stream."""


async def lines(
    pieces: AsyncIterator[bytes], *, max_line: int = MAX_LINE_BYTES
) -> AsyncIterator[bytes]:
    """The lines (each with its ``\n``, the last perhaps without) of a stream read in pieces.

    What is held is bounded while reading: a line, or what has come of it, longer than
    ``max_line`` ends the stream at once.

    Raises:
        ValueError: a line over ``max_line`` bytes.
    """
    pending = bytearray()
    async for piece in pieces:
        start = len(pending)
        pending += piece
        cut = pending.rfind(b"\n", start)
        if cut >= 0:
            *complete, _rest = pending[: cut + 1].split(b"\n")
            del pending[: cut + 1]
            for line in complete:
                if len(line) >= max_line:
                    raise ValueError(f"an SSE line over {max_line} bytes")
                yield bytes(line) + b"\n"
        if len(pending) >= max_line:
            raise ValueError(f"an SSE line over {max_line} bytes")
    if pending:
        yield bytes(pending)


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
