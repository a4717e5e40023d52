"""What a writer says when ``.lock`` stays held exclusively past airstore's wait: being moved
only when the directory says so (its marker), else held — a new, empty directory included."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from airstore import FileStore, StoreLockedError, _migrate, _platform


def _hold(path: Path) -> int:
    """``.lock`` held exclusively, as another process would (airstore's own portable lock)."""
    fd = _platform.open_file(str(path / ".lock"), os.O_RDWR | os.O_CREAT | _platform.OPEN_FLAGS)
    assert _platform.try_lock(fd, shared=False)
    return fd


async def test_a_new_directory_held_exclusively_is_said_to_be_held_not_moved(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_migrate, "WAIT", 0.2)
    fd = _hold(tmp_path)  # nothing in it yet: no marker, nothing moving
    try:
        with pytest.raises(StoreLockedError) as info:
            await FileStore(tmp_path).init()
        said = str(info.value)
        assert "held exclusively by another process" in said
        assert "being moved" not in said
        assert info.value.pid is None
    finally:
        os.close(fd)
    async with FileStore(tmp_path) as store:  # the holder gone: it opens
        await store.set("ns", "k", 1)


async def test_a_directory_marked_as_moving_is_said_to_be_moved(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_migrate, "WAIT", 0.2)
    async with FileStore(tmp_path) as store:
        await store.set("ns", "k", 1)
    marker = tmp_path / _migrate.DATADIR_FILE
    doc = marker.read_text()
    fd = _hold(tmp_path)
    try:
        import json

        marked = json.loads(doc)
        marked["moving"] = True
        marker.write_text(json.dumps(marked))
        assert _migrate.read_datadir_marker(str(marker))[1] is True
        with pytest.raises(StoreLockedError, match="is being moved to format"):
            await FileStore(tmp_path).init()
    finally:
        marker.write_text(doc)
        os.close(fd)
