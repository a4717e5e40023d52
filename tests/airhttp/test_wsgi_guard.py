"""The WSGI guard: a declared body length a client sends is read as ASCII digits only."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from airhttp import AccessPolicy, wsgi_refusal

POLICY = AccessPolicy(check_host=False)


@pytest.mark.parametrize("length", ["²", "١٢", "-5", "+1", "1e3", "12 34", "0x10"])
def test_a_content_length_that_is_not_ascii_digits_is_a_bad_request_not_a_crash(
    length: str,
) -> None:
    refusal = wsgi_refusal({"CONTENT_LENGTH": length}, policy=POLICY, max_body=1024)
    assert refusal is not None
    assert refusal.status == 400


@pytest.mark.parametrize(("length", "status"), [("1024", None), ("1025", 413), ("0", None)])
def test_a_declared_length_over_the_cap_is_too_large(length: str, status: int | None) -> None:
    refusal = wsgi_refusal({"CONTENT_LENGTH": length}, policy=POLICY, max_body=1024)
    assert (refusal and refusal.status) == status


@given(length=st.text(max_size=12))
def test_any_content_length_gets_an_answer_never_an_exception(length: str) -> None:
    refusal = wsgi_refusal({"CONTENT_LENGTH": length}, policy=POLICY, max_body=1024)
    assert refusal is None or refusal.status in (400, 413)
