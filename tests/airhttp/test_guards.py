from airhttp.guards import bearer_token, is_loopback, token_ok


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
