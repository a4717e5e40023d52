"""NaN and ±Infinity are refused wherever they hide (orjson would write them as ``null``):
beside real ``None`` values, inside tuples, inside an ``Enum`` member's value (orjson writes
members natively), and inside subclasses whose ``==`` lies."""

from __future__ import annotations

import enum
import math
from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from airstore import InvalidValueError
from airstore._validate import JSON_OPTS, check_finite

_SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**63), max_value=2**64 - 1),
    st.floats(),  # NaN and ±Infinity included
    st.text(max_size=5),
)
_TREES = st.recursive(
    _SCALARS,
    lambda kids: st.one_of(
        st.lists(kids, max_size=4),
        st.lists(kids, max_size=4).map(tuple),
        st.dictionaries(st.text(max_size=4), kids, max_size=4),
    ),
    max_leaves=20,
)


def _has_non_finite(value: Any) -> bool:
    if isinstance(value, float):
        return not math.isfinite(value)
    if isinstance(value, dict):
        return any(_has_non_finite(v) for v in value.values())
    if isinstance(value, list | tuple):
        return any(_has_non_finite(v) for v in value)
    return False


@settings(max_examples=400, deadline=None)
@given(_TREES)
def test_a_non_finite_float_is_refused_wherever_it_hides_and_nothing_else_is(value: Any) -> None:
    data = orjson.dumps(value, option=JSON_OPTS)
    if _has_non_finite(value):
        with pytest.raises(InvalidValueError):
            check_finite("ns", "k", value, data)
    else:
        check_finite("ns", "k", value, data)  # no error


class _Member(enum.Enum):
    NAN = math.nan
    PAIR = (1.0, math.inf)


class _LyingDict(dict[str, Any]):
    def __eq__(self, other: object) -> bool:
        return True

    def __ne__(self, other: object) -> bool:
        return False

    __hash__ = None


class _LyingList(list[Any]):
    def __eq__(self, other: object) -> bool:
        return True

    def __ne__(self, other: object) -> bool:
        return False

    __hash__ = None


@pytest.mark.parametrize(
    "value",
    [
        {"a": None, "b": (1, math.nan)},  # a tuple: the decoded JSON differs anyway
        {"a": [None, None], "b": {"c": -math.inf}},
        [None, (None, [math.inf])],
        {"x": _Member.NAN},
        [None, _Member.PAIR],
        _LyingDict(x=math.nan),
        {"x": None, "y": _LyingList([-math.inf])},
    ],
)
def test_nan_beside_real_nulls_and_inside_tuples_is_refused(value: Any) -> None:
    with pytest.raises(InvalidValueError):
        check_finite("ns", None, value, orjson.dumps(value, option=JSON_OPTS))
