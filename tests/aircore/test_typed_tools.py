"""Typed tools beyond the SDK table: where aircore differs from MCPServer on purpose, the lazy
pydantic import, conversion inside the middleware onion, structured returns, fuzzed arguments."""

from __future__ import annotations

import dataclasses
import subprocess
import sys
import textwrap
from typing import Annotated, Any

import orjson
import pytest
import typing_extensions
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from mcp.server.mcpserver import MCPServer
from pydantic import BaseModel, Field, field_validator
from typing_extensions import TypedDict

from aircore import DefinitionError, ToolContext, cache_plugin, define_server
from airmeter import MemorySink, create_meter_hook
from tests.aircore.conftest import ROOT
from tests.aircore.signature_cases import Color, Point, Shape

WAIT = 30.0


class Order(BaseModel):
    sku: str = Field(min_length=1)
    quantity: int = Field(1, ge=1)

    @field_validator("sku")
    @classmethod
    def no_spaces(cls, value: str) -> str:
        if " " in value:
            raise ValueError("sku has no spaces")
        return value


@dataclasses.dataclass
class Receipt:
    order: Order
    total: float


class Summary(TypedDict):
    count: int
    names: list[str]


@pytest.mark.parametrize(
    ("arguments", "sdk_gets"),
    [
        ({"n": "5"}, 5),  # a numeric string
        ({"n": True}, 1),  # a boolean
    ],
)
async def test_aircore_refuses_what_its_schema_refuses_where_mcpserver_coerces(
    arguments: dict[str, Any], sdk_gets: Any
) -> None:
    """MCPServer validates in pydantic's lax mode; aircore holds clients to the published
    schema (``{"type": "integer"}``) and says why, so the model can correct its call."""
    seen: list[Any] = []

    def count(n: int) -> int:
        seen.append(n)
        return n

    sdk = MCPServer("sdk")
    sdk.tool()(count)
    await sdk.call_tool("count", dict(arguments))
    assert seen == [sdk_gets]
    server = define_server(name="air")
    server.tool(count)
    async with server:
        result = await server.call_tool("count", dict(arguments))
    assert result["isError"] is True
    assert "n: must be integer" in result["content"][0]["text"]


async def test_a_json_encoded_list_is_refused_while_mcpserver_parses_it() -> None:
    def tags(t: list[str]) -> int:
        return len(t)

    sdk = MCPServer("sdk")
    sdk.tool()(tags)
    assert (await sdk.call_tool("tags", {"t": '["a", "b"]'})).structured_content == {"result": 2}
    server = define_server(name="air")
    server.tool(tags)
    async with server:
        result = await server.call_tool("tags", {"t": '["a", "b"]'})
    assert result["isError"] is True
    assert "t: must be array" in result["content"][0]["text"]


async def test_an_unannotated_parameter_is_published_as_any_json_not_as_a_string() -> None:
    def echo(v):  # type: ignore[no-untyped-def]
        return repr(v)

    sdk = MCPServer("sdk")
    sdk.tool()(echo)
    (sdk_tool,) = await sdk.list_tools()
    assert sdk_tool.input_schema["properties"]["v"]["type"] == "string"  # yet it takes 5
    server = define_server(name="air")
    server.tool(echo)
    assert server.tool_listing()[0]["inputSchema"]["properties"]["v"] == {}
    async with server:
        assert (await server.call_tool("echo", {"v": 5}))["content"][0]["text"] == "5"


async def test_dict_of_any_and_any_returns_keep_the_seed_shapes_without_an_output_schema() -> None:
    server = define_server(name="air")

    @server.tool
    def picture() -> dict[str, Any]:
        return {"image": "aGk=", "mimeType": "image/png"}

    sdk = MCPServer("sdk")
    sdk.tool()(picture.handler)
    (sdk_tool,) = await sdk.list_tools()
    assert sdk_tool.output_schema is not None  # MCPServer publishes {"type": "object", …}
    assert "outputSchema" not in server.tool_listing()[0]
    async with server:
        result = await server.call_tool("picture", {})
    assert result == {"content": [{"type": "image", "data": "aGk=", "mimeType": "image/png"}]}


def test_a_plain_typed_server_never_imports_pydantic() -> None:
    script = textwrap.dedent(
        """
        import asyncio, sys
        from typing import Literal
        from aircore import ToolContext, define_server, define_tool

        server = define_server(name="plain", tools=[
            define_tool("echo", params={"text": "string", "n": int | None},
                        handler=lambda p: p["text"])])

        @server.tool
        def search(query: str, limit: int = 10, ratio: float | None = None,
                   mode: Literal["a", "b"] = "a", tags: list[str] | None = None,
                   weights: dict[str, float] | None = None, ctx: ToolContext | None = None,
                   ) -> list[str]:
            '''Search.

            Args:
                query: words.
            '''
            return [query] * limit

        async def main():
            async with server:
                result = await server.call_tool("search", {"query": "q", "limit": 2.0,
                                                           "weights": {"a": 1}})
                assert result["structuredContent"] == {"result": ["q", "q"]}, result
                await server.call_tool("echo", {"text": "t"})

        asyncio.run(main())
        print(sorted(m for m in sys.modules if m.split(".")[0] in ("pydantic", "pydantic_core")))
        """
    )
    out = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        timeout=WAIT,
        cwd=ROOT,
        check=True,
    )
    assert out.stdout.strip() == "[]"


async def test_arguments_replaced_by_a_middleware_are_converted_again() -> None:
    seen: list[Any] = []

    async def pick_blue(ctx: ToolContext, call_next: Any) -> Any:
        if ctx.arguments.get("color") == "red":
            ctx.arguments = {**ctx.arguments, "color": "blue"}
        if ctx.arguments.get("color") == "green":
            ctx.arguments = {**ctx.arguments, "color": "purple"}  # invalid after validation
        return await call_next(ctx)

    server = define_server(name="air", middleware=[pick_blue])

    @server.tool
    def paint(color: Color, at: Point) -> str:
        seen.append((color, at))
        return color.value

    async with server:
        ok = await server.call_tool("paint", {"color": "red", "at": {"x": 1}})
        kept = await server.call_tool("paint", {"color": "blue", "at": {"x": 2}})
        bad = await server.call_tool("paint", {"color": "green", "at": {"x": 3}})
    assert ok["structuredContent"] == {"result": "blue"}
    assert kept["structuredContent"] == {"result": "blue"}
    assert seen == [(Color.BLUE, Point(x=1)), (Color.BLUE, Point(x=2))]
    assert bad["isError"] is True
    assert bad["content"][0]["text"].startswith("[-32602] Invalid arguments for tool 'paint'")


async def test_a_refusal_found_only_by_pydantic_is_metered_as_invalid_params() -> None:
    sink = MemorySink()
    server = define_server(name="air", meter=create_meter_hook(sinks=[sink]))

    @server.tool
    def place(order: Order) -> Order:
        return order

    async with server:
        refused = await server.call_tool("place", {"order": {"sku": "two words"}})
        placed = await server.call_tool("place", {"order": {"sku": "A1", "quantity": 2}})
    assert refused["isError"] is True
    assert "order.sku: Value error, sku has no spaces" in refused["content"][0]["text"]
    assert placed["structuredContent"] == {"sku": "A1", "quantity": 2}
    records = await sink.wait_for(2, timeout=WAIT)
    assert [(r.ok, r.error_type) for r in records] == [(False, "-32602"), (True, None)]


async def test_returned_models_dataclasses_and_typeddicts_become_structured_content() -> None:
    server = define_server(name="air")

    @server.tool
    def receipt(order: Order) -> Receipt:
        return Receipt(order=order, total=order.quantity * 2.5)

    @server.tool
    def summary(shapes: list[Shape]) -> Summary:
        return {"count": len(shapes), "names": [s.name for s in shapes]}

    @server.tool
    def colors() -> list[Color]:
        return [Color.RED, Color.BLUE]

    listing = {t["name"]: t for t in server.tool_listing()}
    assert listing["receipt"]["outputSchema"]["required"] == ["order", "total"]
    assert listing["colors"]["outputSchema"]["properties"]["result"]["type"] == "array"
    async with server:
        r = await server.call_tool("receipt", {"order": {"sku": "A", "quantity": 2}})
        s = await server.call_tool("summary", {"shapes": [{"name": "a"}, {"name": "b"}]})
        c = await server.call_tool("colors", {})
    assert r["structuredContent"] == {"order": {"sku": "A", "quantity": 2}, "total": 5.0}
    assert orjson.loads(r["content"][0]["text"]) == r["structuredContent"]
    assert s["structuredContent"] == {"count": 2, "names": ["a", "b"]}
    assert c["structuredContent"] == {"result": ["red", "blue"]}


async def test_a_return_value_that_does_not_match_its_annotation_is_an_error_result() -> None:
    server = define_server(name="air")

    @server.tool
    def broken() -> Order:
        return {"sku": ""}  # type: ignore[return-value]

    @server.tool
    def wrong_plain() -> int:
        return "three"  # type: ignore[return-value]

    async with server:
        bad = await server.call_tool("broken", {})
        plain = await server.call_tool("wrong_plain", {})
    assert bad["isError"] is True
    assert "does not match its return annotation: sku:" in bad["content"][0]["text"]
    assert plain["isError"] is True
    assert "result: must be integer" in plain["content"][0]["text"]


async def test_a_cached_model_result_is_served_as_the_same_structured_content() -> None:
    calls: list[int] = []
    server = define_server(name="air", storage="memory://", use=[cache_plugin(60)])

    @server.tool
    def lookup(sku: str) -> Order:
        calls.append(1)
        return Order(sku=sku, quantity=3)

    async with server:
        first = await server.call_tool("lookup", {"sku": "A"})
        second = await server.call_tool("lookup", {"sku": "A"})
    assert first["structuredContent"] == {"sku": "A", "quantity": 3}
    assert second == first
    assert calls == [1]  # the model was cached as its JSON and validated again on the hit


async def test_structured_output_can_be_turned_off_or_required() -> None:
    server = define_server(name="air")

    @server.tool(structured_output=False)
    def plain(n: int) -> int:
        return n

    listing = {t["name"]: t for t in server.tool_listing()}
    assert "outputSchema" not in listing["plain"]
    with pytest.raises(DefinitionError, match="structured_output=True needs a return type"):

        @server.tool(structured_output=True)
        def nothing(n: int):  # type: ignore[no-untyped-def]
            return n

    with pytest.raises(DefinitionError, match="no JSON shape"):

        @server.tool(structured_output=True)
        def anything(n: int) -> dict[str, Any]:
            return {}


class Opaque:
    """A class pydantic has no schema for."""


def test_a_parameter_type_without_a_json_schema_is_refused_at_definition_by_name() -> None:
    server = define_server(name="air")
    with pytest.raises(DefinitionError, match=r"parameter 'thing': unsupported type"):

        @server.tool
        def use(count: int, thing: Opaque) -> str:
            return "x"


JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**70), 2**70) | st.floats() | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner,
                                                                 max_size=4),
    max_leaves=12,
)  # fmt: skip


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    arguments=st.dictionaries(
        st.sampled_from(["shape", "color", "when", "point", "extra"]) | st.text(max_size=5),
        JSON,
        max_size=5,
    )
)
async def test_any_json_arguments_get_a_result_or_a_clear_refusal_never_a_crash(
    arguments: dict[str, Any],
) -> None:
    server = define_server(name="fuzz")

    @server.tool
    def draw(shape: Shape, color: Color = Color.RED, point: Point | None = None) -> Shape:
        return shape

    async with server:
        result = await server.call_tool("draw", arguments)
    if result.get("isError"):
        assert result["content"][0]["text"].startswith("[-32602] Invalid arguments"), result
    else:
        assert result["structuredContent"]["name"] == arguments["shape"]["name"]


class _Line(BaseModel):
    sku: str
    qty: int = Field(ge=1)


async def test_a_refusal_inside_a_field_names_its_place_under_the_field() -> None:
    server = define_server(name="air")

    @server.tool
    def order(lines: list[_Line], notes: dict[str, list[str]]) -> int:
        return len(lines)

    async with server:
        bad = await server.call_tool(
            "order",
            {"lines": [{"sku": "a", "qty": 1}, {"sku": "b", "qty": 0}], "notes": {"x": ["ok", 3]}},
        )
    assert bad["content"][0]["text"] == (
        "[-32602] Invalid arguments for tool 'order': lines[1].qty: must be bigger than or "
        "equal to 1; notes.x[1]: must be string"
    )


async def test_a_parameter_named_ctx_with_a_json_type_is_an_argument() -> None:
    server = define_server(name="air")

    @server.tool
    def summarize(text: str, ctx: str = "") -> str:
        return f"{text}|{ctx}"

    @server.tool
    def who(ctx) -> str:  # type: ignore[no-untyped-def]  # unannotated: the context
        return str(ctx.tool_name)

    schemas = {t["name"]: t["inputSchema"] for t in server.tool_listing()}
    assert schemas["summarize"]["properties"]["ctx"] == {"default": "", "type": "string"}
    assert schemas["who"]["properties"] == {}
    async with server:
        summary = await server.call_tool("summarize", {"text": "t", "ctx": "about cats"})
        name = await server.call_tool("who", {})
    assert summary["structuredContent"] == {"result": "t|about cats"}
    assert name["structuredContent"] == {"result": "who"}


def test_two_context_parameters_are_a_definition_error() -> None:
    server = define_server(name="air")

    def both(x: int, first: ToolContext, second: ToolContext) -> int:
        return x

    with pytest.raises(DefinitionError, match="more than one context parameter"):
        server.tool(both)


async def test_positional_only_parameters_are_passed_by_position() -> None:
    """``def f(a, /, b)`` was published with a normal schema and then every call failed
    ("got some positional-only arguments passed as keyword arguments")."""
    server = define_server(name="posonly")

    @server.tool
    def scale(value: int, /, factor: int = 2) -> int:
        return value * factor

    @server.tool
    async def digits(a: int = 1, b: int = 2, /, c: int = 3) -> str:
        return f"{a}{b}{c}"

    @server.tool
    def greet(ctx: ToolContext, name: str, /) -> str:
        return f"{name} via {ctx.server_name}"

    async with server:
        scaled = await server.call_tool("scale", {"value": 4})
        scaled_by = await server.call_tool("scale", {"value": 4, "factor": 3})
        gap = await server.call_tool("digits", {"b": 5})  # a's default fills the gap
        none = await server.call_tool("digits", {})
        greeted = await server.call_tool("greet", {"name": "Ada"})
    assert scaled["structuredContent"] == {"result": 8}
    assert scaled_by["structuredContent"] == {"result": 12}
    assert gap["structuredContent"] == {"result": "153"}
    assert none["structuredContent"] == {"result": "123"}
    assert greeted["structuredContent"] == {"result": "Ada via posonly"}


async def test_a_plain_string_in_annotated_describes_the_parameter_as_in_fastmcp() -> None:
    server = define_server(name="described")

    @server.tool
    def search(
        query: Annotated[str, "what to look for"],
        limit: Annotated[int, "ignored: the Field says it", Field(description="most hits")] = 5,
        page: int = 1,
    ) -> str:
        """Search.

        Args:
            query: the docstring's words lose to Annotated's
            page: the page
        """
        return query

    async with server:
        listed = await server.handle_message(
            {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}
        )
    assert listed is not None
    props = listed["result"]["tools"][0]["inputSchema"]["properties"]
    assert props["query"]["description"] == "what to look for"
    assert props["limit"]["description"] == "most hits"
    assert props["page"]["description"] == "the page"


def _typeddict_tool(kind: Any) -> Any:
    """A tool taking and returning TypedDicts built from ``kind`` (typing's or
    typing_extensions'): a nested one in a list, a not-required key, a docstring."""
    actor = kind("Actor", {"name": str})
    film_type = kind(
        "Film",
        {"title": str, "cast": list[actor], "rating": typing_extensions.NotRequired[float]},
    )
    film_type.__doc__ = "A film and its cast."

    def film(wanted: Any) -> Any:
        return {"title": wanted["title"].upper(), "cast": wanted["cast"]}

    film.__annotations__ = {"wanted": film_type, "return": film_type}
    return film


async def test_a_typing_typeddict_serves_as_the_typing_extensions_one_does() -> None:
    """Python 3.11's ``typing.TypedDict`` (which pydantic refuses there) gets the schema and the
    behaviour ``typing_extensions.TypedDict`` gets, as it does on 3.12."""
    import typing

    server = define_server(name="std")
    server.tool(_typeddict_tool(typing.TypedDict))
    reference = define_server(name="ext")
    reference.tool(_typeddict_tool(typing_extensions.TypedDict))
    ours, theirs = server.tools["film"], reference.tools["film"]
    assert ours.input_schema == theirs.input_schema
    assert ours.output_schema == theirs.output_schema
    assert ours.output_schema is not None
    assert ours.output_schema["description"] == "A film and its cast."
    assert ours.output_schema["required"] == ["title", "cast"]
    async with server:
        good = await server.call_tool("film", {"wanted": {"title": "m", "cast": [{"name": "x"}]}})
        bad = await server.call_tool("film", {"wanted": {"title": "m", "cast": [{}]}})
    assert good["structuredContent"] == {"title": "M", "cast": [{"name": "x"}]}
    assert bad["isError"] is True
    assert "wanted.cast[0]: must contain ['name']" in bad["content"][0]["text"]
