"""Tool signatures that new users bring from FastMCP and the SDK's ``MCPServer``, with arguments
each one should accept and refuse. Used by ``test_signatures_sdk.py``.

Every function records what it received (``SEEN``) and returns a value of its return type.
"""

from __future__ import annotations

import dataclasses
import datetime
import enum
from collections.abc import Callable
from decimal import Decimal
from typing import Annotated, Any, Literal, NamedTuple, NotRequired, Optional
from uuid import UUID

from pydantic import BaseModel, Field
from typing_extensions import TypedDict  # pydantic needs it below Python 3.12

SEEN: list[dict[str, Any]] = []


def _seen(values: dict[str, Any]) -> None:
    SEEN.append(dict(values))


class Color(enum.Enum):
    RED = "red"
    BLUE = "blue"


class Level(enum.IntEnum):
    LOW = 1
    HIGH = 2


class Point(BaseModel):
    """A point on the plane."""

    x: float = Field(description="horizontal")
    y: float = Field(0.0, ge=0)


class Circle(BaseModel):
    center: Point
    radius: float = Field(gt=0)


class Shape(BaseModel):
    name: str = Field(min_length=1)
    points: list[Point] = []
    anchor: Point | None = None
    color: Color = Color.RED


@dataclasses.dataclass
class Item:
    sku: str
    quantity: int = 1
    tags: list[str] = dataclasses.field(default_factory=list)


class Movie(TypedDict):
    title: str
    year: int
    rating: NotRequired[float]


class Case(NamedTuple):
    """A signature, arguments both servers accept, and ``(arguments, bad field)`` they refuse."""

    func: Callable[..., Any]
    valid: list[dict[str, Any]]
    invalid: list[tuple[dict[str, Any], str]]


def plain_str(text: str) -> str:
    _seen(locals())
    return text


def ints(a: int, b: int = 3) -> int:
    _seen(locals())
    return a + b


def floats(x: float, y: float | None = None) -> float:
    _seen(locals())
    return x


def flags(on: bool = False) -> bool:
    _seen(locals())
    return on


def optional_int(n: int | None = None) -> str:
    _seen(locals())
    return str(n)


def nullable_required(n: Optional[str]) -> str:  # noqa: UP045 - the spelling users bring
    _seen(locals())
    return str(n)


def union(v: int | str) -> str:
    _seen(locals())
    return str(v)


def union_none(v: int | str | None = None) -> int | str | None:
    _seen(locals())
    return v


def lists(tags: list[str], scores: list[float] | None = None) -> list[str]:
    _seen(locals())
    return tags


def dicts(m: dict[str, int]) -> dict[str, int]:
    _seen(locals())
    return m


def bare(items: list, options: dict) -> None:
    _seen(locals())


def any_param(v: Any = None) -> str:
    _seen(locals())
    return repr(v)


def literal_str(mode: Literal["fast", "slow"] = "fast") -> str:
    _seen(locals())
    return mode


def literal_int(level: Literal[1, 2, 3]) -> int:
    _seen(locals())
    return level


def literal_mixed(v: Literal["a", 1, None]) -> str:
    _seen(locals())
    return repr(v)


def enum_str(color: Color) -> Color:
    _seen(locals())
    return color


def enum_int(level: Level = Level.LOW) -> str:
    _seen(locals())
    return level.name


def model(point: Point) -> Point:
    _seen(locals())
    return point


def nested_model(shape: Shape) -> Shape:
    _seen(locals())
    return shape


def dataclass_param(item: Item) -> Item:
    _seen(locals())
    return item


def typeddict_param(movie: Movie) -> Movie:
    _seen(locals())
    return movie


def tuple_param(pair: tuple[int, str]) -> tuple[int, str]:
    _seen(locals())
    return pair


def tuple_var(nums: tuple[int, ...]) -> list[int]:
    _seen(locals())
    return list(nums)


def set_param(ids: set[int]) -> int:
    _seen(locals())
    return len(ids)


def annotated_text(
    name: Annotated[
        str, Field(min_length=2, max_length=5, pattern="^[a-z]+$", description="lower-case")
    ],
) -> str:
    _seen(locals())
    return name


def annotated_numbers(
    n: Annotated[int, Field(ge=0, le=10)],
    f: Annotated[float, Field(gt=0, lt=1)] = 0.5,
    label: Annotated[str, Field(examples=["a", "b"], description="a label")] = "a",
) -> float:
    _seen(locals())
    return n * f


def field_default(limit: int = Field(10, ge=1, le=100, description="max hits")) -> int:
    _seen(locals())
    return limit


def list_bounds(items: Annotated[list[int], Field(min_length=1, max_length=3)]) -> int:
    _seen(locals())
    return sum(items)


def times(when: datetime.datetime, day: datetime.date | None = None) -> datetime.datetime:
    _seen(locals())
    return when


def ids_and_money(ident: UUID, amount: Decimal) -> str:
    _seen(locals())
    return f"{ident}:{amount}"


def model_map(points: dict[str, Point]) -> dict[str, Point]:
    _seen(locals())
    return points


def optional_model(point: Point | None = None) -> Point | None:
    _seen(locals())
    return point


def model_union(shape: Circle | Point) -> str:
    _seen(locals())
    return type(shape).__name__


def literal_list(modes: list[Literal["a", "b"]]) -> list[str]:
    _seen(locals())
    return list(modes)


def nested_plain(table: dict[str, list[int]]) -> int:
    _seen(locals())
    return sum(sum(v) for v in table.values())


def reserved_names(schema: str, json: str = "j", copy: int = 0) -> str:
    _seen(locals())
    return schema + json + str(copy)


def bytes_param(data: bytes) -> int:
    _seen(locals())
    return len(data)


def model_list(points: list[Point]) -> list[Point]:
    _seen(locals())
    return points


CASES: list[Case] = [
    Case(plain_str, [{"text": "hi"}], [({}, "text"), ({"text": 5}, "text")]),
    Case(ints, [{"a": 1}, {"a": 1, "b": 2}, {"a": 2.0}], [({"a": 1.5}, "a"), ({"a": "x"}, "a")]),
    Case(floats, [{"x": 1}, {"x": 1.5, "y": None}, {"x": 2, "y": 3}], [({"x": "x"}, "x")]),
    Case(flags, [{}, {"on": True}], [({"on": "maybe"}, "on")]),
    Case(optional_int, [{}, {"n": None}, {"n": 3}], [({"n": "x"}, "n")]),
    Case(nullable_required, [{"n": None}, {"n": "s"}], [({}, "n"), ({"n": 5}, "n")]),
    Case(union, [{"v": 1}, {"v": "a"}], [({"v": None}, "v"), ({"v": [1]}, "v")]),
    Case(union_none, [{}, {"v": None}, {"v": 2}, {"v": "b"}], [({"v": {"a": 1}}, "v")]),
    Case(lists, [{"tags": []}, {"tags": ["a"], "scores": [1.5, 2]}], [({"tags": [1]}, "tags")]),
    Case(dicts, [{"m": {"a": 1}}], [({"m": {"a": "x"}}, "m"), ({"m": [1]}, "m")]),
    Case(bare, [{"items": [1, "a"], "options": {"k": [1]}}],
         [({"items": {}, "options": {}}, "items")]),
    Case(any_param, [{}, {"v": [1, {"a": None}]}], []),
    Case(literal_str, [{}, {"mode": "slow"}], [({"mode": "medium"}, "mode")]),
    Case(literal_int, [{"level": 2}], [({"level": 4}, "level"), ({"level": "2"}, "level")]),
    Case(literal_mixed, [{"v": "a"}, {"v": 1}, {"v": None}], [({"v": "b"}, "v")]),
    Case(enum_str, [{"color": "red"}], [({"color": "green"}, "color"), ({}, "color")]),
    Case(enum_int, [{}, {"level": 2}], [({"level": 3}, "level")]),
    Case(model, [{"point": {"x": 1}}, {"point": {"x": 1.5, "y": 2}}],
         [({"point": {"y": 1}}, "point"), ({"point": {"x": 1, "y": -1}}, "point")]),
    Case(nested_model,
         [{"shape": {"name": "s"}},
          {"shape": {"name": "t", "points": [{"x": 1}], "anchor": {"x": 2}, "color": "blue"}}],
         [({"shape": {"name": ""}}, "shape"), ({"shape": {"name": "s", "points": [{}]}}, "shape"),
          ({"shape": {"name": "s", "color": "green"}}, "shape")]),
    Case(dataclass_param, [{"item": {"sku": "a"}}, {"item": {"sku": "b", "quantity": 2,
                                                              "tags": ["x"]}}],
         [({"item": {"quantity": 1}}, "item"),
          ({"item": {"sku": "a", "quantity": "many"}}, "item")]),
    Case(typeddict_param, [{"movie": {"title": "A", "year": 1999}},
                           {"movie": {"title": "B", "year": 2000, "rating": 8}}],
         [({"movie": {"title": "A"}}, "movie"),
          ({"movie": {"title": "A", "year": "new"}}, "movie")]),
    Case(tuple_param, [{"pair": [1, "a"]}],
         [({"pair": [1]}, "pair"), ({"pair": [1, "a", 2]}, "pair")]),
    Case(tuple_var, [{"nums": []}, {"nums": [1, 2, 3]}], [({"nums": [1, "x"]}, "nums")]),
    Case(set_param, [{"ids": [1, 2]}], [({"ids": ["x"]}, "ids")]),
    Case(annotated_text, [{"name": "abc"}],
         [({"name": "a"}, "name"), ({"name": "abcdef"}, "name"), ({"name": "ABC"}, "name")]),
    Case(annotated_numbers, [{"n": 0}, {"n": 10, "f": 0.25, "label": "z"}],
         [({"n": -1}, "n"), ({"n": 11}, "n"), ({"n": 1, "f": 1}, "f"), ({"n": 1, "f": 0}, "f")]),
    Case(field_default, [{}, {"limit": 100}], [({"limit": 0}, "limit"), ({"limit": 101}, "limit")]),
    Case(list_bounds, [{"items": [1]}, {"items": [1, 2, 3]}],
         [({"items": []}, "items"), ({"items": [1, 2, 3, 4]}, "items")]),
    Case(times, [{"when": "2024-05-01T12:00:00Z"}, {"when": "2024-05-01T12:00:00+02:00",
                                                    "day": "2024-05-02"}],
         [({"when": "yesterday"}, "when"),
          ({"when": "2024-05-01T12:00:00Z", "day": "May 2"}, "day")]),
    Case(ids_and_money, [{"ident": "12345678-1234-5678-1234-567812345678", "amount": "1.10"},
                         {"ident": "12345678-1234-5678-1234-567812345678", "amount": 2.5}],
         [({"ident": "nope", "amount": 1}, "ident")]),
    Case(model_map, [{"points": {}}, {"points": {"a": {"x": 1}}}],
         [({"points": {"a": {}}}, "points")]),
    Case(optional_model, [{}, {"point": None}, {"point": {"x": 3}}], [({"point": 5}, "point")]),
    Case(model_union, [{"shape": {"x": 1}}, {"shape": {"center": {"x": 0}, "radius": 2}}],
         [({"shape": {"radius": 1}}, "shape")]),
    Case(literal_list, [{"modes": ["a", "b", "a"]}], [({"modes": ["c"]}, "modes")]),
    Case(nested_plain, [{"table": {"a": [1, 2]}}], [({"table": {"a": ["x"]}}, "table")]),
    Case(reserved_names, [{"schema": "s"}, {"schema": "s", "json": "k", "copy": 2}],
         [({"json": "k"}, "schema")]),
    Case(bytes_param, [{"data": "abc"}], [({"data": 5}, "data")]),
    Case(model_list, [{"points": [{"x": 1}, {"x": 2, "y": 3}]}],
         [({"points": [{"y": 1}]}, "points")]),
]  # fmt: skip


def docstring_google(query: str, limit: int = 10, exact: bool = False) -> list[str]:
    """Search the notes.

    Args:
        query: words to look for; continuation
            lines are joined.
        limit (int): at most this many hits.
        exact: match whole words only.

    Returns:
        The matching note ids.
    """
    _seen(locals())
    return [query] * min(limit, 1)


def docstring_numpy(color: Color, point: Point | None = None) -> str:
    """Paint a point.

    Parameters
    ----------
    color : Color
        the paint colour.
    point : Point, optional
        where to paint; the origin when missing.
    """
    _seen(locals())
    return color.value


def docstring_sphinx(
    text: str, width: Annotated[int, Field(ge=1, description="from Field")] = 80
) -> str:
    """Wrap text.

    :param text: the text to wrap
    :param width: ignored: Field's description wins
    """
    _seen(locals())
    return text[:width]


DOCSTRING_CASES = [docstring_google, docstring_numpy, docstring_sphinx]
