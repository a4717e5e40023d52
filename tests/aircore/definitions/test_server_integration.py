"""define_server(definitions=...): definitions applied at start, failures stop the start."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from aircore import AirServer, DefinitionError, ToolContext, define_server, define_tool
from aircore.definitions import (
    DefinitionNotFoundError,
    ToolDefinitionError,
    render_tool,
    tools_as_registered,
)
from aircore.definitions.loader import load_definitions
from tests.aircore.definitions.fixtures import clean_definition, write_definition


def _search(params: dict[str, Any]) -> dict[str, Any]:
    return {"hits": [params["query"]]}


def _server(root: Path, *tools: Any, **kwargs: Any) -> AirServer:
    return define_server(name="defs", tools=list(tools), definitions=root, **kwargs)


async def test_tools_list_exposes_exactly_the_definition_mapping(tmp_path: Path) -> None:
    write_definition(tmp_path, clean_definition())
    server = _server(tmp_path, define_tool("search_documents", handler=_search,
                                           params={"query": "string"}))  # fmt: skip
    async with server:
        (listed,) = server.tool_listing()
    expected = render_tool(load_definitions(tmp_path)["search_documents"])
    assert listed == expected


async def test_call_is_validated_against_the_definition_schema(tmp_path: Path) -> None:
    write_definition(tmp_path, clean_definition())
    server = _server(tmp_path, define_tool("search_documents", handler=_search,
                                           params={"query": "string"}))  # fmt: skip
    async with server:
        ok = await server.call_tool("search_documents", {"query": "tax", "limit": 2})
        extra = await server.call_tool("search_documents", {"query": "tax", "colour": "red"})
    assert ok.get("isError") is not True
    assert ok["structuredContent"] == {"hits": ["tax"]}
    assert extra["isError"] is True
    assert "colour" in extra["content"][0]["text"]


async def test_category_version_and_layer_reach_the_call_context(tmp_path: Path) -> None:
    data = clean_definition()
    data["layer"] = "L2"
    write_definition(tmp_path, data)
    seen: list[tuple[Any, Any, Any]] = []

    async def spy(ctx: ToolContext, call_next: Any) -> Any:
        meta = ctx.tool_meta or {}
        seen.append((meta.get("categoryKey"), meta.get("version"), ctx.layer))
        return await call_next(ctx)

    tool = define_tool("search_documents", handler=_search, layer=5)
    server = _server(tmp_path, tool, middleware=[spy])
    async with server:
        await server.call_tool("search_documents", {"query": "x"})
    assert seen == [("docs", "1.2.0", 2)]


async def test_schema_priority_explicit_then_definition_then_derived(tmp_path: Path) -> None:
    explicit = {
        "type": "object",
        "properties": {"text": {"type": "string", "description": "Explicit text."}},
        "required": ["text"],
        "additionalProperties": False,
    }
    write_definition(tmp_path, clean_definition("explicit_tool"))
    write_definition(tmp_path, clean_definition("shorthand_tool"))
    derived = clean_definition("derived_tool")
    derived["parameters_schema"] = None
    del derived["output_schema"]
    write_definition(tmp_path, derived)
    server = _server(
        tmp_path,
        define_tool("explicit_tool", handler=_search, params=explicit),
        define_tool("shorthand_tool", handler=_search, params={"query": "string"}),
    )

    server.add_tool(
        define_tool("derived_tool", handler=_search,
                    params={"query": {"type": "string", "description": "Derived."}})
    )  # fmt: skip

    async with server:
        listing = {t["name"]: t for t in server.tool_listing()}
    defined = clean_definition()["parameters_schema"]
    assert listing["explicit_tool"]["inputSchema"] == explicit
    assert listing["shorthand_tool"]["inputSchema"] == defined
    assert listing["derived_tool"]["inputSchema"] == {
        "type": "object",
        "properties": {"query": {"type": "string", "description": "Derived."}},
        "required": ["query"],
        "additionalProperties": False,
    }
    assert "outputSchema" not in listing["derived_tool"]


async def test_derived_schema_that_breaks_the_rules_fails_start(tmp_path: Path) -> None:
    derived = clean_definition("derived_tool")
    derived["parameters_schema"] = None
    write_definition(tmp_path, derived)
    server = _server(tmp_path)

    @server.tool
    def derived_tool(query: str) -> str:
        return query

    with pytest.raises(ToolDefinitionError) as info:
        await server.start()
    assert [(p.rule, p.field) for p in info.value.problems] == [
        ("input-description", "inputSchema (derived on the tool).properties.query.description")
    ]
    assert isinstance(info.value, DefinitionError)


async def test_handler_definition_name_mismatch_fails_start(tmp_path: Path) -> None:
    write_definition(tmp_path, clean_definition("find_documents"), stem="search_documents")
    server = _server(tmp_path, define_tool("search_documents", handler=_search))
    with pytest.raises(ToolDefinitionError) as info:
        async with server:
            pytest.fail("the server must not start")
    message = str(info.value)
    assert "server 'defs' cannot start" in message
    assert "handler registers 'search_documents' but the definition is named 'find_documents'" in (
        message
    )


async def test_tool_without_definition_fails_start(tmp_path: Path) -> None:
    write_definition(tmp_path, clean_definition())
    server = _server(
        tmp_path,
        define_tool("search_documents", handler=_search),
        define_tool("send_mail", handler=_search),
    )
    with pytest.raises(DefinitionNotFoundError) as info:
        await server.start()
    assert [(p.field, p.rule) for p in info.value.problems] == [("send_mail", "missing-definition")]


async def test_unused_definition_fails_start(tmp_path: Path) -> None:
    write_definition(tmp_path, clean_definition())
    write_definition(tmp_path, clean_definition("left_over"))
    server = _server(tmp_path, define_tool("search_documents", handler=_search))
    with pytest.raises(ToolDefinitionError) as info:
        await server.start()
    assert [p.rule for p in info.value.problems] == ["unused-definition"]


async def test_missing_definitions_directory_fails_start(tmp_path: Path) -> None:
    server = _server(tmp_path / "absent", define_tool("search_documents", handler=_search))
    with pytest.raises(ToolDefinitionError) as info:
        await server.start()
    assert info.value.problems[0].rule == "directory"


async def test_timeout_ms_from_the_definition_is_enforced(tmp_path: Path) -> None:
    data = clean_definition()
    data["timeout_ms"] = 50
    write_definition(tmp_path, data)
    never = asyncio.Event()

    async def hang(params: dict[str, Any]) -> str:
        await never.wait()
        return "unreachable"

    server = _server(tmp_path, define_tool("search_documents", handler=hang))
    async with server:
        result = await asyncio.wait_for(server.call_tool("search_documents", {"query": "x"}), 10)
    assert result["isError"] is True
    assert "timed out" in result["content"][0]["text"]


async def test_disabled_definition_keeps_the_tool_out(tmp_path: Path) -> None:
    write_definition(tmp_path, clean_definition())
    off = clean_definition("archive_documents")
    off["enabled"] = False
    write_definition(tmp_path, off)
    server = _server(
        tmp_path,
        define_tool("search_documents", handler=_search),
        define_tool("archive_documents", handler=_search),
    )
    for _ in range(2):  # a restart pairs the disabled tool with its definition again
        async with server:
            assert [t["name"] for t in server.tool_listing()] == ["search_documents"]
            assert "archive_documents" not in server.tools


async def test_the_tools_as_registered_include_the_disabled_ones_undefined(
    tmp_path: Path,
) -> None:
    write_definition(tmp_path, clean_definition())
    off = clean_definition("archive_documents")
    off["enabled"] = False
    write_definition(tmp_path, off)
    search = define_tool("search_documents", handler=_search)
    archive = define_tool("archive_documents", handler=_search)
    server = _server(tmp_path, search, archive)
    async with server:
        registered = tools_as_registered(server.plugins, server.tools)
        assert registered == {"search_documents": search, "archive_documents": archive}
        assert server.tools["search_documents"] is not search  # the definition applied
    plain = define_server(name="plain", tools=[search])
    assert tools_as_registered(plain.plugins, plain.tools) == {"search_documents": search}


async def test_tool_added_after_start_gets_its_definition(tmp_path: Path) -> None:
    write_definition(tmp_path, clean_definition())
    server = _server(tmp_path, define_tool("search_documents", handler=_search))
    async with server:
        write_definition(tmp_path, clean_definition("late_tool"))
        server.add_tool(define_tool("late_tool", handler=_search))
        listing = {t["name"]: t for t in server.tool_listing()}
        assert listing["late_tool"]["title"] == "Search documents"
        assert listing["late_tool"]["_meta"]["categoryKey"] == "docs"

        with pytest.raises(DefinitionNotFoundError):
            server.add_tool(define_tool("no_such_def", handler=_search))
        assert "no_such_def" not in server.tools


async def test_restart_binds_again_from_the_registered_tools(tmp_path: Path) -> None:
    data = clean_definition()
    data["timeout_ms"] = 60_000
    write_definition(tmp_path, data)
    server = _server(tmp_path, define_tool("search_documents", handler=_search))
    for _ in range(2):
        async with server:
            (listed,) = server.tool_listing()
            result = await server.call_tool("search_documents", {"query": "q"})
        assert listed == render_tool(load_definitions(tmp_path)["search_documents"])
        assert result["structuredContent"] == {"hits": ["q"]}
