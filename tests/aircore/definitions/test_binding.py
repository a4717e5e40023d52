from __future__ import annotations

from pathlib import Path

import pytest

from aircore.definitions import DefinitionNotFoundError, ToolDefinitionError
from aircore.definitions.binding import ToolSpec, bind_tools, check_tools
from tests.aircore.definitions.fixtures import clean_definition, write_definition

EXPLICIT = {
    "type": "object",
    "properties": {"text": {"type": "string", "description": "Explicit."}},
    "additionalProperties": False,
}
DERIVED = {
    "type": "object",
    "properties": {"q": {"type": "string", "description": "Derived."}},
    "additionalProperties": False,
}
OUT_EXPLICIT = {"type": "object", "properties": {"a": {"type": "string"}}}
OUT_DERIVED = {"type": "object", "properties": {"b": {"type": "string"}}}


def test_input_and_output_schema_priority(tmp_path: Path) -> None:
    data = clean_definition()
    write_definition(tmp_path, data)
    defined_in, defined_out = data["parameters_schema"], data["output_schema"]

    def bound(spec: ToolSpec) -> tuple[object, object, str, str]:
        b = bind_tools([spec], tmp_path, target="t")["search_documents"]
        return b.tool["inputSchema"], b.tool.get("outputSchema"), b.input_source, b.output_source

    name = "search_documents"
    everything = ToolSpec(
        name=name,
        input_schema=EXPLICIT,
        derived_input_schema=DERIVED,
        output_schema=OUT_EXPLICIT,
        derived_output_schema=OUT_DERIVED,
    )
    assert bound(everything) == (EXPLICIT, OUT_EXPLICIT, "explicit", "explicit")
    no_explicit = ToolSpec(
        name=name, derived_input_schema=DERIVED, derived_output_schema=OUT_DERIVED
    )
    assert bound(no_explicit) == (defined_in, defined_out, "definition", "definition")

    data["parameters_schema"] = None
    del data["output_schema"]
    write_definition(tmp_path, data)
    assert bound(no_explicit) == (DERIVED, OUT_DERIVED, "derived", "derived")
    assert bound(ToolSpec(name=name, derived_input_schema=DERIVED))[1:] == (
        None,
        "derived",
        "none",
    )


def test_effective_schema_from_the_handler_is_gated_too(tmp_path: Path) -> None:
    data = clean_definition()
    data["parameters_schema"] = None
    write_definition(tmp_path, data)
    loose = {"type": "object", "properties": {"user_id": {"type": "string"}}}
    spec = ToolSpec(name="search_documents", derived_input_schema=loose)
    with pytest.raises(ToolDefinitionError) as info:
        bind_tools([spec], tmp_path, target="srv")
    rules = {(p.rule, p.field) for p in info.value.problems}
    field = "inputSchema (derived on the tool)"
    assert rules == {
        ("injected-field", f"{field}.properties.user_id"),
        ("input-description", f"{field}.properties.user_id.description"),
    }


def test_null_parameters_schema_without_any_schema_fails(tmp_path: Path) -> None:
    data = clean_definition()
    data["parameters_schema"] = None
    write_definition(tmp_path, data)
    with pytest.raises(ToolDefinitionError) as info:
        bind_tools([ToolSpec(name="search_documents")], tmp_path, target="srv")
    assert info.value.problems[0].field == "parameters_schema"


def test_name_mismatch_fails_start_with_a_clear_message(tmp_path: Path) -> None:
    write_definition(tmp_path, clean_definition("find_documents"), stem="search_documents")
    with pytest.raises(ToolDefinitionError) as info:
        bind_tools([ToolSpec(name="search_documents")], tmp_path, target="demo")
    assert [p.rule for p in info.value.problems] == ["name-mismatch"]
    text = str(info.value)
    assert "server 'demo' cannot start" in text
    assert "handler registers 'search_documents' but the definition is named 'find_documents'" in (
        text
    )


def test_missing_definition_is_its_own_error_type(tmp_path: Path) -> None:
    write_definition(tmp_path, clean_definition())
    specs = [ToolSpec(name="search_documents"), ToolSpec(name="send_mail")]
    with pytest.raises(DefinitionNotFoundError) as info:
        bind_tools(specs, tmp_path, target="demo")
    assert info.value.problems[0].field == "send_mail"


def test_unused_definition_fails_start(tmp_path: Path) -> None:
    write_definition(tmp_path, clean_definition())
    write_definition(tmp_path, clean_definition("left_over"))
    with pytest.raises(ToolDefinitionError) as info:
        bind_tools([ToolSpec(name="search_documents")], tmp_path, target="demo")
    assert not isinstance(info.value, DefinitionNotFoundError)
    assert [p.rule for p in info.value.problems] == ["unused-definition"]


def test_check_tools_reports_without_raising(tmp_path: Path) -> None:
    write_definition(tmp_path, clean_definition())
    checked, problems, bound = check_tools(
        [ToolSpec(name="search_documents")], tmp_path, target="demo"
    )
    assert (checked, problems, list(bound)) == (1, [], ["search_documents"])
