"""The data directory's event log ``.events.jsonl``: what a store had to report on disk (writes
lost to a full disk), for ``air store check`` and any process that looks later."""

from __future__ import annotations

import os
from typing import Any

import orjson

from airstore import _platform
from airstore._format import FORMAT, HEADER_PREFIX, parse_header

__all__ = ["EVENTS_FILE", "append_event", "read_events"]

EVENTS_FILE = ".events.jsonl"
_HEADER = b'{"airstore":"events","format":%d}\n' % FORMAT


def append_event(root: str, event: dict[str, Any]) -> None:
    """Append one event (one ``write``; the file starts with its format header).

    Raises:
        OSError: the disk refused it.
    """
    path = os.path.join(root, EVENTS_FILE)
    fd = _platform.open_file(
        path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | _platform.OPEN_FLAGS, 0o644
    )
    try:
        line = orjson.dumps(event) + b"\n"
        if os.fstat(fd).st_size == 0:
            line = _HEADER + line
        written = os.write(fd, line)
        if written != len(line):
            os.ftruncate(fd, os.fstat(fd).st_size - written)
            raise OSError(28, "short write of an event record")
    finally:
        os.close(fd)


def read_events(root: str) -> list[dict[str, Any]]:
    """Every complete event recorded in ``root`` (oldest first); none when there is no file.

    Raises:
        UnsupportedFormatError: the file names a newer format.
    """
    path = os.path.join(root, EVENTS_FILE)
    try:
        with open(path, "rb") as fh:
            data = fh.read()
    except FileNotFoundError:
        return []
    events = []
    for line in data[: data.rfind(b"\n") + 1].split(b"\n"):
        if not line:
            continue
        if line.startswith(HEADER_PREFIX):
            parse_header(line, "events", path)
            continue
        try:
            event = orjson.loads(line)
        except orjson.JSONDecodeError:
            continue
        if isinstance(event, dict):
            events.append(event)
    return events
