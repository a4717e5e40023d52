"""A whole file read off the event loop with aiofiles, safe against cancellation.

``aiofiles.open`` opens the file in a worker thread; a task cancelled while that thread runs
never receives the file object, which then leaks (a ``ResourceWarning``, an open descriptor
until the garbage collector finds it). The read therefore runs as its own task, shielded: a
cancelled caller stops waiting at once, and the task still closes the file.
"""

from __future__ import annotations

import asyncio

import aiofiles

__all__ = ["read_file"]


async def _read_whole(path: str) -> bytes | None:
    try:
        async with aiofiles.open(path, "rb") as fh:
            return await fh.read()
    except FileNotFoundError:
        return None


def _retrieve(task: asyncio.Task[bytes | None]) -> None:
    if not task.cancelled():
        task.exception()  # an error nobody waits for any more is not reported as unretrieved


async def read_file(path: str) -> bytes | None:
    """The bytes of ``path``, or ``None`` when it does not exist (one aiofiles call per file).

    Raises:
        OSError: the file exists but cannot be read.
    """
    task = asyncio.ensure_future(_read_whole(path))
    try:
        return await asyncio.shield(task)
    except asyncio.CancelledError:
        task.add_done_callback(_retrieve)
        raise
