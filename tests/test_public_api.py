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
