"""Numbers at the edges of what each backend can hold: every backend answers alike, with the
right result or the same typed error, never an ``OverflowError`` or a server refusal."""

from __future__ import annotations

import pytest

from airstore import InvalidArgumentError, InvalidValueError, Store


@pytest.mark.parametrize("bounds", [{"since": 10**30}, {"since": 2**63}, {"until": -(10**30)}])
async def test_a_time_window_beyond_64_bits_that_holds_nothing_is_empty(
    store: Store, bounds: dict[str, int]
) -> None:
    await store.append("ns", {"a": 1, "_ts": 2**63 - 1})
    await store.append("ns", {"a": 2, "_ts": -(2**63)})
    assert await store.query("ns", **bounds) == []  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "bounds", [{"since": -(10**30)}, {"until": 10**30}, {"since": -1e300, "until": 2**64}]
)
async def test_a_time_window_beyond_64_bits_that_holds_everything_returns_everything(
    store: Store, bounds: dict[str, float]
) -> None:
    await store.append("ns", {"a": 1, "_ts": 5})
    await store.append("ns", {"a": 2, "_ts": 6})
    got = await store.query("ns", **bounds)  # type: ignore[arg-type]
    assert [e["a"] for e in got] == [2, 1]


@pytest.mark.parametrize("window", [{"limit": 10**30}, {"limit": 2**63, "offset": 1}])
async def test_a_limit_beyond_64_bits_means_all(store: Store, window: dict[str, int]) -> None:
    for i in range(3):
        await store.append("ns", {"i": i, "_ts": 100 + i})
    got = await store.query("ns", **window)  # type: ignore[arg-type]
    assert [e["i"] for e in got] == [2, 1, 0][window.get("offset", 0) :]
    assert await store.query("ns", offset=10**30) == []


async def test_a_filter_on_an_int_beyond_64_bits_finds_exactly_its_entries(store: Store) -> None:
    await store.append("ns", {"x": 2**64 - 1, "n": 1})
    await store.append("ns", {"x": 2**63, "n": 2})
    await store.append("ns", {"x": 1, "n": 3})
    assert [e["n"] for e in await store.query("ns", filter={"x": 2**64 - 1})] == [1]
    assert [e["n"] for e in await store.query("ns", filter={"x": 2**63})] == [2]
    assert await store.query("ns", filter={"x": -(2**63) - 1}) == []


@pytest.mark.parametrize("ts", [2**63, 2**64 - 1])
async def test_a_ts_beyond_64_bits_is_refused_and_appends_nothing(store: Store, ts: int) -> None:
    with pytest.raises(InvalidValueError):
        await store.append("ns", {"_ts": ts})
    with pytest.raises(InvalidValueError):
        await store.append_many("ns", [{"a": 1}, {"_ts": ts}])
    assert await store.query("ns") == []
    stored = await store.append("ns", {"_ts": 2**63 - 1})
    assert await store.query("ns") == [stored]


@pytest.mark.parametrize("ts", [-1, 0, -(2**63)])
async def test_the_first_entry_of_a_log_may_carry_a_negative_or_zero_ts(
    store: Store, ts: int
) -> None:
    stored = await store.append("fresh", {"_ts": ts})
    assert stored == {"_ts": ts}
    assert await store.query("fresh") == [stored]


@pytest.mark.parametrize(
    "caps",
    [
        {"max_bytes": 10**30},
        {"max_bytes": 2**63},
        {"max_age": 1e300},
        {"max_age": 10**400},
        {"max_age": 4e9},
    ],
)
async def test_a_log_cap_beyond_what_backends_hold_is_refused_and_writes_go_on(
    store: Store, caps: dict[str, float]
) -> None:
    stored = await store.append("ns", {"a": 1})
    with pytest.raises(InvalidArgumentError):
        await store.set_log_retention("ns", **caps)  # type: ignore[arg-type]
    after = await store.append("ns", {"a": 2})
    await store.flush()
    assert await store.query("ns") == [after, stored]


async def test_the_largest_log_caps_are_accepted_everywhere(store: Store) -> None:
    await store.set_log_retention("ns", max_age=100 * 365 * 86400.0, max_bytes=2**53 - 1)
    stored = await store.append("ns", {"a": 1})
    await store.flush()
    assert await store.query("ns") == [stored]


@pytest.mark.parametrize(
    "flt", [{"x": "\ud800"}, {"\udfff": "a"}, {"x": "ok\udc00"}, {"\ud83d": None}]
)
async def test_a_filter_with_a_lone_surrogate_is_refused_typed(
    store: Store, flt: dict[str, str]
) -> None:
    await store.append("ns", {"x": "a"})
    with pytest.raises(InvalidArgumentError):
        await store.query("ns", filter=flt)  # type: ignore[arg-type]


@pytest.mark.parametrize("prefix", ["\ud800", "user:\udfff"])
async def test_a_list_prefix_with_a_lone_surrogate_is_refused_typed(
    store: Store, prefix: str
) -> None:
    await store.set("ns", "user:1", 1)
    with pytest.raises(InvalidArgumentError):
        await store.list("ns", prefix)
    with pytest.raises(InvalidArgumentError):
        await store.entries("ns", prefix)
    assert await store.list("ns", "user:") == ["user:1"]
