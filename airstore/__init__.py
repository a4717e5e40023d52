"""airstore: async key-value + append-log storage for MCP servers.

Backends: :class:`MemoryStore`, :class:`FileStore`, ``SqliteStore``, ``RedisStore``; open one with
:func:`create_storage` (``read_only=True`` beside the writers), look for one with
:func:`store_exists`. Every failure is an :class:`AirstoreError`. ``SqliteStore`` and
``RedisStore`` are imported on first use, so aiosqlite and redis load only when needed.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from airstore._reports import CheckReport, Finding, NamespaceCheck, NamespaceStats
from airstore._validate import has_non_finite, to_epoch_ms
from airstore.errors import (
    AirstoreError,
    CorruptDataError,
    InvalidArgumentError,
    InvalidKeyError,
    InvalidNamespaceError,
    InvalidValueError,
    ReadOnlyStoreError,
    ReadOnlyUnsupportedError,
    ReplicationError,
    StorageIOError,
    StoreClosedError,
    StoreLockedError,
    UnsupportedFormatError,
)
from airstore.factory import create_storage, parse_store_url, store_exists
from airstore.file import FileStore
from airstore.location import StoreLocation, default_locations, resolve_store_location
from airstore.memory import MemoryStore
from airstore.types import Entry, Inspectable, JSONValue, Store, TimeBound

if TYPE_CHECKING:
    from airstore.redis_store import RedisStore
    from airstore.sqlite import SqliteStore

__all__ = [
    "AirstoreError",
    "CheckReport",
    "CorruptDataError",
    "Entry",
    "FileStore",
    "Finding",
    "Inspectable",
    "InvalidArgumentError",
    "InvalidKeyError",
    "InvalidNamespaceError",
    "InvalidValueError",
    "JSONValue",
    "MemoryStore",
    "NamespaceCheck",
    "NamespaceStats",
    "ReadOnlyStoreError",
    "ReadOnlyUnsupportedError",
    "RedisStore",
    "ReplicationError",
    "SqliteStore",
    "StorageIOError",
    "Store",
    "StoreClosedError",
    "StoreLocation",
    "StoreLockedError",
    "TimeBound",
    "UnsupportedFormatError",
    "create_storage",
    "default_locations",
    "has_non_finite",
    "parse_store_url",
    "resolve_store_location",
    "store_exists",
    "to_epoch_ms",
]


def __getattr__(name: str) -> Any:
    """Import ``RedisStore`` / ``SqliteStore`` (and so redis / aiosqlite) on first use."""
    if name == "RedisStore":
        from airstore.redis_store import RedisStore

        return RedisStore
    if name == "SqliteStore":
        from airstore.sqlite import SqliteStore

        return SqliteStore
    raise AttributeError(f"module 'airstore' has no attribute {name!r}")
