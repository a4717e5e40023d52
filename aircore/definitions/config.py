"""Configuration of the quality gate: the banned-phrase list and the platform-injected fields.

Both lists have documented defaults (see ``docs/tool-definitions.md``) and can be replaced or
extended per project with an ``air-check.yml`` file at the root of the definitions directory::

    extra_banned_phrases: ["game changer"]     # added to the defaults
    banned_phrases: [...]                      # replaces the defaults
    extra_injected_fields: ["tenant_id"]
    injected_fields: [...]
    allowed_injected_fields: ["user_id"]       # removed from the list (say why beside it)
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import yaml

from aircore.definitions.errors import ToolDefinitionError
from aircore.definitions.types import Problem

__all__ = [
    "CONFIG_FILE_NAME",
    "DEFAULT_BANNED_PHRASES",
    "DEFAULT_INJECTED_FIELDS",
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
)
"""Self-promotional and choice-forcing wording rejected in descriptions (matched as whole words,
case-insensitive)."""

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
    injected_fields: tuple[str, ...] = DEFAULT_INJECTED_FIELDS
    min_examples: int = 3
    max_examples: int = 10

    def phrase_pattern(self) -> re.Pattern[str] | None:
        """One case-insensitive regex matching any banned phrase as whole words."""
        if not self.banned_phrases:
            return None
        parts = sorted((re.escape(p.strip()) for p in self.banned_phrases if p.strip()), key=len)
        alternatives = "|".join(reversed(parts))
        return re.compile(rf"(?<![\w#])(?:{alternatives})(?!\w)", re.IGNORECASE)

    def injected_names(self) -> frozenset[str]:
        """The normalized platform-injected field names."""
        return frozenset(normalize_field_name(n) for n in self.injected_fields)


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
    except (OSError, yaml.YAMLError) as exc:
        problem = Problem(file=where, field="-", message=str(exc), rule="config")
        raise ToolDefinitionError([problem]) from exc
    if not isinstance(data, Mapping):
        raise ToolDefinitionError(
            [Problem(file=where, field="-", message="must be a mapping", rule="config")]
        )
    known = {
        "banned_phrases",
        "extra_banned_phrases",
        "injected_fields",
        "extra_injected_fields",
        "allowed_injected_fields",
    }
    problems = [
        Problem(file=where, field=str(k), message="unknown key", rule="config")
        for k in data
        if k not in known
    ]
    lists: dict[str, tuple[str, ...]] = {}
    for key in known & set(data):
        value = data[key]
        if not _is_str_list(value):
            problems.append(
                Problem(file=where, field=key, message="must be a list of strings", rule="config")
            )
        else:
            lists[key] = tuple(value)
    if problems:
        raise ToolDefinitionError(problems)
    phrases = lists.get("banned_phrases", DEFAULT_BANNED_PHRASES)
    fields = lists.get("injected_fields", DEFAULT_INJECTED_FIELDS)
    allowed = {normalize_field_name(f) for f in lists.get("allowed_injected_fields", ())}
    fields = tuple(f for f in fields if normalize_field_name(f) not in allowed)
    return GateConfig(
        banned_phrases=phrases + lists.get("extra_banned_phrases", ()),
        injected_fields=fields + lists.get("extra_injected_fields", ()),
    )


def _is_str_list(value: object) -> bool:
    return isinstance(value, list) and all(isinstance(v, str) for v in value)
