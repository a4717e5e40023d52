from __future__ import annotations

from typing import Any

import orjson
import pytest
from hypothesis import given
from hypothesis import strategies as st

from airstore import InvalidValueError
from airstore._entry import stamp


def clock() -> float:
    return 1_800_000_000.123


@pytest.mark.parametrize(
    ("entry", "ts"),
    [
        ({}, 1_800_000_000_123),
        ({"a": 1, "b": [1, {"c": None}]}, 1_800_000_000_123),
        ({"_ts": 5}, 5),
        ({"_ts": 5.5, "a": 1}, 1_800_000_000_123),
        ({"_ts": "yesterday"}, 1_800_000_000_123),
        ({"_ts": True}, 1_800_000_000_123),
    ],
)
def test_stamped_body_is_the_stored_entry(entry: dict[str, Any], ts: int) -> None:
    stored, got_ts, body = stamp("log", entry, clock)
    assert got_ts == ts == stored["_ts"]
    assert orjson.loads(body) == stored
    assert {k: v for k, v in stored.items() if k != "_ts"} == {
        k: v for k, v in entry.items() if k != "_ts"
    }
    assert stored is not entry


json_leaf = st.none() | st.booleans() | st.integers(-(2**53), 2**53) | st.text(max_size=8)


@given(st.dictionaries(st.text(max_size=6), json_leaf, max_size=6))
def test_stamp_round_trips_any_flat_entry(entry: dict[str, Any]) -> None:
    stored, _ts, body = stamp("log", entry, clock)
    assert orjson.loads(body) == stored


def test_stamp_rejects_what_is_not_a_json_object() -> None:
    with pytest.raises(InvalidValueError):
        stamp("log", {"x": {1, 2}}, clock)
    with pytest.raises(InvalidValueError):
        stamp("log", [1], clock)
