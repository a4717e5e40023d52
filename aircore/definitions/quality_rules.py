"""Gate rules on what a definition *says*: no placeholder, long enough, no promotion or forcing,
distinct example queries, a name with the standard's structure, ``when_not_to_use`` that names
similar tools or says there are none, and a file in its category's folder.

Each rule is ``(file, data, config) -> Iterable[Problem]`` like the structural rules; a rule
skips a field of the wrong type (the structural rules report it).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from aircore.definitions.config import GateConfig
from aircore.definitions.model import DESCRIPTION_PARTS, NAME_PATTERN
from aircore.definitions.naming import interface_id_reason, structure_problem
from aircore.definitions.types import Problem
from aircore.definitions.wording import (
    find_placeholder,
    is_explicit_none,
    near_duplicate_pairs,
    text_weight,
    tool_references,
)

__all__ = [
    "QUALITY_RULES",
    "check_schema_texts",
    "rule_category_folder",
    "rule_interface_id",
    "rule_lengths",
    "rule_name_structure",
    "rule_near_duplicates",
    "rule_placeholders",
    "rule_when_not_to_use",
    "rule_wording",
]

Data = Mapping[str, Any]


def _p(file: str, field: str, message: str, rule: str) -> Problem:
    return Problem(file=file, field=field, message=message, rule=rule)


def _texts(data: Data) -> Iterator[tuple[str, str]]:
    """Every human text of a definition as ``(field path, text)``: names, descriptions, example
    queries and the descriptions inside both schemas."""
    for key in ("display_name", "display_description"):
        if isinstance(data.get(key), str):
            yield key, data[key]
    desc = data.get("description")
    if isinstance(desc, Mapping):
        for part in DESCRIPTION_PARTS:
            if isinstance(desc.get(part), str):
                yield f"description.{part}", desc[part]
    queries = data.get("example_queries")
    if isinstance(queries, list):
        for i, query in enumerate(queries):
            if isinstance(query, str):
                yield f"example_queries[{i}]", query
    for key in ("parameters_schema", "output_schema"):
        yield from _schema_texts(data.get(key), key)


def _schema_texts(schema: object, path: str) -> Iterator[tuple[str, str]]:
    if not isinstance(schema, Mapping):
        return
    if isinstance(schema.get("description"), str):
        yield f"{path}.description", schema["description"]
    props = schema.get("properties")
    if isinstance(props, Mapping):
        for name, prop in props.items():
            yield from _schema_texts(prop, f"{path}.properties.{name}")
    yield from _schema_texts(schema.get("items"), f"{path}.items")


def check_schema_texts(
    schema: object, *, file: str, field: str, config: GateConfig
) -> list[Problem]:
    """Placeholders in the descriptions of a schema that does not come from the definition file
    (an explicit schema resource on the tool, or one derived from the handler).

    Args:
        schema: the effective schema.
        file: the file named in problems.
        field: the schema's field path (``outputSchema (explicit on the tool)``).
        config: the gate configuration.

    Returns:
        One problem per description still holding a placeholder.
    """
    problems = []
    for path, text in _schema_texts(schema, field):
        marker = find_placeholder(text, config.placeholders)
        if marker is not None:
            problems.append(
                _p(file, path, f"placeholder text {marker!r}: write the real text", "placeholder")
            )
    return problems


def rule_placeholders(file: str, data: Data, config: GateConfig) -> Iterable[Problem]:
    """No text still holds a placeholder (``TODO``, ``TBD``, ``...``, ``lorem``, ``설명``…)."""
    for field, text in _texts(data):
        marker = find_placeholder(text, config.placeholders)
        if marker is not None:
            message = f"placeholder text {marker!r}: write the real text"
            yield _p(file, field, message, "placeholder")


def rule_lengths(file: str, data: Data, config: GateConfig) -> Iterable[Problem]:
    """Each text reaches its minimum length (a Hangul syllable counts three)."""
    for field, text in _texts(data):
        key = "example_queries" if field.startswith("example_queries[") else field
        low = config.min_length(key)
        if not low or not text.strip():  # empty text is the structural rules' problem
            continue
        if find_placeholder(text, config.placeholders):  # reported once, as a placeholder
            continue
        if key == "description.when_not_to_use" and is_explicit_none(text):
            continue
        weight = text_weight(text)
        if weight < low:
            yield _p(file, field, f"too short ({weight} of at least {low})", "too-short")


def rule_wording(file: str, data: Data, config: GateConfig) -> Iterable[Problem]:
    """No self-promotional or choice-forcing phrase in any description text (English or Korean)."""
    pattern = config.phrase_pattern()
    if pattern is None:
        return
    for field, text in _texts(data):
        if not (field == "display_description" or field.startswith("description.")):
            continue
        found = sorted({m.group(0).lower() for m in pattern.finditer(text)})
        if found:
            words = ", ".join(repr(w) for w in found)
            yield _p(file, field, f"self-promotional or forcing wording: {words}", "wording")


def rule_near_duplicates(file: str, data: Data, config: GateConfig) -> Iterable[Problem]:
    """Example queries differ from each other by more than case, spacing and punctuation."""
    queries = data.get("example_queries")
    if not isinstance(queries, list) or not all(isinstance(q, str) for q in queries):
        return
    # a placeholder is reported as one; templates of unwritten queries look alike anyway
    written = ["" if find_placeholder(q, config.placeholders) else q for q in queries]
    for i, j, sim in near_duplicate_pairs(written, ratio=config.near_duplicate_ratio):
        yield _p(
            file,
            f"example_queries[{j}]",
            f"near-duplicate of example_queries[{i}] ({sim:.0%} alike): "
            "give a different real request",
            "near-duplicate",
        )


def rule_name_structure(file: str, data: Data, config: GateConfig) -> Iterable[Problem]:
    """The name has the project's structure (``category_service_action`` by default)."""
    name, category = data.get("name"), data.get("category_key")
    if not isinstance(name, str) or not isinstance(category, str):
        return
    if not NAME_PATTERN.fullmatch(name):
        return
    if name in config.name_exceptions:
        return
    reason = structure_problem(
        name,
        category,
        structure=config.name_structure,
        prefixes=config.category_prefixes,
    )
    if reason is not None:
        yield _p(file, "name", f"{name!r} {reason}", "name-structure")


def rule_interface_id(file: str, data: Data, config: GateConfig) -> Iterable[Problem]:
    """The name is not a legacy interface ID (that belongs in ``legacy_interface_id``)."""
    name = data.get("name")
    if not isinstance(name, str) or not NAME_PATTERN.fullmatch(name):
        return
    legacy = data.get("legacy_interface_id", data.get("mci_service_id"))
    reason = interface_id_reason(name, legacy if isinstance(legacy, str) else None)
    if reason is not None:
        yield _p(
            file,
            "name",
            f"{name!r} looks like an interface ID ({reason}): name the tool by what it does "
            "and keep the ID in legacy_interface_id",
            "interface-id",
        )


def rule_when_not_to_use(file: str, data: Data, config: GateConfig) -> Iterable[Problem]:
    """``when_not_to_use`` names similar tools by their tool names, or says ``없음``/``none``."""
    desc = data.get("description")
    text = desc.get("when_not_to_use") if isinstance(desc, Mapping) else None
    if not isinstance(text, str) or not text.strip() or find_placeholder(text, config.placeholders):
        return
    name = data.get("name")
    refs = tool_references(text) - ({name} if isinstance(name, str) else set())
    if not refs and not is_explicit_none(text):
        yield _p(
            file,
            "description.when_not_to_use",
            "name the similar tools by their tool names (e.g. `other_tool`), or start with "
            "없음/none when there is none",
            "when-not-to-use",
        )


def rule_category_folder(file: str, data: Data, folder: str | None) -> Iterable[Problem]:
    """The file sits in the folder named after its ``category_key`` (``{category}/{name}.yml``)."""
    category = data.get("category_key")
    if folder is None or not isinstance(category, str) or not category.strip():
        return
    if folder != category:
        where = f"folder {folder!r}" if folder else "the definitions root"
        yield _p(
            file,
            "category_key",
            f"category_key {category!r} but the file is in {where}: move it to {category}/",
            "category-folder",
        )


QUALITY_RULES = (
    rule_placeholders,
    rule_lengths,
    rule_wording,
    rule_near_duplicates,
    rule_name_structure,
    rule_interface_id,
    rule_when_not_to_use,
)
"""The per-file content rules, in the order their problems are reported (the folder rule
needs the file's folder and runs beside them)."""
