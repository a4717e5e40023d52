"""A clean definition and helpers that write definition trees to a temporary directory."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import yaml


def clean_definition(name: str = "search_documents") -> dict[str, Any]:
    """A definition that passes every rule; tests mutate a copy to break exactly one."""
    return copy.deepcopy(
        {
            "name": name,
            "display_name": "Search documents",
            "version": "1.2.0",
            "category_key": "docs",
            "description": {
                "function": "Finds documents in the local index whose text matches a query.",
                "when_to_use": "The user asks for documents, notes or pages about a topic.",
                "when_not_to_use": "Fetching a page from the web: use fetch_page instead.",
                "io_limits": "Returns at most 50 titles with ids; the query is 1-200 characters.",
            },
            "display_description": "Full-text search over the document index.",
            "example_queries": [
                "find my notes about the quarterly budget",
                "which documents mention the Seoul office?",
                "search for onboarding checklists",
            ],
            "read_only": True,
            "destructive": False,
            "idempotent": True,
            "parameters_schema": {
                "type": "object",
                "properties": {
                    "query": {"type": "string", "description": "Words to look for."},
                    "limit": {"type": "integer", "description": "Maximum number of hits."},
                },
                "required": ["query"],
                "additionalProperties": False,
            },
            "output_schema": {
                "type": "object",
                "properties": {"hits": {"type": "array", "items": {"type": "string"}}},
                "required": ["hits"],
            },
            "tags": ["search", "docs"],
            "legacy_interface_id": "EIMS-DOC-0042",
            "required_env_keys": ["DOCS_INDEX_PATH"],
            "owner_org": "platform-team",
        }
    )


RELAXED_CONFIG = "name_structure: none\nknown_tools: [fetch_page]\n"
"""The gate configuration tests of other rules run under: their tools have short MCP-style names
(``search_documents``) and name ``fetch_page``, a tool of another server. The naming rules
have their own tests, under the default configuration."""


def write_definition(
    root: Path,
    data: Any,
    *,
    category: str = "docs",
    stem: str | None = None,
    relaxed: bool = True,
) -> Path:
    """Write ``data`` as YAML to ``root/category/stem.yml`` (stem defaults to ``data['name']``).

    With ``relaxed`` (the default), also write :data:`RELAXED_CONFIG` as ``root/air-check.yml``
    unless the directory already has one.
    """
    config = root / "air-check.yml"
    if relaxed and not config.exists():
        root.mkdir(parents=True, exist_ok=True)
        config.write_text(RELAXED_CONFIG, encoding="utf-8")
    name = stem if stem is not None else str(data["name"])
    path = root / category / f"{name}.yml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(data, allow_unicode=True, sort_keys=False), encoding="utf-8")
    return path
