"""``create_storage`` and ``store_exists``: open a backend, or look for one, from a URL.

Each backend kind has one row in a name → functions table; the functions import their backend
module inside, so redis and aiosqlite load only when such a store is used. Callers (the CLI,
the dashboard) never name backend kinds: they pass a URL and ``read_only=True``.
"""

from __future__ import annotations

import os
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from airstore.errors import (
    InvalidArgumentError,
    ReadOnlyUnsupportedError,
    StorageIOError,
)
from airstore.location import default_data_dir
from airstore.types import Store

__all__ = ["DEFAULT_STORE_URL", "create_storage", "parse_store_url", "store_exists"]

DEFAULT_STORE_URL = "file://.air/data"
"""The store every command and server uses when given none, in most cases: ``.air/data`` under
the working directory (see :func:`~airstore.resolve_store_location` for the rest)."""


def _open_memory(location: str | None, options: dict[str, Any]) -> Store:
    from airstore.memory import MemoryStore

    return MemoryStore(**options)


def _open_file(location: str | None, options: dict[str, Any]) -> Store:
    from airstore.file import FileStore

    return FileStore(location or default_data_dir(), **options)


def _open_sqlite(location: str | None, options: dict[str, Any]) -> Store:
    from airstore.sqlite import SqliteStore

    return SqliteStore(_need(location, "sqlite"), **options)


def _open_redis(location: str | None, options: dict[str, Any]) -> Store:
    from airstore.redis_store import RedisStore

    return RedisStore(_need(location, "redis"), **options)


def _need(location: str | None, kind: str) -> str:
    if not location:
        raise InvalidArgumentError(f"store type {kind!r} needs a path")
    return location


async def _memory_exists(location: str | None) -> bool:
    return True  # an in-process store is always there (and empty when new)


def _path_exists(location: str | None, *, directory: bool) -> bool:
    path = os.path.abspath(_need(location, "file" if directory else "sqlite"))
    if not os.path.exists(path):
        return False
    if directory != os.path.isdir(path):
        expected = "a directory" if directory else "a database file"
        raise InvalidArgumentError(f"{path} is not {expected}", path=path)
    if not os.access(path, os.R_OK | (os.X_OK if directory else 0)):
        raise StorageIOError(f"{path} cannot be read: permission denied", path=path)
    return True


async def _file_exists(location: str | None) -> bool:
    return _path_exists(location, directory=True)


async def _sqlite_exists(location: str | None) -> bool:
    return _path_exists(location, directory=False)


async def _redis_exists(location: str | None) -> bool:
    store = _open_redis(location, {"read_only": True})
    try:
        await store.init()  # connects and checks the server: StorageIOError when unreachable
    finally:
        await store.close()
    return True


@dataclass(frozen=True, slots=True)
class _Kind:
    open: Callable[[str | None, dict[str, Any]], Store]
    exists: Callable[[str | None], Awaitable[bool]]
    read_only: bool


_TABLE: dict[str, _Kind] = {
    "memory": _Kind(_open_memory, _memory_exists, read_only=False),
    "file": _Kind(_open_file, _file_exists, read_only=True),
    "sqlite": _Kind(_open_sqlite, _sqlite_exists, read_only=True),
    "redis": _Kind(_open_redis, _redis_exists, read_only=True),
}


def parse_store_url(url: str) -> tuple[str, str | None]:
    """Split a store URL into ``(type, location)``.

    ``memory://`` → ``("memory", None)``; ``file://.air/data`` → ``("file", ".air/data")`` (a
    third slash makes it absolute: ``file:///var/air``); ``sqlite:///air.db`` → relative
    ``air.db``, ``sqlite:////var/air.db`` → absolute; ``redis://host:6379/0`` is passed whole.

    Raises:
        InvalidArgumentError: not a store URL, an unknown scheme, or no path.
    """
    if not isinstance(url, str) or "://" not in url:
        raise InvalidArgumentError(
            f"store URL {url!r} must look like memory://, file://PATH, sqlite:///PATH or "
            "redis://HOST:PORT/DB"
        )
    scheme, rest = url.split("://", 1)
    scheme = scheme.lower()
    if scheme in ("redis", "rediss", "unix", "redis+cluster", "redis+sentinel"):
        return "redis", url
    if scheme not in _TABLE:
        raise InvalidArgumentError(
            f"unknown store scheme {scheme!r} in {url!r}; use one of {sorted(_TABLE)}"
        )
    if scheme == "memory":
        return "memory", None
    if scheme == "sqlite":
        rest = rest[1:] if rest.startswith("/") else rest
    if not rest:
        raise InvalidArgumentError(f"store URL {url!r} names no path")
    return scheme, rest


def _resolve(url: str | None, type: str | None, path: str | None) -> tuple[_Kind, str, str | None]:
    if url is not None and type is not None:
        raise InvalidArgumentError("pass either a URL or type=..., not both")
    if url is not None:
        kind, location = parse_store_url(url)
    elif type is not None:
        kind, location = type, path
    else:  # the default location of every command
        kind, location = "file", default_data_dir()
    row = _TABLE.get(kind)
    if row is None:
        raise InvalidArgumentError(f"unknown store type {kind!r}; use one of {sorted(_TABLE)}")
    return row, kind, location


async def create_storage(
    url: str | None = None,
    *,
    type: str | None = None,
    path: str | None = None,
    read_only: bool = False,
    **options: Any,
) -> Store:
    """Create a store and open it.

    Args:
        url: ``memory://``, ``file://PATH``, ``sqlite:///PATH`` or ``redis://HOST:PORT/DB``;
            neither ``url`` nor ``type``: a file store at the default location every command
            uses (:func:`~airstore.resolve_store_location`).
        type: instead of a URL: ``"memory"``, ``"file"``, ``"sqlite"`` or ``"redis"``.
        path: the data directory (file), database file (sqlite) or URL (redis) with ``type``;
            a file store without one is at the default location.
        read_only: open for reading beside the writers; every write raises
            :class:`~airstore.ReadOnlyStoreError`.
        **options: passed to the backend (``default_ttl``, ``durability`` …).

    Returns:
        The opened store; close it with ``await store.close()`` or use ``async with``.

    Raises:
        InvalidArgumentError: the URL or type is unknown, or a sqlite or redis store has no
            path.
        ReadOnlyUnsupportedError: ``read_only=True`` for a backend without a read-only mode
            (``memory://``).
    """
    row, kind, location = _resolve(url, type, path)
    if read_only:
        if not row.read_only:
            raise ReadOnlyUnsupportedError(
                f"a {kind} store cannot be opened read-only: another process's memory cannot "
                "be read; use a file://, sqlite:// or redis:// store to share data"
            )
        options["read_only"] = True
    store = row.open(location, options)
    await store.init()
    return store


async def store_exists(url: str) -> bool:
    """Whether ``url`` names a store that is there to be read, without creating anything.

    A ``file://`` directory or a ``sqlite://`` file exists once something was written there; a
    ``redis://`` store exists when the server answers; ``memory://`` always exists (empty).

    Returns:
        False when nothing was ever written at that location.

    Raises:
        InvalidArgumentError: a bad URL, or the location is the wrong kind of thing (a file
            where a data directory belongs, or the reverse); ``.path`` names it.
        StorageIOError: the location cannot be read (permission denied) or the server is
            unreachable.
    """
    row, _kind, location = _resolve(url, None, None)
    return await row.exists(location)
