"""RedisStore beside another application's keys and beside URL mistakes."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest

from airstore import (
    CorruptDataError,
    InvalidArgumentError,
    InvalidValueError,
    RedisStore,
    create_storage,
)
from tests.redis_server import RedisServer, unique_prefix

pytestmark = pytest.mark.redis


@pytest.fixture
async def rs(redis_server: RedisServer) -> AsyncIterator[RedisStore]:
    async with RedisStore(redis_server.url(), prefix=unique_prefix()) as store:
        yield store


async def test_a_foreign_key_of_another_type_is_corrupt_data_and_is_left_alone(
    rs: RedisStore, raw: Any
) -> None:
    await raw.hset(rs._kv_key("ns", "h"), "field", "theirs")
    await raw.rpush(rs._log_key("jobs"), "theirs")
    with pytest.raises(CorruptDataError):
        await rs.incr("ns", "h")
    with pytest.raises(CorruptDataError):
        await rs.delete("ns", "h")
    with pytest.raises(CorruptDataError):
        await rs.append("jobs", {"a": 1})
    with pytest.raises(CorruptDataError):
        await rs.query("jobs")
    assert await raw.hgetall(rs._kv_key("ns", "h")) == {b"field": b"theirs"}
    assert await raw.lrange(rs._log_key("jobs"), 0, -1) == [b"theirs"]


async def test_a_delete_of_a_foreign_string_removes_it_and_says_so(
    rs: RedisStore, raw: Any
) -> None:
    """GETDEL has removed it by the time its value turns out foreign: no error after the fact."""
    await raw.set(rs._kv_key("ns", "s"), b"theirs-string")
    assert await rs.delete("ns", "s") is True
    assert await raw.exists(rs._kv_key("ns", "s")) == 0


@pytest.mark.parametrize("payload", [b"\xff\xfe|7", b"soon|7", b"hello"])
async def test_incr_of_a_foreign_string_is_refused_like_any_non_counter(
    rs: RedisStore, raw: Any, payload: bytes
) -> None:
    await raw.set(rs._kv_key("ns", "c"), payload)
    with pytest.raises(InvalidValueError):
        await rs.incr("ns", "c")
    assert await raw.get(rs._kv_key("ns", "c")) == payload


@pytest.mark.parametrize("path", ["/x", "/O", "/1x", "/db1", "/²"])
async def test_a_redis_url_whose_db_is_not_a_number_is_refused(
    redis_server: RedisServer, path: str
) -> None:
    url = f"redis://127.0.0.1:{redis_server.port}{path}"
    with pytest.raises(InvalidArgumentError):
        await create_storage(url)
    with pytest.raises(InvalidArgumentError):
        RedisStore(url + "?prefix=p:")


@pytest.mark.parametrize("path", ["", "/", "/0", "/3"])
async def test_a_redis_url_with_a_db_number_or_none_opens(
    redis_server: RedisServer, path: str
) -> None:
    store = await create_storage(
        f"redis://127.0.0.1:{redis_server.port}{path}?prefix={unique_prefix()}"
    )
    async with store:
        await store.set("ns", "k", 1)
        assert await store.get("ns", "k") == 1
