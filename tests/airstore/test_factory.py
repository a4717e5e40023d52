from __future__ import annotations

import pytest

from airstore import InvalidArgumentError, MemoryStore, create_storage, parse_store_url


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
