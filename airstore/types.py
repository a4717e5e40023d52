"""The vocabulary of airstore: the ``Store`` protocol and the small aliases around it."""

from __future__ import annotations

import builtins
from collections.abc import Callable, Iterable
from datetime import datetime
from types import TracebackType
from typing import TYPE_CHECKING, Any, Protocol, Self, TypeAlias, runtime_checkable

if TYPE_CHECKING:
    from airstore._reports import CheckReport, NamespaceStats

__all__ = ["Clock", "Entry", "Inspectable", "JSONValue", "Store", "TimeBound"]

JSONValue: TypeAlias = Any
"""Any plain JSON value: dict (str keys), list, str, int, float, bool or None."""

Entry: TypeAlias = dict[str, Any]
"""One append-log entry: a JSON object; the store adds ``_ts`` (epoch milliseconds, int)."""

TimeBound: TypeAlias = "datetime | int | float | None"
"""A query time bound: an aware or naive (local) ``datetime``, or epoch milliseconds."""

Clock: TypeAlias = Callable[[], float]
"""Returns the current time in seconds since the epoch (``time.time`` by default)."""


@runtime_checkable
class Store(Protocol):
    """Async key-value store with TTL plus a per-namespace append log.

    Every backend (MemoryStore, FileStore, SqliteStore, RedisStore) satisfies this protocol and
    passes the same contract test suite.
    """

    async def init(self) -> None:
        """Open files/connections. Idempotent; ``async with`` calls it."""

    async def close(self) -> None:
        """Flush and release everything. Idempotent."""

    async def set(self, ns: str, key: str, value: JSONValue, ttl: float | None = None) -> None:
        """Store ``value`` under ``key``; ``ttl`` in seconds (``None``: the store default)."""

    async def get(self, ns: str, key: str) -> JSONValue:
        """Return the value, or ``None`` when missing or expired."""

    async def delete(self, ns: str, key: str) -> bool:
        """Remove ``key``; True if it existed (and had not expired)."""

    async def incr(self, ns: str, key: str, by: int = 1, ttl: float | None = None) -> int:
        """Atomically add ``by`` to the integer counter at ``key`` and return the new value.

        A missing or expired counter starts at 0 and gets ``ttl`` (``None``: the store
        default); a live one keeps its expiry. Atomic against every other ``incr``/``set`` of
        the same store, in this process and in others sharing it. Counters stay within
        ±(2**53 - 1).
        """

    async def list(self, ns: str, prefix: str = "") -> builtins.list[str]:
        """Keys starting with ``prefix``, sorted, expired ones excluded."""

    async def entries(self, ns: str, prefix: str = "") -> builtins.list[tuple[str, JSONValue]]:
        """``(key, value)`` pairs starting with ``prefix``, sorted by key, expired excluded."""

    async def append(self, ns: str, entry: Entry) -> Entry:
        """Append ``entry`` to the namespace's log; return the stored dict (with ``_ts``)."""

    async def append_many(self, ns: str, entries: Iterable[Entry]) -> builtins.list[Entry]:
        """Append every entry (all validated before any is written); return the stored dicts."""

    async def query(
        self,
        ns: str,
        limit: int = 100,
        offset: int = 0,
        since: TimeBound = None,
        until: TimeBound = None,
        filter: dict[str, JSONValue] | None = None,
    ) -> builtins.list[Entry]:
        """Log entries newest first; ``since`` inclusive, ``until`` exclusive; field equality."""

    async def set_log_retention(
        self, ns: str, *, max_age: float | None = None, max_bytes: int | None = None
    ) -> None:
        """Cap the append log of ``ns``: entries older than ``max_age`` seconds and the oldest
        beyond ``max_bytes`` (of encoded entries, or of files) go; ``None``: no such cap.
        Each backend does it its native way (docs/storage.md, "Log retention")."""

    async def flush(self) -> None:
        """Write everything pending to durable storage."""

    async def __aenter__(self) -> Self: ...

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None: ...


@runtime_checkable
class Inspectable(Protocol):
    """A store whose files can be checked and measured (``air store check`` / ``stats``)."""

    async def check(self) -> CheckReport:
        """Read every file without changing anything; report what recovery would find."""

    async def stats(self) -> builtins.list[NamespaceStats]:
        """Per namespace: keys, log entries, files and bytes."""

    async def close(self) -> None:
        """Release the store."""
