from __future__ import annotations

from typing import Any

import pytest

from aircore import DefinitionError, params_to_json_schema


@pytest.mark.parametrize(
    ("spec", "schema", "required"),
    [
        ("string", {"type": "string"}, True),
        ("string?", {"type": "string"}, False),
        ("number", {"type": "number"}, True),
        ("number?", {"type": "number"}, False),
        ("boolean", {"type": "boolean"}, True),
        ("boolean?", {"type": "boolean"}, False),
        ("object", {"type": "object"}, True),
        ("object?", {"type": "object"}, False),
        ("integer", {"type": "integer"}, True),
        ("array?", {"type": "array"}, False),
    ],
)
def test_every_shorthand_converts(spec: str, schema: dict[str, Any], required: bool) -> None:
    out = params_to_json_schema({"x": spec})
    assert out["properties"]["x"] == schema
    assert ("x" in out.get("required", [])) is required


def test_object_form_keeps_description_and_optional_flag() -> None:
    out = params_to_json_schema(
        {
            "limit": {"type": "number", "description": "max", "optional": True},
            "q": {"type": "string", "description": "query"},
        }
    )
    assert out["properties"] == {
        "limit": {"type": "number", "description": "max"},
        "q": {"type": "string", "description": "query"},
    }
    assert out["required"] == ["q"]


def test_json_schema_fragments_mix_with_shorthand_and_object_form() -> None:
    out = params_to_json_schema(
        {
            "query": "string",
            "limit": {"type": "number", "description": "max", "optional": True},
            "email": {"type": "string", "format": "email"},
            "mode": {"enum": ["a", "b"], "default": "a"},
            "tags": {"type": "array", "items": {"type": "string"}},
        }
    )
    assert out["type"] == "object"
    assert out["properties"]["email"] == {"type": "string", "format": "email"}
    assert out["properties"]["mode"] == {"enum": ["a", "b"], "default": "a"}
    assert out["properties"]["tags"] == {"type": "array", "items": {"type": "string"}}
    assert out["required"] == ["query", "email", "tags"]
    assert "additionalProperties" not in out  # extra arguments pass through


def test_python_types_are_accepted() -> None:
    out = params_to_json_schema({"n": int, "x": float, "s": str, "flag": bool, "o": dict})
    assert [out["properties"][k]["type"] for k in ["n", "x", "s", "flag", "o"]] == [
        "integer",
        "number",
        "string",
        "boolean",
        "object",
    ]


def test_empty_or_missing_params_give_an_empty_object_schema() -> None:
    assert params_to_json_schema(None) == {"type": "object", "properties": {}}
    assert params_to_json_schema({}) == {"type": "object", "properties": {}}


def test_a_complete_object_schema_is_used_as_is() -> None:
    full = {"type": "object", "properties": {"a": {"type": "string"}}, "required": ["a"]}
    assert params_to_json_schema(full) == full


@pytest.mark.parametrize("bad", ["strng", "number??", 42, {"type": 5}, {"optional": "yes"}])
def test_bad_specs_raise_definition_error(bad: Any) -> None:
    with pytest.raises(DefinitionError) as info:
        params_to_json_schema({"x": bad})
    assert "'x'" in str(info.value)
