"""Every rejection rule: one failing fixture each (a clean definition with one thing broken)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from aircore.definitions import (
    DEFAULT_BANNED_PHRASES,
    GateConfig,
    Problem,
    check_files,
    check_pairing,
    load_gate_config,
    read_definition_files,
)
from aircore.definitions.errors import ToolDefinitionError
from tests.aircore.definitions.fixtures import RELAXED_CONFIG, clean_definition, write_definition

Mutation = Callable[[dict[str, Any]], None]


def _problems(root: Path, config: GateConfig | None = None) -> list[Problem]:
    gate = config if config is not None else load_gate_config(root)
    return check_files(read_definition_files(root), config=gate)


def _set(path: str, value: Any) -> Mutation:
    def mutate(d: dict[str, Any]) -> None:
        *parents, last = path.split(".")
        target = d
        for key in parents:
            target = target[key]
        target[last] = value

    return mutate


def _delete(path: str) -> Mutation:
    def mutate(d: dict[str, Any]) -> None:
        *parents, last = path.split(".")
        target = d
        for key in parents:
            target = target[key]
        del target[last]

    return mutate


def _props(d: dict[str, Any]) -> dict[str, Any]:
    props: dict[str, Any] = d["parameters_schema"]["properties"]
    return props


CASES: list[tuple[str, Mutation, str, str]] = [
    # (case id, mutation, expected rule, expected field)
    ("missing name", _delete("name"), "required", "name"),
    ("missing display_name", _delete("display_name"), "required", "display_name"),
    ("missing version", _delete("version"), "required", "version"),
    ("missing category_key", _delete("category_key"), "required", "category_key"),
    ("missing description", _delete("description"), "required", "description"),
    ("missing display_description", _delete("display_description"), "required",
     "display_description"),
    ("missing example_queries", _delete("example_queries"), "required", "example_queries"),
    ("missing read_only", _delete("read_only"), "required", "read_only"),
    ("missing destructive", _delete("destructive"), "required", "destructive"),
    ("missing idempotent", _delete("idempotent"), "required", "idempotent"),
    ("missing parameters_schema", _delete("parameters_schema"), "required", "parameters_schema"),
    ("name with capitals", _set("name", "searchDocuments"), "name", "name"),
    ("name too short", _set("name", "ab"), "name", "name"),
    ("name starting with a digit", _set("name", "1search"), "name", "name"),
    ("name too long", _set("name", "a" * 65), "name", "name"),
    ("missing when_to_use", _delete("description.when_to_use"), "description",
     "description.when_to_use"),
    ("empty when_not_to_use", _set("description.when_not_to_use", "  "), "description",
     "description.when_not_to_use"),
    ("missing function", _delete("description.function"), "description", "description.function"),
    ("empty io_limits", _set("description.io_limits", ""), "description", "description.io_limits"),
    ("description not a mapping", _set("description", "just text"), "description", "description"),
    ("two example queries", _set("example_queries", ["a b c", "d e f"]), "examples",
     "example_queries"),
    ("eleven example queries", _set("example_queries", [f"query {i}" for i in range(11)]),
     "examples", "example_queries"),
    ("example naming the tool", _set("example_queries", ["run search_documents on taxes",
                                                         "find taxes", "look up taxes"]),
     "examples", "example_queries[0]"),
    ("self-promotion in function", _set("description.function", "The best search there is."),
     "wording", "description.function"),
    ("forcing in when_to_use", _set("description.when_to_use", "Always use this for questions."),
     "wording", "description.when_to_use"),
    ("promotion in display_description", _set("display_description", "Our most powerful search"),
     "wording", "display_description"),
    ("input property without description",
     lambda d: _props(d)["limit"].pop("description"), "input-description",
     "parameters_schema.properties.limit.description"),
    ("nested input property without description",
     lambda d: _props(d).update(filter={"type": "object", "description": "Filters.",
                                        "properties": {"year": {"type": "integer"}}}),
     "input-description", "parameters_schema.properties.filter.properties.year.description"),
    ("additionalProperties missing", _delete("parameters_schema.additionalProperties"),
     "additional-properties", "parameters_schema.additionalProperties"),
    ("additionalProperties true", _set("parameters_schema.additionalProperties", True),
     "additional-properties", "parameters_schema.additionalProperties"),
    ("read_only and destructive", _set("destructive", True), "hints", "destructive"),
    ("hint not a boolean", _set("idempotent", "yes"), "type", "idempotent"),
    ("output schema not an object root", _set("output_schema", {"type": "array"}),
     "output-schema", "output_schema"),
    ("output schema not a mapping", _set("output_schema", ["hits"]), "output-schema",
     "output_schema"),
    ("output schema with an unknown type", _set("output_schema.properties.hits.type", "strin"),
     "output-schema", "output_schema"),
    ("input schema with an invalid keyword", _set("parameters_schema.required", "query"),
     "input-schema", "parameters_schema"),
    ("trace id in the input", lambda d: _props(d).update(
        traceId={"type": "string", "description": "Trace."}), "injected-field",
     "parameters_schema.properties.traceId"),
    ("request id in the input", lambda d: _props(d).update(
        request_id={"type": "string", "description": "Request."}), "injected-field",
     "parameters_schema.properties.request_id"),
    ("user id in the input", lambda d: _props(d).update(
        user_id={"type": "string", "description": "Who."}), "injected-field",
     "parameters_schema.properties.user_id"),
    ("auth in the input", lambda d: _props(d).update(
        Authorization={"type": "string", "description": "Token."}), "injected-field",
     "parameters_schema.properties.Authorization"),
    ("unknown field", _set("read_onyl", True), "unknown-field", "read_onyl"),
    ("version as a number", _set("version", 1.0), "type", "version"),
    ("bad layer", _set("layer", "L9"), "type", "layer"),
    ("bad env key", _set("required_env_keys", ["docs-path"]), "type", "required_env_keys"),
    ("bad timeout", _set("timeout_ms", -5), "type", "timeout_ms"),
]  # fmt: skip


@pytest.mark.parametrize(("mutation", "rule", "field"), [c[1:] for c in CASES],
                         ids=[c[0] for c in CASES])  # fmt: skip
def test_each_rule_rejects_its_failing_fixture(
    tmp_path: Path, mutation: Mutation, rule: str, field: str
) -> None:
    data = clean_definition()
    mutation(data)
    write_definition(tmp_path, data, stem="search_documents")

    problems = _problems(tmp_path)

    assert (rule, field) in {(p.rule, p.field) for p in problems}, problems
    assert all(p.file.endswith("search_documents.yml") for p in problems)


def test_clean_definition_has_no_problem(tmp_path: Path) -> None:
    write_definition(tmp_path, clean_definition())
    minimal = clean_definition("list_folders")
    for key in ("output_schema", "tags", "legacy_interface_id", "required_env_keys", "owner_org"):
        del minimal[key]
    minimal["category_key"] = "files"
    write_definition(tmp_path, minimal, category="files")
    assert _problems(tmp_path) == []


def test_problem_line_is_file_field_message(tmp_path: Path) -> None:
    data = clean_definition()
    data["destructive"] = True
    path = write_definition(tmp_path, data)
    (problem,) = _problems(tmp_path)
    assert str(problem) == f"{path}: destructive: a read_only tool cannot be destructive"


def test_duplicate_names_are_reported_on_the_second_file(tmp_path: Path) -> None:
    write_definition(tmp_path, clean_definition(), category="a")
    write_definition(tmp_path, clean_definition(), category="b")
    problems = _problems(tmp_path)
    dup = [p for p in problems if p.rule == "duplicate"]
    assert {p.file for p in dup} == {str(tmp_path / "b" / "search_documents.yml")}
    assert any("also in" in p.message and "/a/" in p.message for p in dup)


def test_file_named_differently_from_the_tool_is_reported(tmp_path: Path) -> None:
    write_definition(tmp_path, clean_definition(), stem="search_docs")
    (problem,) = _problems(tmp_path)
    assert (problem.rule, problem.field) == ("file-name", "name")


def test_wording_matches_whole_words_case_insensitively(tmp_path: Path) -> None:
    data = clean_definition()
    data["description"]["function"] = "Bestows nothing; BEST for nothing either."
    write_definition(tmp_path, data)
    (problem,) = _problems(tmp_path)
    assert problem.message.endswith("'best'")


def test_phrase_list_is_configurable_in_air_check_yml(tmp_path: Path) -> None:
    data = clean_definition()
    data["description"]["function"] = "An awesome search that ranks the best match first."
    write_definition(tmp_path, data)
    (tmp_path / "air-check.yml").write_text(
        "banned_phrases: [awesome]\nextra_injected_fields: [tenant_id]\n" + RELAXED_CONFIG,
        encoding="utf-8",
    )
    problems = _problems(tmp_path)
    assert [p.message for p in problems] == ["self-promotional or forcing wording: 'awesome'"]

    data["parameters_schema"]["properties"]["tenantId"] = {"type": "string", "description": "T."}
    write_definition(tmp_path, data)
    assert {p.rule for p in _problems(tmp_path)} == {"wording", "injected-field"}


def test_default_phrase_list_names_the_documented_examples() -> None:
    for phrase in ("best", "always use this", "most powerful"):
        assert phrase in DEFAULT_BANNED_PHRASES


def test_bad_gate_config_is_a_typed_error(tmp_path: Path) -> None:
    (tmp_path / "air-check.yml").write_text("banned_phrase: [x]\n", encoding="utf-8")
    with pytest.raises(ToolDefinitionError) as info:
        load_gate_config(tmp_path)
    assert info.value.problems[0].field == "banned_phrase"


def test_pairing_reports_missing_unused_and_mismatched_definitions(tmp_path: Path) -> None:
    write_definition(tmp_path, clean_definition("search_documents"))
    write_definition(tmp_path, clean_definition("fetch_page"), category="web")
    write_definition(tmp_path, clean_definition("archive_old"), stem="archive_items")
    files = read_definition_files(tmp_path)

    problems = check_pairing(
        ["search_documents", "archive_items", "send_mail"], files, target="srv.py:server"
    )

    got = {(p.rule, p.file.rsplit("/", 1)[-1], p.field) for p in problems}
    assert got == {
        ("missing-definition", "srv.py:server", "send_mail"),
        ("unused-definition", "fetch_page.yml", "-"),
        ("name-mismatch", "archive_items.yml", "name"),
    }
    mismatch = next(p for p in problems if p.rule == "name-mismatch")
    assert "'archive_items'" in mismatch.message
    assert "'archive_old'" in mismatch.message
    paired = check_files(files, config=GateConfig(), paired=True)
    assert "file-name" not in {p.rule for p in paired}


@pytest.mark.parametrize(
    ("schema", "fragment"),
    [
        ({"type": "object", "properties": {"q": {"type": "string", "pattern": "(["}}}, "regex"),
        ({"type": "object", "properties": {"q": {"type": "string", "minLength": -1}}},
         "minLength"),
        ({"type": "object", "properties": {"q": {"anyOf": []}}}, "anyOf"),
        ({"type": "object", "properties": {"q": {"type": ["string", "string"]}}}, "type"),
        ({"type": "object", "properties": {"q": {"items": 3}}}, "items"),
    ],
)  # fmt: skip
def test_output_schema_is_checked_against_the_meta_schema(
    tmp_path: Path, schema: dict[str, Any], fragment: str
) -> None:
    data = clean_definition()
    data["output_schema"] = schema
    write_definition(tmp_path, data)
    (problem,) = _problems(tmp_path)
    assert problem.rule == "output-schema"
    assert fragment in problem.message


def test_rich_valid_schemas_pass(tmp_path: Path) -> None:
    data = clean_definition()
    data["output_schema"] = {
        "type": "object",
        "$defs": {"hit": {"type": "object", "properties": {"id": {"type": "integer"}}}},
        "properties": {
            "hits": {"type": "array", "items": {"$ref": "#/$defs/hit"}, "maxItems": 50},
            "next": {"anyOf": [{"type": "string", "pattern": "^c[0-9]+$"}, {"type": "null"}]},
            "kind": {"enum": ["a", "b"], "default": "a"},
        },
        "required": ["hits"],
    }
    data["parameters_schema"]["properties"]["mode"] = {
        "type": ["string", "null"],
        "description": "Search mode.",
        "enum": ["fast", "exact", None],
    }
    write_definition(tmp_path, data)
    assert _problems(tmp_path) == []
