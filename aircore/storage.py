"""Which store a server uses, and telling the user: the one place a default store is chosen.

A server given an open store uses it; given a URL, opens it. Given none, a server that meters
keeps its calls in the default location (:func:`airstore.resolve_store_location`:
``AIR_DATA_DIR``, else ``.air/data`` under the working directory when writable, else the
per-user data directory), and one that does not stays in memory.

:class:`~aircore.AirServer` holds what it was given and chooses nothing: as it starts (``async
with server``, an in-process ``call_tool``, a transport's start) it asks :func:`open_storage`.
:func:`announce_store` says on stderr where a server that named no store meters; the
composition root calls it once the server started (:func:`aircore.serving.run_server`, which
``server.run()`` and ``air serve`` run).
"""

from __future__ import annotations

import logging
import sys
from typing import TypeAlias

from airstore import MemoryStore, Store, StoreLocation, create_storage, resolve_store_location

__all__ = ["Storage", "announce_store", "open_storage"]

logger = logging.getLogger(__name__)

Storage: TypeAlias = str | Store | None
"""What a server is given for its store: a store URL, an open :class:`~airstore.Store` (not
closed by the server), or ``None`` (the default: see :func:`open_storage`)."""


async def open_storage(storage: Storage, *, metering: bool) -> tuple[Store, StoreLocation | None]:
    """Open the store of a server's run.

    Args:
        storage: the store given (a URL, an open store), or ``None``.
        metering: whether the server meters (a server that names no store then keeps its
            calls in the default location; one that does not, in memory).

    Returns:
        The store, initialised, and where it was opened (``None`` for an open store given,
        or memory).

    Raises:
        InvalidArgumentError: the URL (or ``AIR_DATA_DIR``) is not a usable store location.
        AirstoreError: the store cannot be opened.
    """
    if isinstance(storage, Store):
        await storage.init()
        return storage, None
    if storage is None and not metering:
        memory = MemoryStore()
        await memory.init()
        return memory, None
    location = resolve_store_location(storage)
    store = await create_storage(location.url)
    if location.source != "explicit":
        logger.info("metering to %s", location.describe())
    return store, location


def announce_store(name: str, location: StoreLocation | None) -> None:
    """Tell the user on stderr where a started server meters, when it chose the place itself
    (the default location): ``air: <name> metering to <url> (<why>)``."""
    if location is not None and location.source != "explicit":
        print(f"air: {name} metering to {location.describe()}", file=sys.stderr)
