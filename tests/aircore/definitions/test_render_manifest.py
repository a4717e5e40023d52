from __future__ import annotations

from pathlib import Path

import orjson
import pytest

from aircore.definitions import (
    ToolDefinition,
    ToolDefinitionError,
    build_manifest,
    dump_manifest,
    load_definitions,
    manifest_from_definitions,
    meta_value,
    render_description,
    render_meta,
    render_tool,
)
from aircore.definitions.meta import META_LEGACY_INTERFACE_ID
from tests.aircore.definitions.fixtures import clean_definition, write_definition


def load_definitions_one(tmp_path: Path, **changes: object) -> ToolDefinition:
    data = clean_definition()
    data.update(changes)
    write_definition(tmp_path, data)
    return load_definitions(tmp_path)["search_documents"]


def test_description_joins_the_four_parts_in_order(tmp_path: Path) -> None:
    d = load_definitions_one(tmp_path)
    assert render_description(d) == (
        "Finds documents in the local index whose text matches a query.\n\n"
        "When to use: The user asks for documents, notes or pages about a topic.\n\n"
        "When not to use: Fetching a page from the web: use fetch_page instead.\n\n"
        "Input/output: Returns at most 50 titles with ids; the query is 1-200 characters."
    )


def test_tool_mapping_title_hints_schemas_and_meta(tmp_path: Path) -> None:
    d = load_definitions_one(tmp_path, layer=2)
    tool = render_tool(d)
    assert list(tool) == [
        "name", "title", "description", "inputSchema", "outputSchema", "annotations", "_meta",
    ]  # fmt: skip
    assert tool["name"] == "search_documents"
    assert tool["title"] == "Search documents"
    assert tool["annotations"] == {
        "title": "Search documents",
        "readOnlyHint": True,
        "destructiveHint": False,
        "idempotentHint": True,
        "openWorldHint": False,
    }
    assert tool["inputSchema"] == clean_definition()["parameters_schema"]
    assert tool["outputSchema"] == clean_definition()["output_schema"]
    assert tool["_meta"] == {
        "version": "1.2.0",
        "categoryKey": "docs",
        "exampleQueries": clean_definition()["example_queries"],
        "displayDescription": "Full-text search over the document index.",
        "tags": ["search", "docs"],
        "legacyInterfaceId": "EIMS-DOC-0042",
        "requiredEnvKeys": ["DOCS_INDEX_PATH"],
        "ownerOrg": "platform-team",
        "timeoutMillis": None,
        "enabled": True,
        "register": True,
        "layer": "L2",
    }
    # operational metadata costs the model no tokens: none of it is in the description
    for query in d.example_queries:
        assert query not in tool["description"]
    assert "EIMS-DOC-0042" not in tool["description"]
    assert "platform-team" not in tool["description"]


def test_meta_omits_optional_fields_that_are_not_set(tmp_path: Path) -> None:
    data = clean_definition()
    for key in ("tags", "legacy_interface_id", "required_env_keys", "owner_org", "output_schema"):
        del data[key]
    data["open_world"] = True
    write_definition(tmp_path, data)
    d = load_definitions(tmp_path)["search_documents"]
    assert set(render_meta(d)) == {
        "version", "categoryKey", "exampleQueries", "displayDescription", "timeoutMillis",
        "enabled", "register",
    }  # fmt: skip
    tool = render_tool(d)
    assert "outputSchema" not in tool
    assert tool["annotations"]["openWorldHint"] is True


def test_schema_priority_explicit_before_definition(tmp_path: Path) -> None:
    d = load_definitions_one(tmp_path)
    explicit = {"type": "object", "properties": {}, "additionalProperties": False}
    assert render_tool(d, input_schema=explicit)["inputSchema"] == explicit
    assert render_tool(d)["inputSchema"] == d.parameters_schema
    out = {"type": "object", "properties": {"n": {"type": "integer"}}}
    assert render_tool(d, output_schema=out)["outputSchema"] == out


def test_null_parameters_schema_needs_a_derived_schema(tmp_path: Path) -> None:
    d = load_definitions_one(tmp_path, parameters_schema=None)
    with pytest.raises(ValueError, match="parameters_schema is null"):
        render_tool(d)
    derived = {"type": "object", "properties": {}, "additionalProperties": False}
    assert render_tool(d, input_schema=derived)["inputSchema"] == derived


def test_rendered_tool_does_not_alias_the_definition_schema(tmp_path: Path) -> None:
    d = load_definitions_one(tmp_path)
    tool = render_tool(d)
    tool["inputSchema"]["properties"].clear()
    assert d.parameters_schema is not None
    assert d.parameters_schema["properties"]


def test_manifest_from_definitions_serializes_sorted_entries(tmp_path: Path) -> None:
    write_definition(tmp_path, clean_definition("search_documents"))
    other = clean_definition("archive_documents")
    other.update(timeout_ms=1500, enabled=False, read_only=False, idempotent=False)
    write_definition(tmp_path, other)
    defs = load_definitions(tmp_path)

    manifest = manifest_from_definitions(defs.values())
    decoded = orjson.loads(dump_manifest(manifest))

    assert decoded["manifestFormat"] == 2
    assert decoded["server"] is None
    assert [t["name"] for t in decoded["tools"]] == ["archive_documents", "search_documents"]
    archive, search = decoded["tools"]
    assert (archive["_meta"]["timeoutMillis"], archive["_meta"]["enabled"]) == (1500, False)
    # the standard lists timeoutMillis and enabled: always there, null when nothing limits
    assert search["_meta"]["timeoutMillis"] is None
    assert search["_meta"]["enabled"] is True
    # an entry is the MCP Tool object: operational keys live inside _meta
    assert search == render_tool(defs["search_documents"])
    assert archive == render_tool(defs["archive_documents"])


def test_manifest_dump_is_stable_and_ends_with_newline(tmp_path: Path) -> None:
    write_definition(tmp_path, clean_definition())
    defs = load_definitions(tmp_path)
    first = dump_manifest(manifest_from_definitions(defs.values()))
    second = dump_manifest(manifest_from_definitions(load_definitions(tmp_path).values()))
    assert first == second
    assert first.endswith(b"}\n")


def test_build_manifest_records_the_server(tmp_path: Path) -> None:
    entry = {"name": "x_tool", "inputSchema": {"type": "object"}}
    manifest = build_manifest([entry], server={"name": "demo", "version": "1.0.0"})
    assert manifest["server"] == {"name": "demo", "version": "1.0.0"}
    assert manifest["tools"] == [
        {
            "name": "x_tool",
            "inputSchema": {"type": "object"},
            "_meta": {"timeoutMillis": None, "enabled": True},
        }
    ]
    assert manifest["tools"][0] is not entry
    assert "_meta" not in entry


def test_a_manifest_entry_carries_the_effective_timeout() -> None:
    own = {"name": "a_tool", "inputSchema": {}, "_meta": {"timeoutMillis": 500, "enabled": False}}
    bare = {"name": "b_tool", "inputSchema": {}}
    manifest = build_manifest([own, bare], timeout_ms=2000)
    a, b = manifest["tools"]
    assert a["_meta"] == {"timeoutMillis": 500, "enabled": False}  # the tool's own is shorter
    assert b["_meta"] == {"timeoutMillis": 2000, "enabled": True}  # the server's limit


def test_mci_service_id_is_exposed_as_legacy_interface_id(tmp_path: Path) -> None:
    data = clean_definition()
    del data["legacy_interface_id"]
    data["mci_service_id"] = "MCI-DOC-0042"
    write_definition(tmp_path, data)
    d = load_definitions(tmp_path)["search_documents"]
    assert d.legacy_interface_id == "MCI-DOC-0042"
    assert render_meta(d)["legacyInterfaceId"] == "MCI-DOC-0042"
    assert meta_value({"mciServiceId": "MCI-1"}, META_LEGACY_INTERFACE_ID) == "MCI-1"


def test_mci_service_id_that_contradicts_legacy_interface_id_is_a_problem(
    tmp_path: Path,
) -> None:
    data = clean_definition()
    data["mci_service_id"] = "MCI-OTHER"
    write_definition(tmp_path, data)
    with pytest.raises(ToolDefinitionError, match="mci_service_id"):
        load_definitions(tmp_path)


def test_a_korean_description_is_labelled_in_korean(tmp_path: Path) -> None:
    from tests.aircore.definitions.korean import exchange_inquiry

    write_definition(tmp_path, exchange_inquiry(), category="smp", relaxed=False)
    (tmp_path / "air-check.yml").write_text("known_tools: [smp_exchange_history]\n")
    d = load_definitions(tmp_path)["smp_exchange_inquiry"]
    assert render_description(d) == (
        "기준일의 통화별 매매기준율과 송금 환율을 조회해 돌려준다.\n\n"
        "사용 시점: 사용자가 오늘이나 특정 날짜의 환율을 물을 때 사용한다.\n\n"
        "사용하지 않을 때: 기간별 환율 추이가 필요하면 smp_exchange_history를 사용한다.\n\n"
        "입출력 제한: 통화 코드는 ISO 4217 세 글자이고 날짜는 YYYY-MM-DD 형식이어야 한다. "
        "결과는 통화 하나당 한 건이다."
    )
