from __future__ import annotations

from pathlib import Path

import pytest

from aircore.definitions import (
    ToolDefinition,
    ToolDefinitionError,
    load_definitions,
    read_definition_files,
)
from airmeter import Layer
from tests.aircore.definitions.fixtures import RELAXED_CONFIG, clean_definition, write_definition


def test_clean_directory_loads_typed_definitions_keyed_by_name(tmp_path: Path) -> None:
    write_definition(tmp_path, clean_definition("search_documents"))
    other = clean_definition("delete_document")
    other.update(read_only=False, destructive=True, idempotent=False, layer="L5", open_world=True,
                 category_key="admin")  # fmt: skip
    other["example_queries"] = [
        "remove the draft from yesterday",
        "delete doc 42",
        "drop that file",
    ]
    write_definition(tmp_path, other, category="admin")

    defs = load_definitions(tmp_path)

    assert list(defs) == ["delete_document", "search_documents"]
    search = defs["search_documents"]
    assert isinstance(search, ToolDefinition)
    assert search.version == "1.2.0"
    assert search.description.when_not_to_use.startswith("Fetching a page")
    assert search.example_queries[0] == "find my notes about the quarterly budget"
    assert search.tags == ("search", "docs")
    assert search.required_env_keys == ("DOCS_INDEX_PATH",)
    assert search.open_world is False
    assert search.layer is None
    assert search.source == tmp_path / "docs" / "search_documents.yml"
    assert defs["delete_document"].layer is Layer.L5
    assert defs["delete_document"].open_world is True


def test_definition_is_frozen_and_does_not_share_the_yaml_schema(tmp_path: Path) -> None:
    write_definition(tmp_path, clean_definition())
    first = load_definitions(tmp_path)["search_documents"]
    assert first.parameters_schema is not None
    first.parameters_schema["properties"]["query"]["type"] = "number"
    with pytest.raises(AttributeError):
        first.name = "x"  # type: ignore[misc]
    again = load_definitions(tmp_path)["search_documents"]
    assert again.parameters_schema is not None
    assert again.parameters_schema["properties"]["query"]["type"] == "string"


def test_missing_directory_is_a_typed_error_naming_it(tmp_path: Path) -> None:
    with pytest.raises(ToolDefinitionError) as info:
        load_definitions(tmp_path / "nope")
    assert info.value.problems[0].rule == "directory"
    assert "nope" in info.value.problems[0].file


def test_invalid_yaml_is_reported_with_its_line_and_other_files_still_checked(
    tmp_path: Path,
) -> None:
    bad = tmp_path / "docs" / "broken_tool.yml"
    bad.parent.mkdir(parents=True)
    bad.write_text("name: broken_tool\ndescription: [unclosed\n", encoding="utf-8")
    missing = clean_definition("other_tool")
    del missing["version"]
    write_definition(tmp_path, missing)

    with pytest.raises(ToolDefinitionError) as info:
        load_definitions(tmp_path)

    by_rule = {p.rule: p for p in info.value.problems}
    assert "line" in by_rule["yaml"].message
    assert by_rule["yaml"].file.endswith("broken_tool.yml")
    assert by_rule["required"].field == "version"
    assert "broken_tool.yml" in str(info.value)


def test_non_mapping_and_empty_files_are_problems_not_crashes(tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "listy.yml").write_text("- 1\n- 2\n", encoding="utf-8")
    (tmp_path / "a" / "empty.yaml").write_text("", encoding="utf-8")
    files = read_definition_files(tmp_path)
    assert [f.path.name for f in files] == ["empty.yaml", "listy.yml"]
    assert files[0].error is not None
    assert "empty" in files[0].error
    assert files[1].error is not None
    assert "list" in files[1].error


def test_config_file_and_hidden_directories_are_not_definitions(tmp_path: Path) -> None:
    write_definition(tmp_path, clean_definition())
    (tmp_path / "air-check.yml").write_text(
        "extra_banned_phrases: [awesome]\n" + RELAXED_CONFIG, encoding="utf-8"
    )
    hidden = tmp_path / ".cache" / "x.yml"
    hidden.parent.mkdir()
    hidden.write_text("junk: true\n", encoding="utf-8")
    assert [f.stem for f in read_definition_files(tmp_path)] == ["search_documents"]
    assert list(load_definitions(tmp_path)) == ["search_documents"]


def test_null_parameters_schema_means_derive_from_the_handler(tmp_path: Path) -> None:
    data = clean_definition()
    data["parameters_schema"] = None
    del data["output_schema"]
    write_definition(tmp_path, data)
    d = load_definitions(tmp_path)["search_documents"]
    assert d.parameters_schema is None
    assert d.output_schema is None
