"""Redaction of opt-in arguments and results."""

from __future__ import annotations

import inspect
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from airmeter import Redactor, redact, redact_text
from airmeter.redact import REDACTED


def test_secret_keys_are_masked_at_every_depth() -> None:
    args = {
        "query": "weather",
        "password": "hunter2",
        "apiKey": "sk-1",
        "nested": {"Authorization": "Bearer x", "items": [{"access_token": "t", "id": 3}]},
        "X-Api-Key": "k",
        "client_secret": "s",
        "key": "v",
        "keyword": "visible",
        "monkey": "visible",
        "tuple": ({"token": 1},),
    }
    out = redact(args)
    assert out == {
        "query": "weather",
        "password": REDACTED,
        "apiKey": REDACTED,
        "nested": {"Authorization": REDACTED, "items": [{"access_token": REDACTED, "id": 3}]},
        "X-Api-Key": REDACTED,
        "client_secret": REDACTED,
        "key": REDACTED,
        "keyword": "visible",
        "monkey": "visible",
        "tuple": [{"token": REDACTED}],
    }
    assert args["password"] == "hunter2"  # the input is untouched


def test_extra_words_and_placeholder_are_configurable() -> None:
    r = Redactor(extra=["ssn_number", "email"], placeholder="***")
    assert r({"email": "a@b", "name": "x", "pwd": "p"}) == {
        "email": "***",
        "name": "x",
        "pwd": "***",
    }


def test_too_deep_structures_are_cut() -> None:
    deep: Any = "leaf"
    for _ in range(50):
        deep = {"a": deep}
    out = Redactor(max_depth=5)(deep)
    for _ in range(6):
        out = out["a"]
    assert out == REDACTED


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=5),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=20,
)


def _secret_values(value: Any, r: Redactor) -> list[Any]:
    found = []
    if isinstance(value, dict):
        for k, v in value.items():
            if r.is_secret(k):
                found.append(v)
            else:
                found += _secret_values(v, r)
    elif isinstance(value, list):
        for v in value:
            found += _secret_values(v, r)
    return found


@settings(deadline=None)  # a loaded machine is not a failure
@given(json_values)
def test_no_secret_value_survives_and_shape_is_kept(value: Any) -> None:
    r = Redactor()
    out = r({"token": value, "data": value})
    assert out["token"] == REDACTED
    assert all(v == REDACTED for v in _secret_values(out, r))
    assert _secret_values(r(value), r) == [REDACTED] * len(_secret_values(value, r))


ADVERSARIAL = ["a:", "x=", "a://b:", "x://u:p/", "eyJa-", "password=\"", "\\\"a\\\": ", "a@", " ",
               "Bearer ", "-----BEGIN A ", "ghp_", "'", "\\", "--token ", 'secret: "a\n',
               "--pw='x\n"]  # fmt: skip
# units whose last copy takes the tail's first words as its (masked) value
OPEN_QUOTES = ('password="', "'", 'secret: "a\n', "--pw='x\n", "--token ")


@pytest.mark.parametrize("unit", ADVERSARIAL)
def test_100_kb_of_an_adversarial_pattern_is_redacted_without_recursion(unit: str) -> None:
    text = (unit * (100_000 // len(unit) + 1))[:100_000]
    tail = " then password=hunter2pw and Bearer abcdefghijklmnop"
    with _low_recursion_limit():
        out = redact_text(text + tail)
    assert "hunter2pw" not in out
    assert "abcdefghijklmnop" not in out
    if unit not in OPEN_QUOTES:
        assert out.endswith(f" then password={REDACTED} and Bearer {REDACTED}")


def test_the_issue_inputs_come_back_unchanged() -> None:
    for text in ("a:" * 490, "x=" * 490, "a:" * 50_000):
        with _low_recursion_limit():
            assert redact_text(text) == text


@contextmanager
def _low_recursion_limit() -> Iterator[None]:
    """Redaction must not recurse with the text: a limit far below the text's length."""
    old = sys.getrecursionlimit()
    sys.setrecursionlimit(max(200, len(inspect.stack()) + 100))
    try:
        yield
    finally:
        sys.setrecursionlimit(old)
