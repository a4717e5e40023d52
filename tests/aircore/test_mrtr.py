"""The requestState of 2026-07-28 input rounds: sealed, bound, expiring, bounded, fuzzed."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from aircore.errors import AirError, InvalidParamsError
from aircore.protocol.mrtr import StateSealer, binding_of, read_responses
from aircore.settings import REQUEST_STATE_KEY_ENV, request_state_key

BINDING = binding_of("tools/call", "t", {"a": 1})
JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**63), 2**63 - 1) | st.text(max_size=20),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=20,
)


@given(state=st.one_of(st.text(max_size=300), st.binary(max_size=50), st.integers(), st.none()))
@settings(max_examples=300)
def test_any_forged_state_is_refused_with_invalid_params(state: Any) -> None:
    with pytest.raises(InvalidParamsError) as err:
        StateSealer(b"k").open(state, binding=BINDING)
    assert err.value.code == -32602
    assert err.value.message == "Invalid or expired requestState"


@given(answers=st.dictionaries(st.text(max_size=10), JSON, max_size=5))
@settings(max_examples=100)
def test_sealed_answers_come_back_unchanged(answers: dict[str, Any]) -> None:
    sealer = StateSealer(b"k")
    state = sealer.seal(binding=BINDING, answers=answers, pending=["next"])
    assert sealer.open(state, binding=BINDING) == (answers, ["next"])


@given(flip=st.integers(min_value=0, max_value=10_000))
def test_changing_any_character_breaks_the_seal(flip: int) -> None:
    sealer = StateSealer(b"k")
    state = sealer.seal(binding=BINDING, answers={"x": {"action": "accept"}}, pending=[])
    i = flip % len(state)
    forged = state[:i] + ("A" if state[i] != "A" else "B") + state[i + 1 :]
    with pytest.raises(InvalidParamsError):
        sealer.open(forged, binding=BINDING)


def test_a_state_is_bound_to_its_request_key_and_lifetime() -> None:
    sealer = StateSealer(b"key-1")
    state = sealer.seal(binding=BINDING, answers={}, pending=["k"])
    # any replica with the same key opens it
    assert StateSealer(b"key-1").open(state, binding=BINDING) == ({}, ["k"])
    for other, reason in [
        (StateSealer(b"key-2"), "integrity check failed"),
        (StateSealer(None), "integrity check failed"),
    ]:
        with pytest.raises(InvalidParamsError) as err:
            other.open(state, binding=BINDING)
        assert err.value.data == {"reason": reason}
    with pytest.raises(InvalidParamsError) as err:
        sealer.open(state, binding=binding_of("tools/call", "t", {"a": 2}))
    assert err.value.data == {"reason": "minted for another request"}
    expired = StateSealer(b"key-1", ttl=-1.0).seal(binding=BINDING, answers={}, pending=[])
    with pytest.raises(InvalidParamsError) as err:
        sealer.open(expired, binding=BINDING)
    assert err.value.data == {"reason": "expired"}


def test_answers_that_are_not_json_cannot_be_sealed() -> None:
    with pytest.raises(AirError) as err:
        StateSealer(b"k").seal(binding=BINDING, answers={"n": 2**70}, pending=[])
    assert err.value.code == -32603


def test_states_are_bounded_in_size_both_ways() -> None:
    sealer = StateSealer(b"k", max_bytes=512)
    with pytest.raises(AirError) as err:
        sealer.seal(binding=BINDING, answers={"big": "x" * 1000}, pending=[])
    assert err.value.code == -32603
    assert err.value.data["limit"] == 512
    with pytest.raises(InvalidParamsError):
        sealer.open("v1." + "A" * 600, binding=BINDING)


def test_the_binding_does_not_depend_on_key_order() -> None:
    assert binding_of("m", "n", {"a": 1, "b": 2}) == binding_of("m", "n", {"b": 2, "a": 1})
    assert binding_of("m", "n", {"a": 1}) != binding_of("m", "other", {"a": 1})


@pytest.mark.parametrize(
    ("params", "ok"),
    [
        ({}, True),
        ({"inputResponses": {}}, True),
        ({"inputResponses": {"a": {"action": "decline"}}}, True),
        ({"inputResponses": None}, False),
        ({"inputResponses": [1]}, False),
        ({"inputResponses": {"a": 1}}, False),
        ({"inputResponses": {"a": "x"}}, False),
    ],
)
def test_input_responses_must_be_an_object_of_objects(params: dict[str, Any], ok: bool) -> None:
    if ok:
        assert read_responses(params) == params.get("inputResponses")
    else:
        with pytest.raises(InvalidParamsError):
            read_responses(params)


def test_the_signing_key_comes_from_the_environment() -> None:
    assert request_state_key({}) is None
    assert request_state_key({REQUEST_STATE_KEY_ENV: ""}) is None
    assert request_state_key({REQUEST_STATE_KEY_ENV: "  "}) is None  # empty counts as unset
    assert request_state_key({REQUEST_STATE_KEY_ENV: "s3cret"}) == b"s3cret"
