"""The Store contract: every backend in tests/airstore/backends.py must pass all of it."""

from __future__ import annotations

import asyncio
import uuid
from datetime import UTC, datetime
from pathlib import Path

import pytest

from airstore import (
    InvalidArgumentError,
    InvalidKeyError,
    InvalidNamespaceError,
    InvalidValueError,
    Store,
    StoreClosedError,
)
from tests.airstore.backends import Backend, FakeClock


async def test_set_then_get_returns_the_value(store: Store) -> None:
    value = {"a": [1, 2.5, "x", None, True], "nested": {"k": "v"}}
    await store.set("ns", "k1", value)
    assert await store.get("ns", "k1") == value


@pytest.mark.parametrize("value", ["text", 42, 3.5, True, False, None, [1, 2], {"x": {}}])
async def test_every_json_value_round_trips(store: Store, value: object) -> None:
    await store.set("ns", "k", value)
    assert await store.get("ns", "k") == value


async def test_missing_key_and_missing_namespace_give_none(store: Store) -> None:
    assert await store.get("nothing-here", "k") is None
    await store.set("ns", "a", 1)
    assert await store.get("ns", "b") is None


async def test_set_overwrites(store: Store) -> None:
    await store.set("ns", "k", 1)
    await store.set("ns", "k", 2)
    assert await store.get("ns", "k") == 2


async def test_delete_reports_whether_the_key_existed(store: Store) -> None:
    await store.set("ns", "k", 1)
    assert await store.delete("ns", "k") is True
    assert await store.get("ns", "k") is None
    assert await store.delete("ns", "k") is False
    assert await store.delete("other", "k") is False


async def test_namespaces_are_independent(store: Store) -> None:
    await store.set("one", "k", 1)
    await store.set("two", "k", 2)
    assert await store.get("one", "k") == 1
    assert await store.get("two", "k") == 2


async def test_list_and_entries_filter_by_prefix_sorted(store: Store) -> None:
    for key in ["user:2", "user:1", "order:1", "user:10"]:
        await store.set("ns", key, key.upper())
    assert await store.list("ns") == ["order:1", "user:1", "user:10", "user:2"]
    assert await store.list("ns", prefix="user:") == ["user:1", "user:10", "user:2"]
    assert await store.entries("ns", prefix="order") == [("order:1", "ORDER:1")]
    assert await store.list("empty-ns") == []


async def test_expired_key_is_gone(store: Store, clock: FakeClock) -> None:
    await store.set("ns", "short", "v", ttl=10)
    await store.set("ns", "long", "v", ttl=100)
    await store.set("ns", "forever", "v")
    clock.advance(9.5)
    assert await store.get("ns", "short") == "v"
    clock.advance(1)
    assert await store.get("ns", "short") is None
    assert await store.list("ns") == ["forever", "long"]
    assert await store.delete("ns", "short") is False
    clock.advance(100)
    assert await store.entries("ns") == [("forever", "v")]


async def test_fractional_ttl_is_honoured(store: Store, clock: FakeClock) -> None:
    # 2.5 s, not a fraction of a second: Redis also expires keys in real time (PX), and a loaded
    # machine can spend 250 ms between two awaits. Rounding down (2) or up (3) still fails.
    await store.set("ns", "k", 1, ttl=2.5)
    clock.advance(2.2)
    assert await store.get("ns", "k") == 1
    clock.advance(0.5)
    assert await store.get("ns", "k") is None


async def test_overwrite_without_ttl_clears_the_expiry(store: Store, clock: FakeClock) -> None:
    await store.set("ns", "k", 1, ttl=5)
    await store.set("ns", "k", 2)
    clock.advance(10)
    assert await store.get("ns", "k") == 2


async def test_append_returns_the_entry_with_ts(store: Store, clock: FakeClock) -> None:
    entry = await store.append("log", {"tool": "x", "n": 1})
    assert entry["tool"] == "x"
    assert entry["_ts"] == int(clock.now * 1000)
    assert isinstance(entry["_ts"], int)


async def test_append_keeps_an_explicit_int_ts(store: Store) -> None:
    entry = await store.append("log", {"tool": "x", "_ts": 1234})
    assert entry["_ts"] == 1234
    assert (await store.query("log"))[0]["_ts"] == 1234


async def test_query_is_newest_first_with_limit_and_offset(store: Store, clock: FakeClock) -> None:
    for i in range(10):
        await store.append("log", {"i": i})
        clock.advance(1)
    got = await store.query("log", limit=3)
    assert [e["i"] for e in got] == [9, 8, 7]
    got = await store.query("log", limit=3, offset=8)
    assert [e["i"] for e in got] == [1, 0]
    assert await store.query("log", limit=0) == []
    assert await store.query("no-log") == []


async def test_query_time_window_since_inclusive_until_exclusive(
    store: Store, clock: FakeClock
) -> None:
    start_ms = int(clock.now * 1000)
    for i in range(10):
        await store.append("log", {"i": i})
        clock.advance(1)
    got = await store.query("log", since=start_ms + 3000, until=start_ms + 6000)
    assert [e["i"] for e in got] == [5, 4, 3]
    since_dt = datetime.fromtimestamp((start_ms + 7000) / 1000, tz=UTC)
    got = await store.query("log", since=since_dt)
    assert [e["i"] for e in got] == [9, 8, 7]


async def test_query_filter_is_field_equality(store: Store) -> None:
    for i in range(12):
        await store.append("log", {"i": i, "tool": "a" if i % 3 else "b", "ok": i % 2 == 0})
    got = await store.query("log", filter={"tool": "b"})
    assert [e["i"] for e in got] == [9, 6, 3, 0]
    got = await store.query("log", filter={"tool": "a", "ok": True})
    assert [e["i"] for e in got] == [10, 8, 4, 2]
    got = await store.query("log", filter={"tool": "b"}, limit=2, offset=1)
    assert [e["i"] for e in got] == [6, 3]
    assert await store.query("log", filter={"missing": 1}) == []


async def test_flush_is_callable_any_time(store: Store) -> None:
    await store.flush()
    await store.set("ns", "k", 1)
    await store.append("log", {"a": 1})
    await store.flush()
    assert await store.get("ns", "k") == 1


@pytest.mark.parametrize(
    "ns",
    ["", "a/b", "..", "a..b", "../x", "a\\b", ".hidden", "x" * 129, "calls.retention", 5, [], {}],
)
async def test_bad_namespace_is_rejected(store: Store, ns: object) -> None:
    with pytest.raises(InvalidNamespaceError):
        await store.set(ns, "k", 1)  # type: ignore[arg-type]
    with pytest.raises(InvalidNamespaceError):
        await store.get(ns, "k")  # type: ignore[arg-type]
    with pytest.raises(InvalidNamespaceError):
        await store.append(ns, {"a": 1})  # type: ignore[arg-type]
    with pytest.raises(InvalidNamespaceError):
        await store.query(ns)  # type: ignore[arg-type]
    with pytest.raises(InvalidNamespaceError):
        await store.delete(ns, "k")  # type: ignore[arg-type]
    with pytest.raises(InvalidNamespaceError):
        await store.list(ns)  # type: ignore[arg-type]
    with pytest.raises(InvalidNamespaceError):
        await store.entries(ns)  # type: ignore[arg-type]


async def test_namespace_of_128_chars_is_accepted(store: Store) -> None:
    ns = "a" + "b" * 127
    await store.set(ns, "k", 1)
    assert await store.get(ns, "k") == 1


@pytest.mark.parametrize("key", ["", 5, None])
async def test_bad_key_is_rejected(store: Store, key: object) -> None:
    with pytest.raises(InvalidKeyError):
        await store.set("ns", key, 1)  # type: ignore[arg-type]
    with pytest.raises(InvalidKeyError):
        await store.get("ns", key)  # type: ignore[arg-type]


_UUID = uuid.UUID("0f8fad5b-d9cb-469f-a165-70867728950e")


class _HidingDict(dict):  # type: ignore[type-arg]
    def values(self):  # type: ignore[no-untyped-def, override]
        return []


class _HidingList(list):  # type: ignore[type-arg]
    def __iter__(self):  # type: ignore[no-untyped-def]
        return iter(())


@pytest.mark.parametrize(
    "value",
    [
        {1, 2},
        b"bytes",
        _HidingDict(a=float("nan")),  # a subclass hiding it from values() / iteration: orjson
        _HidingList([float("inf")]),  # writes the base type's items, so the walk reads those
        object(),
        {"k": {1, 2}},
        {1: "int key"},
        float("nan"),  # orjson would write these as null: refused instead
        {"a": [1, float("inf")]},
        [None, -float("inf")],
        _UUID,  # orjson would write it as a string: it came back as one from some backends
        {"id": _UUID, "pad": "a-b-c-d-e"},
        ["0f8fad5b-d9cb-469f-a165-70867728950e", (_UUID,)],
    ],
)
async def test_non_json_value_is_rejected_at_set_naming_ns_and_key(
    store: Store, value: object
) -> None:
    await store.set("ns", "keep", "kept")
    with pytest.raises(InvalidValueError) as info:
        await store.set("ns", "bad", value)
    assert info.value.namespace == "ns"
    assert info.value.key == "bad"
    assert await store.get("ns", "keep") == "kept"
    assert await store.get("ns", "bad") is None
    await store.flush()


@pytest.mark.parametrize(
    "entry",
    [
        {"x": b"bytes"},
        {"s": {1}},
        ["not", "a", "dict"],
        {"x": None, "y": float("nan")},
        {"call": _UUID},
    ],
)
async def test_non_json_entry_is_rejected_at_append(store: Store, entry: object) -> None:
    await store.append("log", {"ok": 1})
    with pytest.raises(InvalidValueError):
        await store.append("log", entry)  # type: ignore[arg-type]
    assert [e["ok"] for e in await store.query("log")] == [1]
    await store.flush()


@pytest.mark.parametrize("ttl", [-1, 0, "10", True])
async def test_bad_ttl_is_rejected(store: Store, ttl: object) -> None:
    with pytest.raises(InvalidArgumentError):
        await store.set("ns", "k", 1, ttl=ttl)  # type: ignore[arg-type]
    assert await store.get("ns", "k") is None


async def test_bad_query_arguments_are_rejected(store: Store) -> None:
    with pytest.raises(InvalidArgumentError):
        await store.query("log", limit=-1)
    with pytest.raises(InvalidArgumentError):
        await store.query("log", offset=-1)
    with pytest.raises(InvalidArgumentError):
        await store.query("log", since="yesterday")  # type: ignore[arg-type]
    with pytest.raises(InvalidArgumentError):
        await store.query("log", until=float("nan"))
    with pytest.raises(InvalidArgumentError):
        await store.query("log", filter=[("tool", "x")])  # type: ignore[arg-type]
    with pytest.raises(InvalidArgumentError):
        await store.list("ns", prefix=5)  # type: ignore[arg-type]
    with pytest.raises(InvalidArgumentError):
        await store.entries("ns", prefix=None)  # type: ignore[arg-type]


async def test_use_after_close_raises(backend: Backend, tmp_path: Path, clock: FakeClock) -> None:
    s = await backend.open(tmp_path, clock)
    await s.close()
    await s.close()  # idempotent
    with pytest.raises(StoreClosedError):
        await s.get("ns", "k")
    with pytest.raises(StoreClosedError):
        await s.set("ns", "k", 1)
    with pytest.raises(StoreClosedError):
        await s.append("log", {"a": 1})


async def test_data_survives_reopen(
    persistent_backend: Backend, tmp_path: Path, clock: FakeClock
) -> None:
    backend = persistent_backend
    s = await backend.open(tmp_path, clock)
    await s.set("ns", "k", {"v": 1})
    await s.set("ns", "gone", 1, ttl=5)
    await s.set("ns", "deleted", 1)
    await s.delete("ns", "deleted")
    for i in range(5):
        await s.append("log", {"i": i})
    await s.close()
    clock.advance(10)
    s = await backend.open(tmp_path, clock)
    try:
        assert await s.get("ns", "k") == {"v": 1}
        assert await s.get("ns", "gone") is None
        assert await s.get("ns", "deleted") is None
        assert [e["i"] for e in await s.query("log")] == [4, 3, 2, 1, 0]
    finally:
        await s.close()


async def test_a_write_acknowledged_while_close_runs_is_kept(
    persistent_backend: Backend, tmp_path: Path, clock: FakeClock
) -> None:
    """Writers keep going while ``close()`` runs: each write is either refused
    (``StoreClosedError``) or, once acknowledged, there after a reopen (FileStore dropped the
    ones made during its last stop, in every mode but ``sync``), and close() ends."""
    backend = persistent_backend
    s = await backend.open(tmp_path, clock)
    acked: list[tuple[str, int]] = []

    async def writer(w: int) -> bool:
        for i in range(100_000):
            try:
                await s.set("ns", f"w{w}-{i}", i)
                await s.append(f"log{w}", {"i": i})
            except StoreClosedError:
                return True
            acked.append((f"w{w}-{i}", i))
            await asyncio.sleep(0)
        return False

    tasks = [asyncio.create_task(writer(w)) for w in range(4)]
    await asyncio.sleep(0.05)
    await s.close()
    # Refused in the end: close() did not wait for writers that never stop (SQLite and
    # Redis drained as long as anything kept coming).
    assert await asyncio.gather(*tasks) == [True] * 4
    assert acked
    s = await backend.open(tmp_path, clock)
    try:
        stored = dict(await s.entries("ns"))
        assert [key for key, _ in acked if key not in stored] == []
        for w in range(4):
            logged = {e["i"] for e in await s.query(f"log{w}", limit=1_000_000)}
            assert {i for key, i in acked if key.startswith(f"w{w}-")} <= logged
    finally:
        await s.close()


async def test_async_with_opens_and_closes(
    backend: Backend, tmp_path: Path, clock: FakeClock
) -> None:
    s = await backend.open(tmp_path, clock)
    async with s as opened:
        assert opened is s
        await s.set("ns", "k", 1)
    with pytest.raises(StoreClosedError):
        await s.get("ns", "k")
