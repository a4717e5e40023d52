"""Tools from type hints, compared live with the official SDK's ``MCPServer`` (and FastMCP for
docstring descriptions): the same function registered on both must publish the same input and
output schemas (types, enums, requiredness, constraints, descriptions), hand the function the
same typed arguments, refuse the same bad ones, and give the same ``structuredContent``.

Titles are left out of the comparison: pydantic makes them up from parameter names and aircore
drops those (they only repeat the name).
"""

from __future__ import annotations

import inspect
import re
from collections.abc import Callable
from typing import Any

import pytest
from fastmcp import FastMCP
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError

from aircore import AirServer, define_server
from tests.aircore import signature_cases as cases
from tests.aircore.signature_cases import CASES, DOCSTRING_CASES, SEEN, Case


def _untitled(schema: Any, *, in_properties: bool = False) -> Any:
    """The schema without ``title`` keywords (a property *named* title is kept)."""
    if isinstance(schema, dict):
        return {
            k: _untitled(v, in_properties=(k == "properties" and not in_properties))
            for k, v in schema.items()
            if in_properties or k != "title"
        }
    if isinstance(schema, list):
        return [_untitled(v) for v in schema]
    return schema


def _sdk(func: Callable[..., Any]) -> MCPServer:
    app = MCPServer("sdk")
    app.tool()(func)
    return app


def _ours(func: Callable[..., Any]) -> AirServer:
    server = define_server(name="air")
    server.tool(func)
    return server


async def _sdk_listing(func: Callable[..., Any]) -> Any:
    (tool,) = await _sdk(func).list_tools()
    return tool


def _our_listing(func: Callable[..., Any]) -> dict[str, Any]:
    (tool,) = _ours(func).tool_listing()
    return tool


def _name(case: Case | Callable[..., Any]) -> str:
    return case.func.__name__ if isinstance(case, Case) else case.__name__


def test_the_table_has_at_least_thirty_signatures() -> None:
    assert len(CASES) + len(DOCSTRING_CASES) >= 30
    assert sum(len(c.valid) for c in CASES) >= 60
    assert sum(len(c.invalid) for c in CASES) >= 50


@pytest.mark.parametrize("case", CASES, ids=_name)
async def test_input_schema_agrees_with_mcpserver(case: Case) -> None:
    sdk = await _sdk_listing(case.func)
    ours = _our_listing(case.func)
    assert _untitled(ours["inputSchema"]) == _untitled(sdk.input_schema)


@pytest.mark.parametrize("case", CASES, ids=_name)
async def test_output_schema_agrees_with_mcpserver(case: Case) -> None:
    sdk = await _sdk_listing(case.func)
    ours = _our_listing(case.func)
    expected = None if sdk.output_schema is None else _untitled(sdk.output_schema)
    got = ours.get("outputSchema")
    assert (None if got is None else _untitled(got)) == expected


def _same_value(a: Any, b: Any) -> bool:
    """Equal and of the same type, down through lists, dicts and models."""
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(_same_value(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)):
        return len(a) == len(b) and all(_same_value(x, y) for x, y in zip(a, b, strict=True))
    return bool(a == b)


@pytest.mark.parametrize("case", CASES, ids=_name)
async def test_arguments_arrive_typed_as_in_mcpserver(case: Case) -> None:
    sdk = _sdk(case.func)
    ours = _ours(case.func)
    async with ours:
        for arguments in case.valid:
            SEEN.clear()
            sdk_result = await sdk.call_tool(case.func.__name__, dict(arguments))
            our_result = await ours.call_tool(case.func.__name__, dict(arguments))
            assert not our_result.get("isError"), (arguments, our_result)
            assert len(SEEN) == 2, arguments
            sdk_seen, our_seen = SEEN
            assert sdk_seen.keys() == our_seen.keys()
            for name in sdk_seen:
                assert _same_value(our_seen[name], sdk_seen[name]), (name, our_seen, sdk_seen)
            assert our_result.get("structuredContent") == sdk_result.structured_content


@pytest.mark.parametrize("case", CASES, ids=_name)
async def test_invalid_arguments_are_refused_as_by_mcpserver_naming_the_field(case: Case) -> None:
    sdk = _sdk(case.func)
    ours = _ours(case.func)
    async with ours:
        for arguments, field in case.invalid:
            SEEN.clear()
            with pytest.raises(ToolError):
                await sdk.call_tool(case.func.__name__, dict(arguments))
            result = await ours.call_tool(case.func.__name__, dict(arguments))
            assert result.get("isError") is True, arguments
            text = result["content"][0]["text"]
            assert text.startswith("[-32602] Invalid arguments for tool"), text
            assert re.search(rf"\b{field}\b", text), (field, text)
            assert SEEN == [], "a refused call never reaches the function"


def _words(text: str | None) -> str:
    return " ".join((text or "").split())


@pytest.mark.parametrize("func", DOCSTRING_CASES, ids=_name)
async def test_docstring_descriptions_agree_with_fastmcp_and_the_rest_with_mcpserver(
    func: Callable[..., Any],
) -> None:
    app = FastMCP("fast")
    app.tool(func)
    (fast,) = await app.list_tools()
    ours = _our_listing(func)["inputSchema"]
    for name, prop in fast.parameters["properties"].items():
        assert _words(ours["properties"][name].get("description")) == _words(
            prop.get("description")
        ), name
    # MCPServer does not read docstrings: without those descriptions, the schemas are equal
    sdk = await _sdk_listing(func)
    documented = inspect.getdoc(func) or ""
    stripped = _untitled(ours)
    for name, prop in stripped["properties"].items():
        if name in documented and "description" in prop:
            sdk_prop = sdk.input_schema["properties"][name]
            if "description" not in sdk_prop:
                del prop["description"]
    assert stripped == _untitled(sdk.input_schema)


async def test_the_description_keeps_everything_but_the_parameter_section() -> None:
    tool = _our_listing(cases.docstring_google)
    assert tool["description"] == "Search the notes.\n\nReturns:\n    The matching note ids."
