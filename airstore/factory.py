"""``create_storage``: build and open a backend from a URL or keyword options."""

from __future__ import annotations

import importlib
from typing import Any, cast

from airstore.errors import InvalidArgumentError
from airstore.types import Store

__all__ = ["BACKENDS", "create_storage", "parse_store_url"]

DEFAULT_STORE_URL = "file://.air/data"

# scheme -> "module:Class". Imported lazily so a backend's dependencies load only when used.
BACKENDS: dict[str, str] = {
    "memory": "airstore.memory:MemoryStore",
    "file": "airstore.file:FileStore",
    "sqlite": "airstore.sqlite:SqliteStore",
    "redis": "airstore.redis_store:RedisStore",
}


def parse_store_url(url: str) -> tuple[str, str | None]:
    """Split a store URL into ``(type, location)``.

    ``memory://`` → ``("memory", None)``; ``file://.air/data`` → ``("file", ".air/data")`` (a
    third slash makes it absolute: ``file:///var/air``); ``sqlite:///air.db`` → relative
    ``air.db``, ``sqlite:////var/air.db`` → absolute; ``redis://host:6379/0`` is passed whole.
    """
    if not isinstance(url, str) or "://" not in url:
        raise InvalidArgumentError(
            f"store URL {url!r} must look like memory://, file://PATH, sqlite:///PATH or "
            "redis://HOST:PORT/DB"
        )
    scheme, rest = url.split("://", 1)
    scheme = scheme.lower()
    if scheme in ("redis", "rediss", "unix"):
        return "redis", url
    if scheme not in BACKENDS:
        raise InvalidArgumentError(
            f"unknown store scheme {scheme!r} in {url!r}; use one of {sorted(BACKENDS)}"
        )
    if scheme == "memory":
        return "memory", None
    if scheme == "sqlite":
        rest = rest[1:] if rest.startswith("/") else rest
    if not rest:
        raise InvalidArgumentError(f"store URL {url!r} names no path")
    return scheme, rest


def _backend_class(kind: str) -> type[Any]:
    target = BACKENDS.get(kind)
    if target is None:
        raise InvalidArgumentError(f"unknown store type {kind!r}; use one of {sorted(BACKENDS)}")
    module_name, _, cls_name = target.partition(":")
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise InvalidArgumentError(f"store type {kind!r} is not available: {exc}") from exc
    return cast(type[Any], getattr(module, cls_name))


async def create_storage(
    url: str | None = None,
    *,
    type: str | None = None,
    path: str | None = None,
    **options: Any,
) -> Store:
    """Create a store and open it.

    Args:
        url: ``memory://``, ``file://PATH``, ``sqlite:///PATH`` or ``redis://HOST:PORT/DB``.
        type: instead of a URL: ``"memory"``, ``"file"``, ``"sqlite"`` or ``"redis"``.
        path: the data directory (file), database file (sqlite) or URL (redis) with ``type``.
        **options: passed to the backend (``default_ttl``, ``read_only``, ``durability`` …).

    Returns:
        The opened store; close it with ``await store.close()`` or use ``async with``.

    Raises:
        InvalidArgumentError: the URL or type is unknown, or a path is missing.
    """
    if url is not None and type is not None:
        raise InvalidArgumentError("pass either a URL or type=..., not both")
    if url is not None:
        kind, location = parse_store_url(url)
    elif type is not None:
        kind, location = type, path
    else:
        kind, location = parse_store_url(DEFAULT_STORE_URL)
    cls = _backend_class(kind)
    if kind == "memory":
        store = cls(**options)
    else:
        if not location:
            raise InvalidArgumentError(f"store type {kind!r} needs a path")
        store = cls(location, **options)
    await store.init()
    return cast(Store, store)
