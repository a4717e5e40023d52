"""A whole file read off the event loop (aiofiles), safe against cancellation.

``aiofiles.open`` opens the file in one worker-thread call and reads it in another; a task
cancelled between them (or while the open runs, or by the event loop's shutdown) never
receives the file object, which then leaks (a ``ResourceWarning``, an open descriptor until
the garbage collector finds it). Here open, read and close are one worker call, run through
aiofiles' executor wrapper: cancelling the caller stops its wait, and the worker still closes
the file.
"""

from __future__ import annotations

import aiofiles.os

__all__ = ["read_file", "read_whole"]


def read_whole(path: str) -> bytes | None:
    """The bytes of ``path`` (on the calling thread), or ``None`` when it does not exist."""
    try:
        with open(path, "rb") as fh:
            return fh.read()
    except FileNotFoundError:
        return None


read_file = aiofiles.os.wrap(read_whole)
"""``await read_file(path)``: the bytes of ``path``, or ``None`` when it does not exist; raises
``OSError`` when it exists but cannot be read."""
