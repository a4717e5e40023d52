"""x-mcp-header declarations and Mcp-Param-* checks, including every value a client may send."""

from __future__ import annotations

import base64
import re
from typing import Any

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from aircore.errors import AirError, DefinitionError
from aircore.protocol.param_headers import ParamHeader, check_param_headers, param_headers

REGION = (ParamHeader(("region",), "mcp-param-region", "string"),)
SAFE = re.compile(r"^[\x21-\x7e]([\x20-\x7e]*[\x21-\x7e])?$")


def client_encoding(value: str) -> str:
    """What a conforming client puts in the header (the spec's value-encoding rules)."""
    sentinel = value.startswith("=?base64?") and value.endswith("?=")
    if SAFE.fullmatch(value) and not sentinel:  # not match: "$" also matches before a final \n
        return value
    return "=?base64?" + base64.b64encode(value.encode()).decode() + "?="


def test_a_nested_property_reachable_through_properties_may_be_mirrored() -> None:
    schema = {
        "type": "object",
        "properties": {
            "target": {
                "type": "object",
                "properties": {"zone": {"type": "integer", "x-mcp-header": "Zone"}},
            },
            "x-mcp-header": {"type": "string"},  # a property may have that name
        },
    }
    assert param_headers(schema, tool="t") == (
        ParamHeader(("target", "zone"), "mcp-param-zone", "integer"),
    )


@pytest.mark.parametrize(
    "schema",
    [
        {"properties": {"a": {"type": "string", "x-mcp-header": ""}}},
        {"properties": {"a": {"type": "string", "x-mcp-header": "Re gion"}}},
        {"properties": {"a": {"type": "string", "x-mcp-header": "A\r\nB"}}},
        {"properties": {"a": {"type": "string", "x-mcp-header": 5}}},
        {"properties": {"a": {"type": "number", "x-mcp-header": "A"}}},
        {"properties": {"a": {"type": "array", "x-mcp-header": "A"}}},
        {
            "properties": {
                "a": {"type": "string", "x-mcp-header": "Dup"},
                "b": {"type": "string", "x-mcp-header": "dup"},
            }
        },
        {"properties": {"a": {"type": "array", "items": {"type": "string", "x-mcp-header": "A"}}}},
        {"anyOf": [{"properties": {"a": {"type": "string", "x-mcp-header": "A"}}}]},
        {"$defs": {"d": {"type": "string", "x-mcp-header": "A"}}},
    ],
)
def test_an_invalid_declaration_is_a_definition_error(schema: dict[str, Any]) -> None:
    with pytest.raises(DefinitionError):
        param_headers({"type": "object", **schema}, tool="t")


@given(value=st.text(max_size=40))
@example(value="0\n")  # found by CI: a final newline must go as Base64, as a client sends it
def test_every_value_a_client_encodes_is_accepted(value: str) -> None:
    check_param_headers(REGION, {"region": value}, {"mcp-param-region": client_encoding(value)})


@given(value=st.text(max_size=20), other=st.text(max_size=20))
def test_a_header_for_another_value_is_refused(value: str, other: str) -> None:
    if value == other:
        return
    with pytest.raises(AirError) as err:
        check_param_headers(REGION, {"region": value}, {"mcp-param-region": client_encoding(other)})
    assert err.value.code == -32020


@given(header=st.text(max_size=30))
def test_any_header_is_either_accepted_or_refused_with_header_mismatch(header: str) -> None:
    code = None
    try:
        check_param_headers(REGION, {"region": "eu"}, {"mcp-param-region": header})
    except AirError as exc:
        code = exc.code
    assert code in (None, -32020)


def test_numbers_compare_as_numbers_and_null_needs_no_header() -> None:
    shard = (ParamHeader(("shard",), "mcp-param-shard", "integer"),)
    check_param_headers(shard, {"shard": 42}, {"mcp-param-shard": "42.0"})
    check_param_headers(shard, {"shard": None}, {})
    check_param_headers(shard, {}, {})
    for bad in ("42.5", "x", "NaN", "1e400"):
        with pytest.raises(AirError):
            check_param_headers(shard, {"shard": 42}, {"mcp-param-shard": bad})
