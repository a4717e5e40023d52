"""Pin each package's public surface: a change to __all__ must be deliberate."""

from __future__ import annotations

import importlib

import pytest

EXPECTED = {
    "aircore.definitions": [
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
        "load_definitions",
        "load_gate_config",
        "manifest_from_definitions",
        "read_definition_files",
        "render_description",
        "render_meta",
        "render_tool",
    ],
    "aircore": [
        "AirError",
        "AirServer",
        "CallInfo",
        "DefinitionError",
        "ElicitResult",
        "ElicitationError",
        "InvalidParamsError",
        "InvalidRequestError",
        "MeterHook",
        "MethodNotFoundError",
        "Plugin",
        "Prompt",
        "Resource",
        "Tool",
        "ToolContext",
        "ToolTimeoutError",
        "cache_plugin",
        "define_plugin",
        "define_prompt",
        "define_resource",
        "define_server",
        "define_tool",
        "normalize_result",
        "params_to_json_schema",
        "retry_plugin",
        "timeout_plugin",
    ],
    "airstore": [
        "AirstoreError",
        "CorruptDataError",
        "Entry",
        "InvalidArgumentError",
        "InvalidKeyError",
        "InvalidNamespaceError",
        "InvalidValueError",
        "JSONValue",
        "MemoryStore",
        "ReadOnlyStoreError",
        "StorageIOError",
        "Store",
        "StoreClosedError",
        "StoreLockedError",
        "TimeBound",
        "create_storage",
        "parse_store_url",
    ],
    "airmeter": [
        "CALLS_NAMESPACE",
        "LAYERS",
        "CallRecord",
        "Layer",
        "LayerInfo",
        "Recorder",
        "Sink",
        "parse_layer",
    ],
}


@pytest.mark.parametrize("package", sorted(EXPECTED))
def test_public_surface_is_pinned(package: str) -> None:
    module = importlib.import_module(package)
    assert module.__all__ == EXPECTED[package]
    for name in module.__all__:
        assert hasattr(module, name), name
