"""The key-value part of a FileStore: namespaces loaded on first use, sets, counters, reads.

:class:`airstore.FileStore` holds one over its directory state (``_dirstate``) beside the log
part; a key is put by ``_kvput.put`` (the one way), and ``_kvspace`` says how keys reach the
shared journal.
"""

from __future__ import annotations

import asyncio
import builtins

from airstore import _kvput
from airstore._dirstate import DirState
from airstore._kvspace import MISSING, KVSpace
from airstore._persist import INLINE_WRITE_BYTES
from airstore._validate import (
    check_by,
    check_counter,
    check_key,
    check_namespace,
    check_prefix,
    check_ttl,
    encode_value,
)
from airstore.errors import InvalidArgumentError, StorageIOError
from airstore.types import JSONValue

__all__ = ["FileKeys"]


class FileKeys:
    """The keys of a FileStore: its KV namespaces over the directory state ``state``.

    Args:
        state: the directory state the store's parts share.
    """

    def __init__(self, state: DirState) -> None:
        self._dir = state
        self.spaces: dict[str, KVSpace] = {}  # the namespaces loaded, by name
        self.loading: dict[str, asyncio.Future[KVSpace]] = {}  # first loads under way

    def close(self) -> None:
        """Close every namespace's journal."""
        for space in self.spaces.values():
            space.close()

    # -- namespaces --------------------------------------------------------------------------
    async def space(self, ns: str) -> KVSpace:
        """The namespace's keys, loaded on first use with the files read off the loop; then
        what other writers appended since the last look, at most once per loop turn."""
        try:
            space = self.spaces.get(ns)
        except TypeError:  # an unhashable namespace: _load names it
            space = None
        if space is None:
            space = await self._load(ns)
        if self._dir.read_only:  # a reader looks at every call
            self._dir.io(space.refresh, ns)
        elif not space.fresh:
            space.fresh = True
            asyncio.get_running_loop().call_soon(space.mark_stale)
            self._dir.io(space.refresh, ns)
        return space

    async def _load(self, ns: str) -> KVSpace:
        check_namespace(ns)
        loading = self.loading.get(ns)
        if loading is not None:  # another caller is loading it: share that load
            return await asyncio.shield(loading)
        fut: asyncio.Future[KVSpace] = asyncio.get_running_loop().create_future()
        self.loading[ns] = fut
        try:
            space = KVSpace(
                self._dir.path,
                ns,
                read_only=self._dir.read_only,
                clock=self._dir.clock,
                findings=self._dir.findings,
            )
            try:
                await space.load_async()
            except OSError as exc:
                space.close()
                raise StorageIOError(
                    f"I/O error in namespace {ns!r}: {exc}", namespace=ns, path=self._dir.path
                ) from exc
            self._dir.ensure_open()
            space.fresh = True
            asyncio.get_running_loop().call_soon(space.mark_stale)
            self.spaces[ns] = space
            fut.set_result(space)
            return space
        except BaseException as exc:
            fut.set_exception(exc)
            fut.exception()  # retrieved: the waiters re-raise it
            raise
        finally:
            del self.loading[ns]

    async def set(self, ns: str, key: str, value: JSONValue, ttl: float | None = None) -> None:
        """Store ``value``; see :meth:`airstore.Store.set`.

        Raises:
            InvalidNamespaceError, InvalidKeyError, InvalidValueError, InvalidArgumentError:
                bad input; nothing is changed.
            ReadOnlyStoreError: the store is read-only.
        """
        state = self._dir
        persist = state.write_ok
        if persist is None:
            persist = state.writer()
        try:
            space = self.spaces[ns]
        except (KeyError, TypeError):  # not loaded yet, or unhashable: _space names it
            space = None
        if space is None:
            space = await self.space(ns)
        if ttl is None and state.default_ttl is None:
            exp = None
        else:
            try:
                seconds = state.default_ttl if ttl is None else check_ttl(ttl)
            except InvalidArgumentError:
                check_key(ns, key)  # a bad key or value is named before a bad TTL
                encode_value(ns, key, value)
                raise
            exp = None if seconds is None else state.clock() + seconds
        _kvput.put(space, key, value, exp)  # validates first: bad input changes nothing
        pending = space.journal.pending
        if state.sync:
            await persist.written(pending)
        elif persist.drain_handle is None or len(pending) >= INLINE_WRITE_BYTES:
            persist.schedule(pending)

    async def incr(self, ns: str, key: str, by: int = 1, ttl: float | None = None) -> int:
        """Add ``by`` to the counter at ``key``; see :meth:`airstore.Store.incr`.

        The read and the write happen under the journal's lock after taking in every other
        writer's records, so increments from any number of processes never get lost. The
        record is written at once (in every durability mode).

        Raises:
            InvalidValueError: the key holds something other than an integer counter.
            InvalidArgumentError: a bad ``by`` or ``ttl``, or the result would overflow.
            ReadOnlyStoreError: the store is read-only.
            StorageIOError: the journal cannot be written (nothing is counted).
        """
        persist = self._dir.writer()
        space = await self.space(ns)
        check_key(ns, key)
        by = check_by(ns, key, by)
        seconds = self._dir.default_ttl if ttl is None else check_ttl(ttl)
        try:
            with space.journal.locked():
                space.commit_locked()
                now = self._dir.clock()
                current = space.live(key, now)
                if current is MISSING:
                    value = check_counter(ns, key, 0, by)
                    exp = None if seconds is None else now + seconds
                else:
                    value = check_counter(ns, key, current, by)
                    exp = space.expires.get(key)
                _kvput.put(space, key, value, exp)
                space.sweep(now)  # what expired meanwhile leaves memory (its records say so)
                space.append_locked()
        except OSError as exc:
            persist.write_failed(exc)  # nothing of it stays pending: it must not land later
            raise StorageIOError(
                f"cannot write the journal of {ns!r}: {exc}", namespace=ns, key=key
            ) from exc
        if self._dir.sync:
            await persist.written(space.journal.pending)
        return value

    async def get(self, ns: str, key: str) -> JSONValue:
        """Return the value, or ``None`` when missing or expired."""
        if self._dir.closed:
            self._dir.ensure_open()
        try:
            space = self.spaces.get(ns)
        except TypeError:  # an unhashable namespace: _space names it
            space = None
        if space is None or not space.fresh or self._dir.read_only:
            space = await self.space(ns)
        try:
            value = space.items.get(key, MISSING)
        except TypeError:  # unhashable key
            value = MISSING
        if value is MISSING:
            check_key(ns, key)
            return None
        if space.expires:
            exp = space.expires.get(key)
            if exp is not None and exp <= self._dir.clock():
                return None  # the writer's sweep forgets it (readers never change anything)
        return value

    async def delete(self, ns: str, key: str) -> bool:
        """Remove ``key``; True if it existed and had not expired."""
        persist = self._dir.writer()
        space = await self.space(ns)
        check_key(ns, key)
        live = space.delete(key, self._dir.clock())
        if live is None:
            return False
        await persist.written(space.journal.pending)
        return live

    async def list(self, ns: str, prefix: str = "") -> builtins.list[str]:
        """Live keys starting with ``prefix``, sorted."""
        return [k for k, _ in await self._live(ns, prefix)]

    async def entries(self, ns: str, prefix: str = "") -> builtins.list[tuple[str, JSONValue]]:
        """Live ``(key, value)`` pairs starting with ``prefix``, sorted by key."""
        return await self._live(ns, prefix)

    async def _live(self, ns: str, prefix: str) -> builtins.list[tuple[str, JSONValue]]:
        self._dir.ensure_open()
        space = await self.space(ns)
        check_prefix(prefix)
        now = self._dir.clock()
        if not self._dir.read_only:
            space.sweep(now)
        expires = space.expires
        return sorted(
            (k, v)
            for k, v in space.items.items()
            if k.startswith(prefix) and ((exp := expires.get(k)) is None or exp > now)
        )
