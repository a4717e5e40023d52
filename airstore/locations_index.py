"""The data locations in use on this machine, listed in one small index file.

A desktop MCP client that starts a server in ``/`` meters to the per-user data directory, while
``air meter report`` run in a project reads the project's ``.air/data``: each saw only its own.
So every file data directory a meter writes to is registered, once, in ``locations.json`` in
the per-user air directory (beside its ``data`` directory: ``~/.local/share/air/``), and
readers list every registered location (:func:`known_locations`) to show all of them, each
labelled with where its data is. Nothing is merged on disk: the index only names directories.

The index is bounded (:data:`MAX_LOCATIONS`, the least recently registered go first) and
forgets directories that no longer exist. Registering is best effort: a read-only home or a
damaged index never breaks a meter (the damaged index is replaced).
"""

from __future__ import annotations

import json
import logging
import os
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Final

from airstore._atomic import write_atomic
from airstore.errors import AirstoreError
from airstore.location import default_locations

__all__ = [
    "INDEX_FILE",
    "MAX_LOCATIONS",
    "index_path",
    "known_locations",
    "register_location",
]

logger = logging.getLogger(__name__)

INDEX_FILE: Final = "locations.json"
"""The index's name, in the per-user air directory."""
MAX_LOCATIONS: Final = 64
"""Locations the index keeps at most."""
_FORMAT: Final = 1


def index_path(env: Mapping[str, str] | None = None) -> Path:
    """The index file: ``locations.json`` beside the per-user ``data`` directory."""
    user = default_locations(env=env)[-1]  # the per-user directory is always the last one
    assert user.path is not None
    return user.path.parent / INDEX_FILE


def _read(path: Path) -> dict[str, float]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    entries = data.get("locations") if isinstance(data, dict) else None
    if not isinstance(entries, dict):
        return {}
    return {
        str(k): float(v)
        for k, v in entries.items()
        if isinstance(k, str) and isinstance(v, int | float)
    }


def _write(path: Path, entries: dict[str, float]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    body = json.dumps({"format": _FORMAT, "locations": entries}, indent=2, sort_keys=True)
    write_atomic(str(path), (body + "\n").encode())  # old or new index, never a torn one


def register_location(
    directory: str | os.PathLike[str], *, env: Mapping[str, str] | None = None
) -> bool:
    """Register a data directory in the index (once; a known one only refreshes its time).

    Args:
        directory: the file store's data directory.
        env: the environment (where the index is); ``os.environ`` by default.

    Returns:
        Whether the index now lists it (``False`` when the index could not be written).
    """
    where = str(Path(directory).resolve())
    try:
        path = index_path(env)
        entries = {k: v for k, v in _read(path).items() if Path(k).is_dir()}
        known = where in entries
        entries[where] = time.time()
        if len(entries) > MAX_LOCATIONS:
            newest = sorted(entries.items(), key=lambda kv: kv[1])[-MAX_LOCATIONS:]
            entries = dict(newest)
        if not known or len(entries) != len(_read(path)):
            _write(path, entries)
        return True
    except (OSError, AirstoreError) as exc:  # a read-only home: the location is not listed
        logger.debug("air: cannot register %s in the locations index: %s", where, exc)
        return False


def known_locations(env: Mapping[str, str] | None = None) -> list[Path]:
    """Every registered data directory that still exists, most recently registered first
    (none when the index cannot be found: ``AIR_DATA_DIR`` holding a URL)."""
    try:
        entries = _read(index_path(env))
    except AirstoreError:
        return []
    ordered = sorted(entries.items(), key=lambda kv: kv[1], reverse=True)
    return [Path(k) for k, _ in ordered if Path(k).is_dir()]
