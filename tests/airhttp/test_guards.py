import pytest
from hypothesis import given
from hypothesis import strategies as st

from airhttp.guards import (
    B64TOKEN,
    bearer_candidate,
    bearer_token,
    host_ok,
    is_loopback,
    origin_ok,
    token_ok,
)


def test_loopback_is_an_address_not_a_name_prefix() -> None:
    assert is_loopback("127.0.0.1")
    assert is_loopback("127.1.2.3")
    assert is_loopback("::1")
    assert is_loopback("localhost")
    assert not is_loopback("127.example")
    assert not is_loopback("0.0.0.0")


def test_bearer_token_is_checked_in_constant_time() -> None:
    assert bearer_token("Bearer abc") == "abc"
    assert bearer_token("bearer abc") == "abc"
    assert bearer_token("Basic abc") is None
    assert bearer_token(None) is None
    assert token_ok("abc", "abc")
    assert not token_ok("abd", "abc")
    assert not token_ok(None, "abc")


@pytest.mark.parametrize(
    ("header", "token"),
    [
        ("Bearer abc", "abc"),
        ("BEARER abc", "abc"),
        ("bEaReR   abc", "abc"),
        ("  Bearer abc  ", "abc"),
        ("Bearer a-b.c_d~e+f/g==", "a-b.c_d~e+f/g=="),
        ("Bearer", None),
        ("Bearer ", None),
        ("Bearerabc", None),
        ("Bearer\tabc", None),
        ("Bearer abc def", None),
        ("Bearer ab=c", None),
        ("Bearer a,b", None),
        ("Basic YWxhZGRpbjpvcGVuc2VzYW1l", None),
        ("Token abc", None),
        ("", None),
    ],
)
def test_bearer_parsing_follows_rfc_6750(header: str, token: str | None) -> None:
    assert bearer_token(header) == token


@given(st.text(max_size=40))
def test_bearer_parsing_never_raises_and_returns_a_b64token(header: str) -> None:
    token = bearer_token(header)
    assert token is None or B64TOKEN.fullmatch(token)


@given(st.one_of(st.text(max_size=40), st.text(max_size=30).map(lambda t: f"Bearer {t}")))
def test_the_bearer_candidate_is_the_token_whenever_it_is_a_b64token(header: str) -> None:
    # what the OAuth guard's cache lookup relies on: a candidate equal to a token
    # bearer_token gave is what bearer_token gives for this header too
    candidate = bearer_candidate(header)
    valid = candidate is not None and B64TOKEN.fullmatch(candidate) is not None
    assert bearer_token(header) == (candidate if valid else None)


def test_host_and_origin_checks_ignore_surrounding_whitespace() -> None:
    assert host_ok(" localhost:3000 ", frozenset())
    assert origin_ok(" http://127.0.0.1:8000 ", frozenset())
    assert not origin_ok("http://evil.example", frozenset())
    assert not host_ok("evil.example", frozenset())
    assert host_ok("Mcp.Internal:80", frozenset({"mcp.internal"}))


_HEADER_PARTS = st.sampled_from(
    ["Bearer", "bearer", "BEARER", "Bearerx", "Basic", "\u212aearer", " ", "  ", "\t", "=",
     "==", "a", "Z9", "-._~+/", "é", "\u0130", "abc.def.ghi", "\x00", ","]
)  # fmt: skip


@given(st.lists(_HEADER_PARTS, max_size=8).map("".join))
def test_bearer_token_agrees_with_the_rfc_6750_grammar(header: str) -> None:
    # the reference: the RFC 6750 credentials grammar as a regex over the whole header
    import re

    grammar = re.compile(r"bearer +([A-Za-z0-9\-._~+/]+=*)", re.IGNORECASE | re.ASCII)
    found = grammar.fullmatch(header.strip(" \t"))
    assert bearer_token(header) == (found.group(1) if found else None)
