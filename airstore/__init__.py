"""airstore: async key-value + append-log storage for MCP servers.

Backends: :class:`MemoryStore`, :class:`FileStore`, ``SqliteStore``, ``RedisStore``; open one with
:func:`create_storage`. Every failure is an :class:`AirstoreError`.
"""

from airstore._recovery import CheckReport, Finding, NamespaceCheck, NamespaceStats
from airstore._validate import to_epoch_ms
from airstore.errors import (
    AirstoreError,
    CorruptDataError,
    InvalidArgumentError,
    InvalidKeyError,
    InvalidNamespaceError,
    InvalidValueError,
    ReadOnlyStoreError,
    StorageIOError,
    StoreClosedError,
    StoreLockedError,
)
from airstore.factory import create_storage, parse_store_url
from airstore.file import FileStore
from airstore.location import StoreLocation, default_locations, resolve_store_location
from airstore.memory import MemoryStore
from airstore.redis_store import RedisStore
from airstore.sqlite import SqliteStore
from airstore.types import Entry, JSONValue, Store, TimeBound

__all__ = [
    "AirstoreError",
    "CheckReport",
    "CorruptDataError",
    "Entry",
    "FileStore",
    "Finding",
    "InvalidArgumentError",
    "InvalidKeyError",
    "InvalidNamespaceError",
    "InvalidValueError",
    "JSONValue",
    "MemoryStore",
    "NamespaceCheck",
    "NamespaceStats",
    "ReadOnlyStoreError",
    "RedisStore",
    "SqliteStore",
    "StorageIOError",
    "Store",
    "StoreClosedError",
    "StoreLocation",
    "StoreLockedError",
    "TimeBound",
    "create_storage",
    "default_locations",
    "parse_store_url",
    "resolve_store_location",
    "to_epoch_ms",
]
