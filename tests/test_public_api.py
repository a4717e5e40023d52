"""Pin each package's public surface: a change to __all__ must be deliberate."""

from __future__ import annotations

import importlib

import pytest

EXPECTED = {
    "airstore": [
        "AirstoreError",
        "CorruptDataError",
        "Entry",
        "FileStore",
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
        "ROLLUPS_NAMESPACE",
        "AirmeterError",
        "BudgetExceededError",
        "CallRecord",
        "CallUsage",
        "Classification",
        "Classifier",
        "Layer",
        "LayerInfo",
        "LayerStats",
        "MemorySink",
        "Meter",
        "MeterClosedError",
        "MeterConfigError",
        "MeterStats",
        "Recorder",
        "Redactor",
        "Rule",
        "SeriesPoint",
        "ServerStats",
        "Sink",
        "Snapshot",
        "StoreSink",
        "ToolStats",
        "classify",
        "current_usage",
        "parse_layer",
        "redact",
        "report_usage",
        "snapshot",
        "split_words",
    ],
}


@pytest.mark.parametrize("package", sorted(EXPECTED))
def test_public_surface_is_pinned(package: str) -> None:
    module = importlib.import_module(package)
    assert module.__all__ == EXPECTED[package]
    for name in module.__all__:
        assert hasattr(module, name), name
