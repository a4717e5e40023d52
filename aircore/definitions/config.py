"""Configuration of the quality gate: wording, placeholders, minimum lengths, naming, fields.

Every list has documented defaults (see ``docs/tool-definitions.md``) and can be replaced or
extended per project with an ``air-check.yml`` file at the root of the definitions directory::

    extra_banned_phrases: ["game changer", "대박"]   # added to the defaults
    banned_phrases: [...]                           # replaces the defaults
    extra_placeholders: ["to be written"]
    placeholders: [...]
    extra_injected_fields: ["tenant_id"]
    injected_fields: [...]
    allowed_injected_fields: ["user_id"]            # removed from the list (say why beside it)
    min_lengths: {description.function: 30}         # merged into the defaults
    near_duplicate_ratio: 0.9
    name_structure: category_service_action         # or action_object, or none
    category_prefixes: {exchange: smp}              # category_key -> name prefix
    name_exceptions: [legacy_tool]                  # names the structure rule skips (say why)
    known_tools: [fetch_page]                       # other servers' tools descriptions may name
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any

import yaml

from aircore.definitions.errors import ToolDefinitionError
from aircore.definitions.naming import NAME_STRUCTURES, NameStructure
from aircore.definitions.types import Problem
from aircore.definitions.wording import compile_phrases

__all__ = [
    "CONFIG_FILE_NAME",
    "DEFAULT_BANNED_PHRASES",
    "DEFAULT_INJECTED_FIELDS",
    "DEFAULT_MIN_LENGTHS",
    "DEFAULT_NEAR_DUPLICATE_RATIO",
    "DEFAULT_PLACEHOLDERS",
    "GateConfig",
    "load_gate_config",
    "normalize_field_name",
]

CONFIG_FILE_NAME = "air-check.yml"
"""The optional gate configuration file at the root of a definitions directory."""

DEFAULT_BANNED_PHRASES: tuple[str, ...] = (
    # self-promotion
    "best",
    "most powerful",
    "most accurate",
    "most reliable",
    "state of the art",
    "state-of-the-art",
    "world-class",
    "cutting-edge",
    "ultimate",
    "superior",
    "unbeatable",
    "perfect",
    "number one",
    "#1",
    # forcing the model's choice
    "always use this",
    "always use",
    "always call",
    "always prefer",
    "use this tool first",
    "use this first",
    "you must use",
    "must always",
    "never use any other",
    "instead of any other",
    "the only tool",
    "only this tool",
    # 자기 홍보 (self-promotion)
    "최고의",
    "최고입니다",
    "최상의",
    "최강",
    "최첨단",
    "세계 최고",
    "업계 최고",
    "업계 1위",
    "업계 최초",
    "가장 강력한",
    "가장 정확한",
    "가장 뛰어난",
    "가장 좋은",
    "완벽한",
    "독보적",
    "압도적",
    "탁월한",
    "혁신적인",
    # 강제 선택 (forcing the model's choice)
    "반드시 이 도구",
    "항상 이 도구",
    "무조건 이 도구",
    "꼭 이 도구",
    "이 도구만 사용",
    "이 도구를 우선",
    "이 도구를 먼저",
    "유일한 도구",
    "다른 도구 대신",
    "다른 도구를 사용하지",
    "다른 도구는 사용하지",
    "반드시 사용",
    "반드시 호출",
    "무조건 사용",
    "우선적으로 사용",
)
"""Self-promotional and choice-forcing wording rejected in descriptions, in English and Korean.
Latin phrases match as whole words, case-insensitive; Hangul phrases match inside words and
before particles and endings (see :mod:`aircore.definitions.wording`)."""

DEFAULT_PLACEHOLDERS: tuple[str, ...] = (
    "TODO",
    "TBD",
    "FIXME",
    "XXX",
    "...",
    "\u2026",
    "lorem",
    "ipsum",
    "placeholder",
    "설명",
    "미정",
    "추후 작성",
    "추후 기재",
    "작성 예정",
)
"""Markers of text not written yet, rejected in every text of a definition (see
:func:`aircore.definitions.wording.find_placeholder` for how each kind matches)."""

DEFAULT_MIN_LENGTHS: Mapping[str, int] = MappingProxyType(
    {
        "display_name": 3,
        "display_description": 10,
        "description.function": 20,
        "description.when_to_use": 15,
        "description.when_not_to_use": 15,
        "description.io_limits": 15,
        "example_queries": 8,
    }
)
"""Minimum length of each text, as :func:`aircore.definitions.wording.text_weight` counts it
(a Hangul syllable counts three); ``when_not_to_use`` may instead say ``없음``/``none``."""

DEFAULT_NEAR_DUPLICATE_RATIO = 0.9
"""Two example queries at least this similar (0-1, after folding case, spaces, punctuation)
are near-duplicates."""

DEFAULT_INJECTED_FIELDS: tuple[str, ...] = (
    "trace_id",
    "span_id",
    "traceparent",
    "tracestate",
    "request_id",
    "correlation_id",
    "user_id",
    "employee_id",
    "session_id",
    "auth",
    "authorization",
    "auth_token",
    "access_token",
    "bearer_token",
    "api_key",
    "credentials",
)
"""Values the platform injects (tracing, identity, authentication); they must never be tool
inputs. Compared after :func:`normalize_field_name`, so ``traceId`` and ``TRACE-ID`` match too."""


def normalize_field_name(name: str) -> str:
    """Lowercase, drop ``_ - .`` and spaces: ``traceId`` equals ``trace_id`` and ``Trace-ID``."""
    return re.sub(r"[_\-.\s]", "", name).lower()


@dataclass(frozen=True, slots=True, kw_only=True)
class GateConfig:
    """What the quality gate rejects beyond the fixed structural rules."""

    banned_phrases: tuple[str, ...] = DEFAULT_BANNED_PHRASES
    placeholders: tuple[str, ...] = DEFAULT_PLACEHOLDERS
    injected_fields: tuple[str, ...] = DEFAULT_INJECTED_FIELDS
    min_lengths: Mapping[str, int] = field(default_factory=lambda: DEFAULT_MIN_LENGTHS)
    near_duplicate_ratio: float = DEFAULT_NEAR_DUPLICATE_RATIO
    name_structure: NameStructure = "category_service_action"
    category_prefixes: Mapping[str, str] = field(default_factory=dict)
    name_exceptions: tuple[str, ...] = ()
    known_tools: tuple[str, ...] = ()
    min_examples: int = 3
    max_examples: int = 10

    def phrase_pattern(self) -> re.Pattern[str] | None:
        """One case-insensitive regex matching any banned phrase (Korean-aware)."""
        return compile_phrases(self.banned_phrases)

    def injected_names(self) -> frozenset[str]:
        """The normalized platform-injected field names."""
        return frozenset(normalize_field_name(n) for n in self.injected_fields)

    def min_length(self, field_name: str) -> int:
        """The minimum length of a text field (0 when none is set)."""
        return int(self.min_lengths.get(field_name, 0))


_LIST_KEYS = frozenset(
    {
        "banned_phrases",
        "extra_banned_phrases",
        "placeholders",
        "extra_placeholders",
        "injected_fields",
        "extra_injected_fields",
        "allowed_injected_fields",
        "name_exceptions",
        "known_tools",
    }
)
_OTHER_KEYS = frozenset(
    {"min_lengths", "near_duplicate_ratio", "name_structure", "category_prefixes"}
)


def load_gate_config(directory: Path) -> GateConfig:
    """Read ``air-check.yml`` from a definitions directory; the defaults when there is none.

    Args:
        directory: the definitions directory.

    Returns:
        The gate configuration.

    Raises:
        ToolDefinitionError: the file exists but is not valid YAML or has wrong keys/values.
    """
    path = directory / CONFIG_FILE_NAME
    if not path.is_file():
        return GateConfig()
    where = str(path)
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as exc:
        problem = Problem(file=where, field="-", message=str(exc), rule="config")
        raise ToolDefinitionError([problem]) from exc
    if not isinstance(data, Mapping):
        raise ToolDefinitionError(
            [Problem(file=where, field="-", message="must be a mapping", rule="config")]
        )
    problems: list[Problem] = []

    def bad(key: str, message: str) -> None:
        problems.append(Problem(file=where, field=key, message=message, rule="config"))

    lists: dict[str, tuple[str, ...]] = {}
    for key, value in data.items():
        if key in _LIST_KEYS:
            if _is_str_list(value):
                lists[key] = tuple(value)
            else:
                bad(key, "must be a list of strings")
        elif key not in _OTHER_KEYS:
            bad(str(key), "unknown key")
    lengths = dict(DEFAULT_MIN_LENGTHS)
    given = data.get("min_lengths", {})
    if not isinstance(given, Mapping) or not all(
        k in DEFAULT_MIN_LENGTHS and isinstance(v, int) and not isinstance(v, bool) and v >= 0
        for k, v in given.items()
    ):
        bad("min_lengths", "must map " + ", ".join(DEFAULT_MIN_LENGTHS) + " to integers >= 0")
    else:
        lengths.update(given)
    ratio = data.get("near_duplicate_ratio", DEFAULT_NEAR_DUPLICATE_RATIO)
    if isinstance(ratio, bool) or not isinstance(ratio, int | float) or not 0 < ratio <= 1:
        bad("near_duplicate_ratio", "must be a number in (0, 1]")
    structure = data.get("name_structure", "category_service_action")
    if structure not in NAME_STRUCTURES:
        bad("name_structure", "must be one of " + ", ".join(NAME_STRUCTURES))
    prefixes = data.get("category_prefixes", {})
    if not isinstance(prefixes, Mapping) or not all(
        isinstance(k, str) and isinstance(v, str) and v for k, v in prefixes.items()
    ):
        bad("category_prefixes", "must map category keys to name prefixes (strings)")
    if problems:
        raise ToolDefinitionError(problems)
    phrases = lists.get("banned_phrases", DEFAULT_BANNED_PHRASES)
    markers = lists.get("placeholders", DEFAULT_PLACEHOLDERS)
    fields = lists.get("injected_fields", DEFAULT_INJECTED_FIELDS)
    allowed = {normalize_field_name(f) for f in lists.get("allowed_injected_fields", ())}
    fields = tuple(f for f in fields if normalize_field_name(f) not in allowed)
    return GateConfig(
        banned_phrases=phrases + lists.get("extra_banned_phrases", ()),
        placeholders=markers + lists.get("extra_placeholders", ()),
        injected_fields=fields + lists.get("extra_injected_fields", ()),
        min_lengths=MappingProxyType(lengths),
        near_duplicate_ratio=float(ratio),
        name_structure=_structure(structure),
        category_prefixes=MappingProxyType(dict(prefixes)),
        name_exceptions=lists.get("name_exceptions", ()),
        known_tools=lists.get("known_tools", ()),
    )


def _structure(value: Any) -> NameStructure:
    for known in NAME_STRUCTURES:
        if value == known:
            return known
    raise AssertionError(value)  # validated above


def _is_str_list(value: object) -> bool:
    return isinstance(value, list) and all(isinstance(v, str) for v in value)
