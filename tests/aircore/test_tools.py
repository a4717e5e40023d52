"""define_tool / @server.tool / resources / prompts: definitions and in-process calls."""

from __future__ import annotations

from typing import Any

import pytest

from aircore import (
    DefinitionError,
    ToolContext,
    define_prompt,
    define_resource,
    define_server,
    define_tool,
)
from aircore.tool import tool_from_function


def test_tool_listing_carries_annotations_title_meta_and_output_schema() -> None:
    tool = define_tool(
        "get_user",
        description="Look up",
        title="Get user",
        params={"user_id": "string"},
        output_schema={"name": "string", "age": "number?"},
        annotations={"title": "Get", "readOnlyHint": True, "openWorldHint": False},
        meta={"vendor/x": 1},
        layer="L2",
        tags=["users"],
        handler=lambda p: None,
    )
    assert tool.layer == 2
    assert tool.tags == ("users",)
    assert tool.describe() == {
        "name": "get_user",
        "title": "Get user",
        "description": "Look up",
        "inputSchema": {
            "type": "object",
            "properties": {"user_id": {"type": "string"}},
            "required": ["user_id"],
        },
        "outputSchema": {
            "type": "object",
            "properties": {"name": {"type": "string"}, "age": {"type": "number"}},
            "required": ["name"],
        },
        "annotations": {"title": "Get", "readOnlyHint": True, "openWorldHint": False},
        "_meta": {"vendor/x": 1},
    }


@pytest.mark.parametrize("name", ["", "has space", "x" * 129, "semi;colon", "add\n"])
def test_bad_tool_names_are_rejected(name: str) -> None:
    """``add\n`` passed a ``re.match`` ending in ``$`` (it matches before a final newline)."""
    with pytest.raises(DefinitionError):
        define_tool(name, handler=lambda p: None)
    with pytest.raises(DefinitionError):
        tool_from_function(lambda: None, name=name)


def test_unknown_annotation_and_bad_layer_are_rejected() -> None:
    with pytest.raises(DefinitionError, match="annotation"):
        define_tool("t", handler=lambda p: None, annotations={"readonly": True})
    with pytest.raises(DefinitionError, match="layer"):
        define_tool("t", handler=lambda p: None, layer=8)


async def test_structured_output_is_validated_and_also_sent_as_text() -> None:
    good = define_tool("good", output_schema={"n": "integer"}, handler=lambda p: {"n": 1})
    bad = define_tool("bad", output_schema={"n": "integer"}, handler=lambda p: {"n": "one"})
    server = define_server(name="s", tools=[good, bad])
    async with server:
        ok = await server.call_tool("good", {})
        wrong = await server.call_tool("bad", {})
    assert ok == {
        "content": [{"type": "text", "text": '{\n  "n": 1\n}'}],
        "structuredContent": {"n": 1},
    }
    assert wrong["isError"] is True
    assert "outputSchema" in wrong["content"][0]["text"]
    assert "n:" in wrong["content"][0]["text"]


async def test_extra_arguments_pass_through_to_the_handler() -> None:
    seen: dict[str, Any] = {}
    tool = define_tool("t", params={"a": "string"}, handler=lambda p: seen.update(p))
    server = define_server(name="s", tools=[tool])
    async with server:
        await server.call_tool("t", {"a": "x", "extra": 1})
    assert seen == {"a": "x", "extra": 1}


async def test_decorator_derives_params_from_type_hints_and_injects_context() -> None:
    server = define_server(name="s")

    @server.tool(description="Greet", layer=1)
    async def greet(
        name: str, ctx: ToolContext, excited: bool = False, times: int | None = None
    ) -> str:
        return f"{ctx.server_name}:{name}{'!' if excited else ''}{times or ''}"

    @server.tool
    def add(a: int, b: float) -> float:
        """Add two numbers."""
        return a + b

    listing = {t["name"]: t for t in server.tool_listing()}
    assert listing["greet"]["inputSchema"] == {
        "type": "object",
        "properties": {
            "name": {"type": "string"},
            "excited": {"type": "boolean", "default": False},
            "times": {"anyOf": [{"type": "integer"}, {"type": "null"}], "default": None},
        },
        "required": ["name"],
    }
    assert listing["add"]["description"] == "Add two numbers."
    async with server:
        assert (await server.call_tool("greet", {"name": "Al", "excited": True}))["content"][0][
            "text"
        ] == "s:Al!"
        assert (await server.call_tool("add", {"a": 1, "b": 2.5}))["content"][0]["text"] == "3.5"
        explicit_null = await server.call_tool("greet", {"name": "Al", "times": None})
        assert explicit_null["content"][0]["text"] == "s:Al"
        bad = await server.call_tool("add", {"a": "1"})
    assert bad["isError"]
    assert "a: must be integer" in bad["content"][0]["text"]
    assert "b: required field is missing" in bad["content"][0]["text"]


def test_duplicate_registrations_are_rejected() -> None:
    t = define_tool("t", handler=lambda p: None)
    with pytest.raises(DefinitionError):
        define_server(name="s", tools=[t, define_tool("t", handler=lambda p: None)])
    r = define_resource("a://b", handler=lambda uri: "x")
    with pytest.raises(DefinitionError):
        define_server(name="s", resources=[r, r])


async def test_resources_templates_and_prompts_are_listed_read_and_rendered() -> None:
    server = define_server(
        name="s",
        resources=[
            define_resource(
                "config://app",
                name="config",
                mime_type="application/json",
                handler=lambda uri: {"debug": True},
            ),
            define_resource(
                "users://{user_id}/avatar",
                name="avatar",
                mime_type="image/png",
                handler=lambda uri, v: v["user_id"].encode(),
            ),
        ],
        prompts=[
            define_prompt(
                "hello",
                description="Say hi",
                arguments={"who": "name"},
                handler=lambda a: [f"hi {a['who']}", {"role": "assistant", "content": "hello!"}],
            )
        ],
    )
    async with server:
        listed = await server.handle_message(
            {"jsonrpc": "2.0", "id": 1, "method": "resources/list"}
        )
        templates = await server.handle_message(
            {"jsonrpc": "2.0", "id": 2, "method": "resources/templates/list"}
        )
        read = await server.handle_message(
            {
                "jsonrpc": "2.0",
                "id": 3,
                "method": "resources/read",
                "params": {"uri": "users://u7/avatar"},
            }
        )
        config = await server.handle_message(
            {
                "jsonrpc": "2.0",
                "id": 4,
                "method": "resources/read",
                "params": {"uri": "config://app"},
            }
        )
        missing = await server.handle_message(
            {"jsonrpc": "2.0", "id": 5, "method": "resources/read", "params": {"uri": "nope://x"}}
        )
        prompt = await server.handle_message(
            {
                "jsonrpc": "2.0",
                "id": 6,
                "method": "prompts/get",
                "params": {"name": "hello", "arguments": {"who": "Ann"}},
            }
        )
        no_arg = await server.handle_message(
            {"jsonrpc": "2.0", "id": 7, "method": "prompts/get", "params": {"name": "hello"}}
        )
    assert listed
    assert listed["result"]["resources"] == [
        {"uri": "config://app", "name": "config", "mimeType": "application/json"}
    ]
    assert templates
    assert templates["result"]["resourceTemplates"][0]["uriTemplate"] == (
        "users://{user_id}/avatar"
    )
    assert read
    assert read["result"]["contents"] == [
        {"uri": "users://u7/avatar", "mimeType": "image/png", "blob": "dTc="}
    ]
    assert config
    assert config["result"]["contents"][0]["text"] == '{\n  "debug": true\n}'
    assert missing
    assert missing["error"]["code"] == -32602
    assert prompt
    assert prompt["result"]["messages"] == [
        {"role": "user", "content": {"type": "text", "text": "hi Ann"}},
        {"role": "assistant", "content": {"type": "text", "text": "hello!"}},
    ]
    assert no_arg
    assert no_arg["error"]["code"] == -32602
    assert "who" in no_arg["error"]["message"]


def _typed(a: int, b: int) -> int:
    return a + b


def _typed_list(items: list[str]) -> int:
    return len(items)


def _params_and_ctx(params: dict[str, Any], ctx: Any) -> int:
    return 1


@pytest.mark.parametrize("handler", [_typed, _typed_list])
def test_define_tool_refuses_a_typed_signature_and_names_the_decorator(handler: Any) -> None:
    # a FastMCP-style function handed to define_tool would fail at every call
    with pytest.raises(DefinitionError, match=r"@server.tool"):
        define_tool("t", handler=handler)


def test_define_tool_still_takes_a_params_handler_with_annotations() -> None:
    assert define_tool("t", handler=_params_and_ctx).name == "t"
