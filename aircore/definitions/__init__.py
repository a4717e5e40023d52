"""The tool-definition standard: one YAML file per tool is the source of truth for its MCP
metadata (``tools/list``), the manifest and the meter, checked by the ``air check`` quality gate.
"""

from aircore.definitions.config import (
    DEFAULT_BANNED_PHRASES,
    DEFAULT_INJECTED_FIELDS,
    GateConfig,
    load_gate_config,
)
from aircore.definitions.errors import DefinitionNotFoundError, ToolDefinitionError
from aircore.definitions.loader import (
    DEFAULT_DEFINITIONS_DIR,
    DefinitionFile,
    build_definition,
    load_definitions,
    read_definition_files,
)
from aircore.definitions.manifest import build_manifest, dump_manifest, manifest_from_definitions
from aircore.definitions.meta import is_registered, meta_value
from aircore.definitions.model import ToolDefinition, ToolDescription
from aircore.definitions.plugin import definitions_plugin, tools_as_registered
from aircore.definitions.render import render_description, render_meta, render_tool
from aircore.definitions.rules import check_file, check_files, check_pairing
from aircore.definitions.types import Problem

__all__ = [
    "DEFAULT_BANNED_PHRASES",
    "DEFAULT_DEFINITIONS_DIR",
    "DEFAULT_INJECTED_FIELDS",
    "DefinitionFile",
    "DefinitionNotFoundError",
    "GateConfig",
    "Problem",
    "ToolDefinition",
    "ToolDefinitionError",
    "ToolDescription",
    "build_definition",
    "build_manifest",
    "check_file",
    "check_files",
    "check_pairing",
    "definitions_plugin",
    "dump_manifest",
    "is_registered",
    "load_definitions",
    "load_gate_config",
    "manifest_from_definitions",
    "meta_value",
    "read_definition_files",
    "render_description",
    "render_meta",
    "render_tool",
    "tools_as_registered",
]
