"""The ``_meta`` keys: the standard's camelCase names, older snake_case names still readable,
and ``register`` as a gateway reads it."""

from __future__ import annotations

from pathlib import Path

from aircore.definitions import (
    is_registered,
    load_definitions,
    meta_value,
    render_tool,
)
from aircore.definitions.meta import META_CATEGORY_KEY, META_OWNER_ORG, META_REGISTER
from tests.aircore.definitions.fixtures import clean_definition, write_definition


def test_register_reaches_meta_and_a_draft_is_not_registered(tmp_path: Path) -> None:
    write_definition(tmp_path, clean_definition("search_documents"))
    draft = clean_definition("archive_documents")
    draft["register"] = False
    write_definition(tmp_path, draft)
    defs = load_definitions(tmp_path)

    approved = render_tool(defs["search_documents"])
    drafted = render_tool(defs["archive_documents"])

    assert approved["_meta"][META_REGISTER] is True
    assert drafted["_meta"][META_REGISTER] is False
    assert is_registered(approved)
    assert not is_registered(drafted)


def test_a_tool_without_definition_metadata_is_registered() -> None:
    assert is_registered({"name": "plain_tool", "inputSchema": {"type": "object"}})
    assert is_registered({"name": "plain_tool", "_meta": {"register": "no"}})  # only false counts
    assert is_registered({"name": "plain_tool", "_meta": None})


def test_meta_value_reads_the_standard_name_then_the_older_one() -> None:
    assert meta_value({"categoryKey": "docs", "category_key": "old"}, META_CATEGORY_KEY) == "docs"
    assert meta_value({"owner_org": "platform-team"}, META_OWNER_ORG) == "platform-team"
    assert meta_value({"version": "1.0"}, META_OWNER_ORG) is None
    assert meta_value(None, META_CATEGORY_KEY) is None
