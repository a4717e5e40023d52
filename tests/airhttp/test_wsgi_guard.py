"""The WSGI guard: a declared body length a client sends is read as ASCII digits only."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from airhttp import AccessPolicy, wsgi_refusal

POLICY = AccessPolicy(check_host=False)


@pytest.mark.parametrize("length", ["²", "١٢", "-5", "+1", "1e3", "12 34", "0x10"])
def test_a_content_length_that_is_not_ascii_digits_is_refused_not_a_crash(length: str) -> None:
    refusal = wsgi_refusal({"CONTENT_LENGTH": length}, policy=POLICY, max_body=1024)
    assert refusal is not None
    assert refusal.status == 413


@given(length=st.text(max_size=12))
def test_any_content_length_gets_an_answer_and_digits_within_the_cap_pass(length: str) -> None:
    refusal = wsgi_refusal({"CONTENT_LENGTH": length}, policy=POLICY, max_body=1024)
    text = length.strip()
    if not text or (text.isascii() and text.isdigit() and int(text) <= 1024):
        assert refusal is None
    else:
        assert refusal is not None
        assert refusal.status == 413
