"""The Tool Index: stable names, first-listed wins, conflicts reported, drafts left out."""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from airgateway.config import ServerConfig
from airgateway.index import Listing, ToolIndex


def _server(name: str, prefix: str | None = None, drafts: bool = False) -> ServerConfig:
    return ServerConfig(
        name=name, transport="http", url=f"http://{name}/mcp", prefix=prefix, include_drafts=drafts
    )


def _tools(*names: str, **extra: Any) -> Listing:
    return Listing(
        tools=tuple({"name": n, "inputSchema": {"type": "object"}, **extra} for n in names)
    )


def test_the_first_listed_server_keeps_a_shared_name_and_the_conflict_is_reported() -> None:
    index = ToolIndex([_server("a"), _server("b")])
    index.update("b", _tools("search", "only_b"))
    index.update("a", _tools("search"))
    assert [t["name"] for t in index.tools()] == ["search", "only_b"]
    entry = index.tool("search")
    assert entry is not None
    assert entry.server == "a"
    assert [(c.name, c.kept, c.dropped) for c in index.conflicts] == [("search", "a", "b")]


def test_a_prefix_resolves_the_conflict() -> None:
    index = ToolIndex([_server("a"), _server("b", prefix="b")])
    index.update("a", _tools("search"))
    index.update("b", _tools("search"))
    assert [t["name"] for t in index.tools()] == ["search", "b__search"]
    assert index.conflicts == []
    entry = index.tool("b__search")
    assert entry is not None
    assert entry.upstream_name == "search"


def test_metadata_is_passed_on_unchanged() -> None:
    tool = {"name": "t", "title": "T", "description": "d", "inputSchema": {"type": "object"},
            "outputSchema": {"type": "object"}, "annotations": {"readOnlyHint": True},
            "_meta": {"version": "1"}}  # fmt: skip
    index = ToolIndex([_server("a")])
    index.update("a", Listing(tools=(tool,)))
    assert index.tools() == [tool]
    entry = index.tool("t")
    assert entry is not None
    assert entry.retry_safe


def test_drafts_stay_out_unless_the_server_includes_them() -> None:
    draft = {"name": "d", "_meta": {"register": False}}
    index = ToolIndex([_server("a"), _server("b", prefix="b", drafts=True)])
    index.update("a", Listing(tools=(draft,)))
    index.update("b", Listing(tools=(draft,)))
    assert [t["name"] for t in index.tools()] == ["b__d"]


def test_update_says_whether_clients_see_a_change() -> None:
    index = ToolIndex([_server("a")])
    assert index.update("a", _tools("x")) is True
    assert index.update("a", _tools("x")) is False
    assert index.update("a", _tools("x", "y")) is True


names = st.lists(st.sampled_from(["a", "b", "c", "d", "e"]), max_size=5, unique=True)


@given(first=names, later=st.lists(names, max_size=4))
def test_adding_a_server_never_renames_or_moves_an_existing_tool(
    first: list[str], later: list[list[str]]
) -> None:
    servers = [_server("s0")] + [_server(f"s{i + 1}") for i in range(len(later))]
    index = ToolIndex(servers)
    index.update("s0", _tools(*first))
    before = {t["name"]: index.tool(t["name"]) for t in index.tools()}
    for i, tools in enumerate(later):
        index.update(f"s{i + 1}", _tools(*tools))
    for name, entry in before.items():
        assert index.tool(name) == entry
