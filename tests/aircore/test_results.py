from __future__ import annotations

from typing import Any

import pytest

from aircore import normalize_result


def _text(t: str) -> list[dict[str, Any]]:
    return [{"type": "text", "text": t}]


@pytest.mark.parametrize(
    ("value", "content"),
    [
        ("hello", _text("hello")),
        (42, _text("42")),
        (True, _text("true")),
        (False, _text("false")),
        (None, _text("")),
        ([1, 2, 3], _text("[\n  1,\n  2,\n  3\n]")),
        ({"name": "A"}, _text('{\n  "name": "A"\n}')),
        ({"text": "hi"}, _text("hi")),
        (
            {"image": "b64", "mimeType": "image/png"},
            [{"type": "image", "data": "b64", "mimeType": "image/png"}],
        ),
        (
            {"resource": {"uri": "report://r/1", "name": "R1", "mimeType": "application/pdf"}},
            [
                {
                    "type": "resource_link",
                    "uri": "report://r/1",
                    "name": "R1",
                    "mimeType": "application/pdf",
                }
            ],
        ),
        (
            {
                "content": [
                    {"type": "text", "text": "as is"},
                    {"type": "image", "data": "x", "mimeType": "image/png"},
                ]
            },
            [
                {"type": "text", "text": "as is"},
                {"type": "image", "data": "x", "mimeType": "image/png"},
            ],
        ),
    ],
)
def test_every_row_of_the_seed_table(value: Any, content: list[dict[str, Any]]) -> None:
    assert normalize_result(value) == content


def test_floats_and_unknown_types_become_text() -> None:
    assert normalize_result(1.5) == _text("1.5")
    out = normalize_result({"when": object.__new__(object)})
    assert out[0]["type"] == "text"
    assert '"when"' in out[0]["text"]
