import pytest
from hypothesis import given
from hypothesis import strategies as st

from airhttp import accepts, media_type


@pytest.mark.parametrize(
    ("header", "media"),
    [
        ("application/json", "application/json"),
        ("Application/JSON; charset=utf-8", "application/json"),
        ("  application/json ;charset=UTF-8", "application/json"),
        ("text/plain; note=application/json", "text/plain"),
        ("application/jsonx", "application/jsonx"),
        ("application/json, text/plain", ""),
        ("application", ""),
        ("/json", ""),
        ("", ""),
        (None, ""),
    ],
)
def test_content_type_is_parsed_as_a_media_type(header: str | None, media: str) -> None:
    assert media_type(header) == media


@pytest.mark.parametrize(
    ("header", "media", "ok"),
    [
        (None, "application/json", True),
        ("application/json, text/event-stream", "text/event-stream", True),
        ("text/event-stream", "application/json", False),
        ("*/*", "application/json", True),
        ("application/*", "application/json", True),
        ("application/*;q=0.5", "application/json", True),
        ("application/json;q=0", "application/json", False),
        ("*/*, application/json;q=0", "application/json", False),
        ("application/json;q=0, */*", "text/event-stream", True),
        ("text/html; note=application/json", "application/json", False),
        ("application/json;q=bogus", "application/json", False),
    ],
)
def test_accept_negotiates_ranges_and_quality(header: str | None, media: str, ok: bool) -> None:
    assert accepts(header, media) is ok


@given(st.text(max_size=60))
def test_media_parsing_never_raises(header: str) -> None:
    essence = media_type(header)
    assert essence == "" or (essence.count("/") >= 1 and essence == essence.lower())
    accepts(header, "application/json")


def test_long_header_values_are_parsed_but_never_cached() -> None:
    """A client cannot park its own 64 KiB strings in the parse caches."""
    from airhttp import media

    media._media_type.cache_clear()
    media._accepts.cache_clear()
    long_type = "application/json;" + "x" * 60_000
    long_accept = "text/html, " * 6_000 + "application/json"
    assert media.media_type(long_type) == "application/json"
    assert media.accepts(long_accept, "application/json")
    assert media._media_type.cache_info().currsize == 0
    assert media._accepts.cache_info().currsize == 0
    assert media.media_type("application/json") == "application/json"
    assert media._media_type.cache_info().currsize == 1
