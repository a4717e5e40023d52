"""The plain-hint fast path writes exactly pydantic's schema, and docstrings describe parameters."""

from __future__ import annotations

import inspect
from typing import Any, Literal, Optional, Union

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import TypeAdapter

from aircore.docstrings import parse_docstring
from aircore.hints import number_coercer, plain_schema, typed_schema

SCALARS = st.sampled_from([str, int, float, bool, Any])
LITERALS = st.one_of(
    st.lists(st.text(max_size=3), min_size=1, max_size=3, unique=True),
    st.lists(st.integers(-5, 5), min_size=1, max_size=3, unique=True),
    st.lists(st.booleans(), min_size=1, max_size=2, unique=True),
).map(lambda values: Literal[tuple(values)])


def _union(members: list[Any]) -> Any:
    return Union[tuple(members)]  # noqa: UP007 - built at run time


HINTS = st.recursive(
    SCALARS | LITERALS | st.sampled_from([list, dict]),
    lambda inner: st.one_of(
        inner.map(lambda h: list[h]),  # type: ignore[valid-type]
        inner.map(lambda h: dict[str, h]),  # type: ignore[valid-type]
        inner.map(lambda h: Optional[h]),  # noqa: UP045
        st.lists(inner, min_size=2, max_size=3).map(_union),
    ),
    max_leaves=6,
)


@given(HINTS)
def test_plain_hints_get_exactly_the_schema_pydantic_writes(hint: Any) -> None:
    schema = plain_schema(hint)
    if schema is None:  # e.g. a union pydantic would simplify: left to pydantic itself
        return
    assert schema == TypeAdapter(hint).json_schema()


@pytest.mark.parametrize(
    "hint",
    [
        tuple,
        set[int],
        Literal["a", None],
        Literal[1, "a"],
        Literal[b"x"],
        dict[int, str],
        list[tuple[int, str]],
        Optional[set[str]],  # noqa: UP045
    ],
)
def test_hints_that_need_conversion_or_subtle_rules_go_to_pydantic(hint: Any) -> None:
    assert plain_schema(hint) is None


@pytest.mark.parametrize(
    "hint",
    [
        Union[int, Any],  # noqa: UP007 - pydantic keeps 0.0 here (found by the property test)
        Optional[Union[float, Any]],  # noqa: UP007, UP045
        list[Union[list[int], Any]],  # noqa: UP007
        dict[str, Optional[Union[int, str, Any]]],  # noqa: UP007, UP045
    ],
)
def test_any_beside_a_number_converts_through_pydantic_but_keeps_the_plain_schema(
    hint: Any,
) -> None:
    assert typed_schema(hint) is None  # the tool's arguments go through pydantic
    assert plain_schema(hint) == TypeAdapter(hint).json_schema()  # a params= mapping keeps it


@given(HINTS, st.data())
def test_number_coercion_matches_pydantic_on_values_the_schema_accepts(
    hint: Any, data: st.DataObject
) -> None:
    if typed_schema(hint) is None:
        return
    value = data.draw(_values(hint))
    fix = number_coercer(hint)
    ours = value if fix is None else fix(value)
    theirs = TypeAdapter(hint).validate_python(value)
    assert _typed_equal(ours, theirs), (hint, value, ours, theirs)


def _values(hint: Any) -> st.SearchStrategy[Any]:
    """JSON values of a plain hint, numbers drawn as ints or integral floats."""
    from typing import get_args, get_origin

    if hint is str:
        return st.text(max_size=3)
    if hint is bool:
        return st.booleans()
    if hint in (int, float):
        return st.integers(-3, 3) | st.integers(-3, 3).map(float)
    if hint is Any:
        return st.none() | st.integers(-3, 3)
    if hint is list:
        return st.lists(st.integers(0, 3), max_size=2)
    if hint is dict:
        return st.dictionaries(st.text(max_size=2), st.integers(0, 3), max_size=2)
    origin, args = get_origin(hint), get_args(hint)
    if origin is Literal:
        return st.sampled_from(args)
    if origin is list:
        return st.lists(_values(args[0]), max_size=2)
    if origin is dict:
        return st.dictionaries(st.text(max_size=2), _values(args[1]), max_size=2)
    return st.one_of(*[st.none() if a is type(None) else _values(a) for a in args])


def _typed_equal(a: Any, b: Any) -> bool:
    if type(a) is not type(b):
        return False
    if isinstance(a, list):
        return len(a) == len(b) and all(_typed_equal(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(_typed_equal(a[k], b[k]) for k in a)
    return bool(a == b)


def _doc(func: Any) -> str:
    return inspect.getdoc(func) or ""


def test_google_style_arguments_describe_parameters_and_leave_the_rest() -> None:
    def f(query: str, limit: int) -> None:
        """Search.

        Args:
            query: what to look for;
                continued here.
            limit (int): at most this many.

        Raises:
            ValueError: never.
        """

    parsed = parse_docstring(_doc(f))
    assert parsed.parameters == {"query": "what to look for; continued here.",
                                 "limit": "at most this many."}  # fmt: skip
    assert parsed.description == "Search.\n\nRaises:\n    ValueError: never."


def test_numpy_style_parameters_describe_parameters() -> None:
    def f(x: int, y: int) -> None:
        """Add.

        Parameters
        ----------
        x, y : int
            the numbers.

        Returns
        -------
        int
        """

    parsed = parse_docstring(_doc(f))
    assert parsed.parameters == {"x": "the numbers.", "y": "the numbers."}
    assert parsed.description == "Add.\n\nReturns\n-------\nint"


def test_sphinx_fields_describe_parameters_and_a_plain_docstring_stays_whole() -> None:
    parsed = parse_docstring("Wrap.\n\n:param text: the text\n    to wrap\n:returns: lines")
    assert parsed.parameters == {"text": "the text to wrap"}
    assert parsed.description == "Wrap.\n\n:returns: lines"
    plain = parse_docstring("Just a sentence.\n\nArguments are JSON.")
    assert plain == parse_docstring("Just a sentence.\n\nArguments are JSON.")
    assert plain.parameters == {}
    assert plain.description == "Just a sentence.\n\nArguments are JSON."
    assert parse_docstring(None).description is None


@given(st.text(max_size=300))
def test_any_docstring_parses_without_error(doc: str) -> None:
    parsed = parse_docstring(doc)
    assert all(isinstance(v, str) and v for v in parsed.parameters.values())
