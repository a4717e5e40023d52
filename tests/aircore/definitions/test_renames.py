"""The rename map (``renames.yml``): read strictly, proposals in the project's structure, and a
server that refuses to start on a map it cannot follow."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from aircore import define_server, define_tool
from aircore.definitions import ToolDefinitionError
from aircore.definitions.renames import load_renames, propose_name, write_renames
from tests.aircore.definitions.fixtures import clean_definition, write_definition


@pytest.mark.parametrize(
    ("name", "structure", "proposed"),
    [
        ("search_documents", "category_service_action", "docs_documents_search"),
        ("fetchPage", "category_service_action", "docs_page_fetch"),
        ("page_get", "action_object", "get_page"),
    ],
)
def test_a_proposal_follows_the_projects_name_structure(
    name: str, structure: str, proposed: str
) -> None:
    assert propose_name(name, "docs", structure=structure, prefixes={}) == proposed


def test_a_category_prefix_leads_the_proposal() -> None:
    assert propose_name("get_rate", "exchange", structure="category_service_action",
                        prefixes={"exchange": "smp"}) == "smp_rate_get"  # fmt: skip


@pytest.mark.parametrize(
    "entries",
    [
        {"a": "b", "b": "c"},  # a chain
        {"a": "a"},  # not a rename
        {"a": "no spaces allowed"},
        {"a": 3},
        ["a", "b"],
    ],
)
def test_a_map_that_is_not_old_to_new_names_is_refused(tmp_path: Path, entries: object) -> None:
    (tmp_path / "renames.yml").write_text(yaml.safe_dump({"renames": entries}), encoding="utf-8")
    with pytest.raises(ToolDefinitionError) as info:
        load_renames(tmp_path)
    assert info.value.problems[0].file.endswith("renames.yml")


def test_writing_keeps_earlier_entries(tmp_path: Path) -> None:
    assert load_renames(tmp_path) == {}
    write_renames(tmp_path, {"a": "x_a_get"})
    write_renames(tmp_path, {"b": "x_b_get"})
    assert load_renames(tmp_path) == {"a": "x_a_get", "b": "x_b_get"}


async def test_a_server_does_not_start_on_a_map_it_cannot_follow(tmp_path: Path) -> None:
    write_definition(tmp_path, clean_definition())
    (tmp_path / "renames.yml").write_text("renames: {a: b, b: c}\n", encoding="utf-8")
    server = define_server(name="notes", definitions=tmp_path, tools=[
        define_tool("search_documents", handler=lambda params: {"hits": []})])  # fmt: skip
    with pytest.raises(ToolDefinitionError, match="renames"):
        async with server:
            pass
