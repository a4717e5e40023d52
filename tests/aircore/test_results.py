from __future__ import annotations

import dataclasses
import datetime
import decimal
import enum
import json
import pathlib
import uuid
from typing import Any

import orjson
import pytest

from aircore import define_server, normalize_result
from aircore.errors import ResultError


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


def test_floats_become_text_and_unknown_types_are_refused_by_name_and_place() -> None:
    assert normalize_result(1.5) == _text("1.5")
    with pytest.raises(ResultError) as info:
        normalize_result({"when": object.__new__(object)})
    assert info.value.code == -32603
    assert info.value.type_name == "object"
    assert info.value.path == "result['when']"
    assert "<object object" not in info.value.message  # never repr() junk


class _Opaque:
    """An object with no JSON form."""


@dataclasses.dataclass
class _Row:
    when: datetime.date
    tags: frozenset[str]


class _Mood(enum.Enum):
    OK = "ok"


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (datetime.datetime(2024, 5, 1, 12, 30), '"2024-05-01T12:30:00"'),
        (
            datetime.datetime(2024, 5, 1, 12, 30, tzinfo=datetime.UTC),
            '"2024-05-01T12:30:00+00:00"',
        ),
        (datetime.date(2024, 5, 1), '"2024-05-01"'),
        (datetime.time(8, 15), '"08:15:00"'),
        (datetime.timedelta(minutes=1, seconds=30.5), '"PT90.5S"'),
        ({3, 1, 2}, "[1, 2, 3]"),
        (frozenset({"b", "a"}), '["a", "b"]'),
        ((1, "a"), '[1, "a"]'),
        (decimal.Decimal("1.10"), '"1.10"'),
        (uuid.UUID(int=1), '"00000000-0000-0000-0000-000000000001"'),
        (pathlib.PurePosixPath("/data/x.txt"), '"/data/x.txt"'),
        (b"hi", '"aGk="'),
        (_Mood.OK, '"ok"'),
        (
            _Row(datetime.date(2024, 1, 2), frozenset({"x"})),
            '{"when": "2024-01-02", "tags": ["x"]}',
        ),
    ],
)
def test_values_that_are_not_json_convert_the_documented_way(value: Any, text: str) -> None:
    (block,) = normalize_result({"v": value})
    assert orjson.loads(block["text"]) == {"v": orjson.loads(text)}


@pytest.mark.parametrize(
    ("value", "text"),
    [
        ({3, 1, 2}, "[1, 2, 3]"),
        (decimal.Decimal("1.10"), '"1.10"'),
        (datetime.date(2024, 5, 1), '"2024-05-01"'),
        (b"hi", '"aGk="'),
        (_Mood.OK, '"ok"'),
        (
            _Row(datetime.date(2024, 1, 2), frozenset({"x"})),
            '{"when": "2024-01-02", "tags": ["x"]}',
        ),
        ("caf\udce9", '"caf\ufffd"'),
    ],
)
def test_beside_an_integer_beyond_64_bits_values_convert_the_same_way(
    value: Any, text: str
) -> None:
    big = 2**70 + 1
    (block,) = normalize_result({"v": value, "big": big})
    assert json.loads(block["text"]) == {"v": json.loads(text), "big": big}
    with pytest.raises(ResultError) as info:
        normalize_result({"big": big, "rows": [1, _Opaque()]})
    assert info.value.path == "result['rows'][1]"


@pytest.mark.parametrize("big", [1, 2**70 + 1])  # orjson's path, and the wide-integer one
@pytest.mark.parametrize("number", [float("nan"), float("inf"), -float("inf")])
def test_nan_or_infinity_in_a_plain_result_is_refused_naming_its_place(
    big: int, number: float
) -> None:
    """It went out as ``null`` (the value changed, silently) or, bare, as the text ``nan``."""
    for value, place in (({"big": big, "v": [1.0, number]}, "result['v'][1]"), (number, "result")):
        with pytest.raises(ResultError) as info:
            normalize_result(value)
        assert info.value.path == place
        assert "JSON has no NaN or Infinity" in str(info.value)


def test_a_pydantic_model_in_a_result_is_its_fields() -> None:
    from pydantic import BaseModel

    class Point(BaseModel):
        x: float
        at: datetime.date

    (block,) = normalize_result([Point(x=1, at=datetime.date(2024, 1, 1))])
    assert orjson.loads(block["text"]) == [{"x": 1.0, "at": "2024-01-01"}]


async def test_a_tool_returning_an_object_with_no_json_form_gets_an_error_naming_it() -> None:
    server = define_server(name="s")

    @server.tool
    def leak(n: int):  # type: ignore[no-untyped-def]
        return {"rows": [1, _Opaque()]}

    @server.tool
    def when() -> datetime.datetime:
        return datetime.datetime(2024, 5, 1, 12, 0, tzinfo=datetime.UTC)

    async with server:
        bad = await server.call_tool("leak", {"n": 1})
        good = await server.call_tool("when", {})
    assert bad["isError"] is True
    text = bad["content"][0]["text"]
    assert text.startswith("[-32603] the tool returned a value that is not JSON")
    assert "result['rows'][1] is a _Opaque" in text
    assert " at 0x" not in text
    assert "structuredContent" not in good  # as in MCPServer: datetime is not a JSON shape
    assert orjson.loads(good["content"][0]["text"]) == "2024-05-01T12:00:00+00:00"
