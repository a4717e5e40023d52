from __future__ import annotations

from pathlib import Path

import pytest

from airstore import FileStore, InvalidArgumentError, MemoryStore, create_storage, parse_store_url


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("memory://", ("memory", None)),
        ("file://.air/data", ("file", ".air/data")),
        ("file:///var/air", ("file", "/var/air")),
        ("sqlite:///air.db", ("sqlite", "air.db")),
        ("sqlite:////var/air.db", ("sqlite", "/var/air.db")),
        ("redis://127.0.0.1:6379/0", ("redis", "redis://127.0.0.1:6379/0")),
    ],
)
def test_store_urls_parse(url: str, expected: tuple[str, str | None]) -> None:
    assert parse_store_url(url) == expected


@pytest.mark.parametrize("url", ["nope", "ftp://x", "file://", 42])
def test_bad_store_url_is_rejected(url: object) -> None:
    with pytest.raises(InvalidArgumentError):
        parse_store_url(url)  # type: ignore[arg-type]


async def test_create_storage_memory_by_url_and_by_type() -> None:
    for store in (await create_storage("memory://"), await create_storage(type="memory")):
        assert isinstance(store, MemoryStore)
        await store.set("ns", "k", 1)
        assert await store.get("ns", "k") == 1
        await store.close()


async def test_create_storage_rejects_url_and_type_together() -> None:
    with pytest.raises(InvalidArgumentError):
        await create_storage("memory://", type="memory")


async def test_a_file_store_without_a_path_is_at_the_default_location(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``create_storage()``, ``create_storage(type="file")`` and ``FileStore()`` open the store
    every command uses (``resolve_store_location``); the last two raised."""
    monkeypatch.delenv("AIR_DATA_DIR", raising=False)
    monkeypatch.chdir(tmp_path)
    here = tmp_path / ".air" / "data"
    for opener in (
        lambda: create_storage(),
        lambda: create_storage(type="file", handle_sigterm=False),
        lambda: _init(FileStore(handle_sigterm=False)),
    ):
        store = await opener()
        assert isinstance(store, FileStore)
        assert Path(store.path) == here
        await store.set("ns", "k", 1)
        await store.close()
    elsewhere = tmp_path / "env-data"
    monkeypatch.setenv("AIR_DATA_DIR", str(elsewhere))
    async with FileStore(handle_sigterm=False) as store:
        assert Path(store.path) == elsewhere
        await store.set("ns", "k", 2)
    async with await create_storage(type="file", read_only=True) as reader:
        assert await reader.get("ns", "k") == 2
    async with FileStore(here, read_only=True) as reader:
        assert await reader.get("ns", "k") == 1


async def _init(store: FileStore) -> FileStore:
    await store.init()
    return store
