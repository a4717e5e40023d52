"""The in-memory form of one tool definition file (``tool-definitions/{category}/{name}.yml``)."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from aircore.definitions.types import JSONObject
from airmeter.layers import Layer

__all__ = [
    "DESCRIPTION_PARTS",
    "NAME_PATTERN",
    "OPTIONAL_FIELDS",
    "REQUIRED_FIELDS",
    "ToolDefinition",
    "ToolDescription",
]

NAME_PATTERN = re.compile(r"^[a-z][a-z0-9_]{2,63}$")
"""Tool names: lowercase snake_case, 3-64 characters, starting with a letter."""

DESCRIPTION_PARTS: tuple[str, ...] = ("function", "when_to_use", "when_not_to_use", "io_limits")
"""The four description parts, in the order they are joined into the model-facing description."""

REQUIRED_FIELDS: tuple[str, ...] = (
    "name",
    "display_name",
    "version",
    "category_key",
    "description",
    "display_description",
    "example_queries",
    "read_only",
    "destructive",
    "idempotent",
    "parameters_schema",
)
"""Top-level keys every definition file must have (``description`` holds the four parts)."""

OPTIONAL_FIELDS: tuple[str, ...] = (
    "tags",
    "legacy_interface_id",
    "mci_service_id",
    "required_env_keys",
    "required_scopes",
    "owner_org",
    "output_schema",
    "open_world",
    "layer",
    "timeout_ms",
    "enabled",
    "register",
)
"""Top-level keys a definition file may have; any other key is reported as unknown."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolDescription:
    """The four parts of the model-facing description, each non-empty text."""

    function: str
    when_to_use: str
    when_not_to_use: str
    io_limits: str


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolDefinition:
    """One tool's metadata, the single source of truth for ``tools/list``, manifest and meter.

    ``parameters_schema``/``output_schema`` set to ``None`` mean "derive from the handler" (for
    the input schema the key must still be present in the file, written as ``null``).
    ``register: false`` marks a draft or local tool that a central registry leaves out.
    """

    name: str
    display_name: str
    version: str
    category_key: str
    description: ToolDescription
    display_description: str
    example_queries: tuple[str, ...]
    read_only: bool
    destructive: bool
    idempotent: bool
    parameters_schema: JSONObject | None
    output_schema: JSONObject | None = None
    tags: tuple[str, ...] = ()
    legacy_interface_id: str | None = None
    required_env_keys: tuple[str, ...] = ()
    required_scopes: tuple[str, ...] = ()
    """OAuth scopes a caller needs for this tool over HTTP (with the code's own, a union)."""
    owner_org: str | None = None
    open_world: bool = False
    layer: Layer | None = None
    timeout_ms: int | None = None
    enabled: bool = True
    register: bool = True
    source: Path | None = field(default=None, compare=False)
