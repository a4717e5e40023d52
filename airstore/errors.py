"""Errors raised by airstore.

Every failure that leaves ``airstore`` is an :class:`AirstoreError`; foreign errors (``OSError``,
``sqlite3.Error``, JSON decode errors, redis errors) are translated at the boundary and chained
with ``raise ... from``.

    AirstoreError
    ├── InvalidNamespaceError   namespace fails ``^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$`` or has ``..``
    ├── InvalidKeyError         key is not a non-empty string
    ├── InvalidValueError       value is not JSON-serializable (raised by set/append itself)
    ├── InvalidArgumentError    any other bad argument (negative TTL, bad limit, bad URL …)
    │   └── ReadOnlyUnsupportedError   read_only=True asked of a backend that cannot (memory://)
    ├── StoreClosedError        the store was used after close()
    ├── StoreLockedError        another process holds the data dir (carries the holder's pid)
    ├── ReadOnlyStoreError      a write on a store opened read-only
    ├── CorruptDataError        a file cannot be read back (carries the path)
    ├── UnsupportedFormatError  a file written by a newer release (carries path and versions)
    └── StorageIOError          the disk or the server failed (ENOSPC, EIO, connection refused …)
        └── ReplicationError    durability="replicated": no replica confirmed the write in time
"""

from __future__ import annotations

__all__ = [
    "AirstoreError",
    "CorruptDataError",
    "InvalidArgumentError",
    "InvalidKeyError",
    "InvalidNamespaceError",
    "InvalidValueError",
    "ReadOnlyStoreError",
    "ReadOnlyUnsupportedError",
    "ReplicationError",
    "StorageIOError",
    "StoreClosedError",
    "StoreLockedError",
    "UnsupportedFormatError",
]


class AirstoreError(Exception):
    """Base class of every airstore error."""

    def __init__(
        self,
        message: str,
        *,
        namespace: str | None = None,
        key: str | None = None,
        path: str | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.namespace = namespace
        self.key = key
        self.path = path


class InvalidNamespaceError(AirstoreError):
    """The namespace is not a safe file-name-like identifier."""


class InvalidKeyError(AirstoreError):
    """The key is not a non-empty string."""


class InvalidValueError(AirstoreError):
    """The value cannot be stored as JSON."""


class InvalidArgumentError(AirstoreError):
    """An argument other than namespace, key or value is invalid."""


class ReadOnlyUnsupportedError(InvalidArgumentError):
    """``read_only=True`` was asked of a backend that has no read-only mode (``memory://``:
    another process's memory cannot be read)."""


class StoreClosedError(AirstoreError):
    """The store was used after :meth:`close`."""


class ReadOnlyStoreError(AirstoreError):
    """A write was attempted on a store opened with ``read_only=True``."""


class StoreLockedError(AirstoreError):
    """Another process holds the writer lock of the data directory."""

    def __init__(self, message: str, *, path: str | None = None, pid: int | None = None) -> None:
        super().__init__(message, path=path)
        self.pid = pid


class CorruptDataError(AirstoreError):
    """A stored file cannot be parsed."""


class StorageIOError(AirstoreError):
    """The underlying disk, database or server failed."""


class ReplicationError(StorageIOError):
    """A RedisStore write in ``durability="replicated"`` mode that no replica confirmed within
    the timeout (or the master had no replica connected): it is not acknowledged. The master
    may hold it (the write was sent) unless ``sent`` is False.
    """

    def __init__(self, message: str, *, path: str, sent: bool, confirmed: int) -> None:
        super().__init__(message, path=path)
        self.sent = sent
        self.confirmed = confirmed


class UnsupportedFormatError(AirstoreError):
    """A file carries a format version this release cannot read (written by a newer release).

    Nothing is read from it and nothing is changed: upgrade air to read this data directory.
    """

    def __init__(self, message: str, *, path: str, found: int, supported: int) -> None:
        super().__init__(message, path=path)
        self.found = found
        self.supported = supported
