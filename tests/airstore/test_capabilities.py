"""The Store capabilities beyond get/set/append, on every backend row of tests/airstore/backends.py:
``incr``, ``append_many``, ``create_storage(url, read_only=True)`` and ``store_exists``."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

import pytest

from airstore import (
    InvalidArgumentError,
    InvalidKeyError,
    InvalidValueError,
    ReadOnlyStoreError,
    ReadOnlyUnsupportedError,
    Store,
    create_storage,
    store_exists,
)
from tests.airstore.backends import Backend, FakeClock

MAX = 2**53 - 1


async def test_incr_counts_from_zero_and_returns_the_new_value(store: Store) -> None:
    assert await store.incr("ns", "hits") == 1
    assert await store.incr("ns", "hits") == 2
    assert await store.incr("ns", "hits", by=10) == 12
    assert await store.incr("ns", "hits", by=-20) == -8
    assert await store.get("ns", "hits") == -8
    assert await store.incr("ns", "fresh", by=0) == 0


async def test_incr_continues_a_counter_stored_with_set(store: Store) -> None:
    await store.set("ns", "n", 41)
    assert await store.incr("ns", "n") == 42


async def test_concurrent_incrs_in_one_process_lose_no_step(store: Store) -> None:
    results = await asyncio.gather(*(store.incr("ns", "c") for _ in range(300)))
    assert sorted(results) == list(range(1, 301))
    assert await store.get("ns", "c") == 300


@pytest.mark.parametrize("held", ["text", 1.5, True, None, [1], {"n": 1}, MAX + 1])
async def test_incr_of_something_not_a_counter_is_refused_and_changes_nothing(
    store: Store, held: object
) -> None:
    await store.set("ns", "k", held)
    with pytest.raises(InvalidValueError) as info:
        await store.incr("ns", "k")
    assert (info.value.namespace, info.value.key) == ("ns", "k")
    assert await store.get("ns", "k") == held


@pytest.mark.parametrize("by", [True, 1.0, "1", None, MAX + 1, -MAX - 1])
async def test_bad_incr_step_is_refused(store: Store, by: object) -> None:
    with pytest.raises(InvalidArgumentError):
        await store.incr("ns", "k", by=by)  # type: ignore[arg-type]
    assert await store.get("ns", "k") is None


async def test_incr_beyond_the_counter_range_is_refused_and_changes_nothing(store: Store) -> None:
    await store.set("ns", "k", MAX - 1)
    assert await store.incr("ns", "k") == MAX
    with pytest.raises(InvalidArgumentError):
        await store.incr("ns", "k")
    assert await store.get("ns", "k") == MAX
    assert await store.incr("ns", "neg", by=-MAX) == -MAX
    with pytest.raises(InvalidArgumentError):
        await store.incr("ns", "neg", by=-1)
    assert await store.get("ns", "neg") == -MAX


@pytest.mark.parametrize("ttl", [0, -1, "5", True])
async def test_incr_with_a_bad_ttl_is_refused(store: Store, ttl: object) -> None:
    with pytest.raises(InvalidArgumentError):
        await store.incr("ns", "k", ttl=ttl)  # type: ignore[arg-type]
    assert await store.get("ns", "k") is None


async def test_incr_with_a_bad_key_is_refused(store: Store) -> None:
    with pytest.raises(InvalidKeyError):
        await store.incr("ns", "")
    with pytest.raises(InvalidKeyError):
        await store.incr("ns", 7)  # type: ignore[arg-type]


async def test_incr_ttl_applies_when_it_creates_the_counter(store: Store, clock: FakeClock) -> None:
    assert await store.incr("ns", "window", ttl=10) == 1
    clock.advance(6)
    assert await store.incr("ns", "window", ttl=10) == 2  # a live counter keeps its expiry
    clock.advance(5)
    assert await store.get("ns", "window") is None
    assert await store.incr("ns", "window", ttl=10) == 1  # expired: starts again
    clock.advance(9)
    assert await store.get("ns", "window") == 1


async def test_incr_keeps_the_expiry_a_set_gave(store: Store, clock: FakeClock) -> None:
    await store.set("ns", "k", 5, ttl=10)
    assert await store.incr("ns", "k") == 6
    clock.advance(11)
    assert await store.get("ns", "k") is None


async def test_counters_survive_reopen(
    persistent_backend: Backend, tmp_path: Path, clock: FakeClock
) -> None:
    s = await persistent_backend.open(tmp_path, clock)
    for _ in range(7):
        await s.incr("ns", "n", by=3)
    await s.close()
    s = await persistent_backend.open(tmp_path, clock)
    try:
        assert await s.incr("ns", "n") == 22
    finally:
        await s.close()


async def test_append_many_appends_in_order_and_returns_the_stored_entries(
    store: Store, clock: FakeClock
) -> None:
    await store.append("log", {"i": -1})
    stored = await store.append_many("log", ({"i": i} for i in range(5)))
    assert [e["i"] for e in stored] == [0, 1, 2, 3, 4]
    assert all(e["_ts"] == int(clock.now * 1000) for e in stored)
    got = await store.query("log", limit=10)
    assert [e["i"] for e in got] == [4, 3, 2, 1, 0, -1]
    assert await store.append_many("log", []) == []


@pytest.mark.parametrize("bad", [{"x": {1, 2}}, ["not a dict"], {"f": float("nan")}])
async def test_append_many_with_one_bad_entry_appends_nothing(store: Store, bad: object) -> None:
    await store.append("log", {"i": 0})
    with pytest.raises(InvalidValueError):
        await store.append_many("log", [{"i": 1}, bad, {"i": 2}])  # type: ignore[list-item]
    await store.flush()
    assert [e["i"] for e in await store.query("log")] == [0]


async def test_read_only_open_by_url_sees_the_data_and_refuses_writes(
    backend: Backend, tmp_path: Path, clock: FakeClock
) -> None:
    writer = await backend.open(tmp_path, clock)
    try:
        await writer.set("ns", "k", {"v": 1})
        await writer.append("log", {"i": 1})
        await writer.flush()
        if not backend.persistent:
            with pytest.raises(ReadOnlyUnsupportedError):
                await create_storage(backend.url(tmp_path), read_only=True)
            return
        reader = await create_storage(backend.url(tmp_path), read_only=True)
        try:
            assert await reader.get("ns", "k") == {"v": 1}
            assert [e["i"] for e in await reader.query("log")] == [1]
            with pytest.raises(ReadOnlyStoreError):
                await reader.set("ns", "k", 2)
            with pytest.raises(ReadOnlyStoreError):
                await reader.incr("ns", "n")
            with pytest.raises(ReadOnlyStoreError):
                await reader.append("log", {"i": 2})
            with pytest.raises(ReadOnlyStoreError):
                await reader.append_many("log", [{"i": 2}])
        finally:
            await reader.close()
        assert await writer.get("ns", "k") == {"v": 1}
    finally:
        await writer.close()


async def test_store_exists_only_once_something_was_written(
    backend: Backend, tmp_path: Path, clock: FakeClock
) -> None:
    url = backend.url(tmp_path)
    before = await store_exists(url)
    if backend.name.startswith(("file", "sqlite")):
        assert before is False
        assert not os.listdir(tmp_path), "looking must create nothing"
    s = await backend.open(tmp_path, clock)
    try:
        await s.set("ns", "k", 1)
        await s.flush()
        assert await store_exists(url) is True
    finally:
        await s.close()


async def test_store_exists_names_a_location_of_the_wrong_kind(tmp_path: Path) -> None:
    (tmp_path / "afile").write_text("x")
    with pytest.raises(InvalidArgumentError) as info:
        await store_exists(f"file://{tmp_path / 'afile'}")
    assert info.value.path == str(tmp_path / "afile")
    with pytest.raises(InvalidArgumentError):
        await store_exists(f"sqlite:///{tmp_path}")
    with pytest.raises(InvalidArgumentError):
        await store_exists("nope://x")
