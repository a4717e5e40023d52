"""RedisStore: the shared backend for many server instances, on redis.asyncio."""

from __future__ import annotations

import asyncio
import builtins
import contextlib
import logging
import math
import time
from collections.abc import Iterable, Sequence
from typing import Any

import orjson
import redis.asyncio as aioredis
from redis import exceptions as rex

from airstore import _exit
from airstore._batch import Batcher
from airstore._entry import stamp
from airstore._lifecycle import StoreBase
from airstore._redis_batch import command, outcomes, plan
from airstore._redis_codec import (
    check_db_path,
    decode_value,
    encode_value_payload,
    escape_glob,
    split_params,
    translate,
)
from airstore._redis_filter import scan_filtered
from airstore._redis_ops import RedisOps
from airstore._redis_replication import (
    DEFAULT_REPLICATION_TIMEOUT,
    Durability,
    ReplicationStats,
    ReplicationWatch,
)
from airstore._redis_topology import check_server, connect, hash_tag, no_retry, topology_of
from airstore._retention import Retention
from airstore._validate import (
    check_filter,
    check_key,
    check_limits,
    check_namespace,
    check_prefix,
    check_ttl,
    clamp_window,
    encode_value,
    matches,
    needle,
    to_epoch_ms,
)
from airstore.errors import (
    CorruptDataError,
    InvalidArgumentError,
    ReadOnlyStoreError,
    ReplicationError,
    StorageIOError,
    StoreClosedError,
)
from airstore.types import Clock, Entry, JSONValue, TimeBound

__all__ = ["RedisStore"]

logger = logging.getLogger(__name__)

DEFAULT_URL = "redis://127.0.0.1:6379/0"
DEFAULT_PREFIX = "air:"
DEFAULT_MAX_LOG_ENTRIES = 1_000_000
"""Approximate per-namespace stream length kept (``XADD … MAXLEN ~``); ``None`` keeps all."""
DEFAULT_SOCKET_TIMEOUT = 5.0
DEFAULT_CONNECT_TIMEOUT = 2.0
DEFAULT_MAX_CONNECTIONS = 32
DEFAULT_MAX_BATCH = 10_000
_URL_OPTIONS = ("prefix", "durability", "replicas", "replication_timeout")

_SCAN_COUNT = 1000
_PAGE = 1000
_BODY = b"d"

# One queued command: ("get", key) | ("set", [(key, payload, px), …]) | ("del", key)
#                   | ("incr", key, by, now, head, px, limit) | ("app", stream, [(ts, body), …]);
# the *_many calls queue many rows at once
_Op = tuple[Any, ...]


def _rows(op: _Op) -> int:
    """How many writes one queued operation carries."""
    if op[0] == "set":
        return len(op[1])
    if op[0] == "app":
        return len(op[2])
    return 1


_NOT_SENT = object()
"""A cluster reply slot whose command was refused before it was sent."""


def _written(ops: Sequence[_Op], results: Sequence[Any]) -> int:
    """How many writes of ``ops`` succeeded."""
    return sum(
        _rows(op)
        for op, result in zip(ops, results, strict=True)
        if op[0] != "get" and not isinstance(result, BaseException)
    )


def _by_node(reply: Any) -> dict[str, dict[str, Any]]:
    """An ``INFO`` sent to every primary, by node name (one primary answers unwrapped)."""
    if isinstance(reply, dict) and reply and all(isinstance(v, dict) for v in reply.values()):
        return reply
    return {"?": reply} if isinstance(reply, dict) else {}


def _address(name: str) -> tuple[str, int]:
    host, _, port = name.rpartition(":")
    return host, int(port) if port.isdigit() else 0


def _tag_of(op: _Op) -> str:
    """The hash tag (slot) of a get or set operation (a set's rows share a namespace)."""
    return hash_tag(op[1] if op[0] == "get" else op[1][0][0])


def _first_key(cmd: tuple[Any, ...]) -> Any:
    """The first key of a command this store builds (it routes the command)."""
    return cmd[3] if cmd[0] == "EVAL" else cmd[1]


def _replication_options(
    durability: object, replicas: object, timeout: object
) -> tuple[Durability, int, float]:
    """Check the replication options (from arguments or URL parameters).

    Raises:
        InvalidArgumentError: naming the bad option.
    """
    if durability != "async" and durability != "replicated":
        raise InvalidArgumentError(
            f"durability must be 'async' or 'replicated', got {durability!r}"
        )
    try:
        count = int(replicas)  # type: ignore[call-overload]
        seconds = float(timeout)  # type: ignore[arg-type]
    except (TypeError, ValueError) as exc:
        raise InvalidArgumentError(
            f"replicas must be an integer and replication_timeout seconds: {exc}"
        ) from exc
    if count < 1 or isinstance(replicas, bool):
        raise InvalidArgumentError(f"replicas must be at least 1, got {replicas!r}")
    if not 0 < seconds <= 60 or math.isnan(seconds):
        raise InvalidArgumentError(
            f"replication_timeout must be in (0, 60] seconds, got {timeout!r}"
        )
    return durability, count, seconds


class RedisStore(RedisOps, StoreBase):
    """Key-value with TTL plus a log per namespace (a Redis Stream), shared by many processes.

    Commands issued during one event-loop turn go to Redis in one pipeline, folded into a few
    commands (``MGET``, one Lua ``EVAL`` for the sets, one per stream for the appends), so
    concurrent callers share round trips; every awaited call returns after Redis answered it. TTL is
    decided by the store's ``clock`` (the expiry travels with the value) and also bounded in
    real time by Redis (``SET … PX``), so expired keys both read as missing and get reaped.
    Log entries get stream ids ``<_ts>-<seq>``; ``since``/``until`` map onto those ids. An entry
    whose ``_ts`` is older than the newest id in its stream is stored with the next free id, so
    it is ordered and time-windowed by when it arrived (its ``_ts`` is kept unchanged).

    On a Redis Cluster (``redis+cluster://``) every key carries its namespace as a hash tag
    (``P kv:{ns}:key``, ``P log:{ns}``), so each namespace lives in one slot and every
    multi-key command stays in it; through Sentinel (``redis+sentinel://``) the store follows
    the promoted master. See ``_redis_topology`` and docs/storage.md.

    Args:
        url: ``redis://[user:password@]host:port/db`` (also ``rediss://``, ``unix://``),
            ``redis+cluster://host:port[,host:port…]/`` or
            ``redis+sentinel://host:port[,host:port…]/master/db``; the query parameters
            ``?prefix=app:``, ``durability=``, ``replicas=`` and ``replication_timeout=`` set
            the options of the same names (handy with ``create_storage`` and ``--store``).
        prefix: prepended to every Redis key; separates applications sharing one database.
        default_ttl: TTL in seconds applied when ``set`` gets ``ttl=None``.
        clock: seconds since the epoch; injectable for tests.
        max_log_entries: approximate entries kept per namespace stream; ``None`` keeps all.
        read_only: refuse writes with :class:`ReadOnlyStoreError`.
        socket_timeout: seconds before a command without an answer fails.
        connect_timeout: seconds before an unreachable server fails a command.
        max_connections: connection pool size.
        max_batch: the most commands per pipeline.
        durability: ``"async"`` (acknowledged once the master has it; a failover can lose
            writes not yet replicated: counted in :attr:`replication`) or ``"replicated"``
            (each batch of writes waits with ``WAIT`` for ``replicas`` replicas, and is refused
            with :class:`~airstore.ReplicationError` when they do not confirm it in time).
        replicas: replicated mode: how many replicas must confirm a write.
        replication_timeout: replicated mode: seconds to wait for them.
    """

    def __init__(
        self,
        url: str = DEFAULT_URL,
        *,
        prefix: str = DEFAULT_PREFIX,
        default_ttl: float | None = None,
        clock: Clock = time.time,
        max_log_entries: int | None = DEFAULT_MAX_LOG_ENTRIES,
        read_only: bool = False,
        socket_timeout: float = DEFAULT_SOCKET_TIMEOUT,
        connect_timeout: float = DEFAULT_CONNECT_TIMEOUT,
        max_connections: int = DEFAULT_MAX_CONNECTIONS,
        max_batch: int = DEFAULT_MAX_BATCH,
        durability: Durability = "async",
        replicas: int = 1,
        replication_timeout: float = DEFAULT_REPLICATION_TIMEOUT,
    ) -> None:
        if not isinstance(url, str) or "://" not in url:
            raise InvalidArgumentError(f"RedisStore needs a redis:// URL, got {url!r}")
        if not isinstance(prefix, str):
            raise InvalidArgumentError(f"prefix must be a str, got {prefix!r}")
        if max_log_entries is not None and max_log_entries <= 0:
            raise InvalidArgumentError("max_log_entries must be positive or None")
        url, params = split_params(url, _URL_OPTIONS)
        url_prefix = params.get("prefix")
        durability, replicas, replication_timeout = _replication_options(
            params.get("durability", durability),
            params.get("replicas", replicas),
            params.get("replication_timeout", replication_timeout),
        )
        if durability == "replicated" and replication_timeout >= socket_timeout:
            raise InvalidArgumentError(
                f"replication_timeout ({replication_timeout} s) must be below socket_timeout "
                f"({socket_timeout} s): a WAIT outlasting the socket would fail its batch"
            )
        self._replicas = replicas
        self._wait_ms = max(1, int(replication_timeout * 1000))
        self._default_ttl = check_ttl(default_ttl)
        self._clock = clock
        self._prefix = url_prefix if url_prefix is not None and prefix == DEFAULT_PREFIX else prefix
        self._max_log = max_log_entries
        self._read_only = read_only
        topo = topology_of(url)
        self._cluster = topo.kind == "cluster"
        options = {
            "socket_timeout": socket_timeout,
            "connect_timeout": connect_timeout,
            "max_connections": max_connections,
        }
        self._closers: builtins.list[Any] = []
        if topo.kind != "node":
            self._client, self._closers = connect(topo, options)
            self.where = topo.where
            self._init_common(max_batch, durability)
            return
        check_db_path(url)
        try:
            # A blocking pool makes callers beyond max_connections wait for a free
            # connection (up to socket_timeout) instead of failing at once.
            pool = aioredis.BlockingConnectionPool.from_url(
                url,
                socket_timeout=socket_timeout,
                socket_connect_timeout=connect_timeout,
                max_connections=max_connections,
                timeout=socket_timeout,
                retry=no_retry(),  # a resent write could run twice (see _redis_topology)
            )
            self._client = aioredis.Redis.from_pool(pool)
        except ValueError as exc:
            raise InvalidArgumentError(f"bad redis URL {url!r}: {exc}") from exc
        kwargs = self._client.connection_pool.connection_kwargs
        self.where = (
            f"{kwargs.get('host', kwargs.get('path', '?'))}:{kwargs.get('port', '')}"
            f"/{kwargs.get('db', 0)}"
        )
        self._init_common(max_batch, durability)

    def _init_common(self, max_batch: int, durability: Durability) -> None:
        self.server_kind = ""
        """``"redis"`` or ``"valkey"`` once :meth:`init` has checked the server."""
        self.server_version = ""
        self._replication = ReplicationWatch(durability, self.where)
        self._node_clients: dict[tuple[str, int], Any] = {}
        self._nodes: dict[str, ReplicationWatch] = {}
        """Cluster: each master's figures, by ``host:port``."""
        self._max_batch = max_batch
        self._batcher: Batcher[_Op] = Batcher(self._run_batch, max_batch=max_batch)
        self._retention: dict[str, Retention] = {}
        self._entry_bytes: dict[str, tuple[int, int]] = {}  # ns -> (entries, bytes) appended
        self._trimmed: dict[str, float] = {}  # ns -> store-clock time of the last trim
        self._opened = False
        self._closed = False
        self._closing = False  # close() is draining: new commands are refused

    # -- lifecycle ---------------------------------------------------------------------------
    async def init(self) -> None:
        """Connect and check the server. Idempotent.

        Raises:
            StorageIOError: the server is unreachable or refuses commands.
        """
        self._ensure_open()
        if self._opened:
            return
        try:
            if self._cluster:
                await self._client.initialize()  # MOVED-aware slot map from the start-up nodes
                infos = list(
                    (
                        await self._client.info("server", target_nodes=self._client.ALL_NODES)
                    ).values()
                )
            else:
                infos = [await self._client.info("server")]
        except rex.RedisError as exc:
            raise translate(exc, self.where, "connect") from exc
        for info in infos:
            self.server_kind, self.server_version = check_server(info, self.where)
        self._opened = True
        _exit.track(self)

    def __repr__(self) -> str:
        return f"RedisStore({self.where!r}, prefix={self._prefix!r})"

    def close_at_exit(self) -> None:
        """Interpreter exit, the store never closed: every awaited write was answered by the
        server already; the sockets close with the process."""
        self._closed = True

    async def close(self) -> None:
        """Finish pending commands and close the connection pool. Idempotent."""
        if self._closed:
            return
        self._closing = True  # callers that keep submitting would keep the drain going forever
        try:
            await self._batcher.drain()
        finally:
            self._closed = True
            _exit.untrack(self)
            try:
                await self._client.aclose()
            finally:
                for other in [*self._node_clients.values(), *self._closers]:
                    await other.aclose()

    async def flush(self) -> None:
        """Wait until every command submitted so far has been answered (and the log caps
        applied)."""
        self._ensure_open()
        await self._batcher.drain()
        for ns in list(self._retention):
            self._trimmed.pop(ns, None)
            await self._retain(ns, 0, 0)

    def _ensure_open(self) -> None:
        if self._closed:
            raise StoreClosedError(f"RedisStore {self.where} is closed", path=self.where)

    def _submit(self, op: _Op, *, write: bool) -> Any:
        if self._closing:
            raise StoreClosedError(f"RedisStore {self.where} is closing", path=self.where)
        self._ensure_open()
        if write and self._read_only:
            raise ReadOnlyStoreError(f"RedisStore {self.where} is read-only", path=self.where)
        return self._batcher.submit(op)

    def _kv_key(self, ns: str, key: str) -> str:
        if self._cluster:  # the namespace is the hash tag: one slot per namespace
            return f"{self._prefix}kv:{{{ns}}}:{key}"
        return f"{self._prefix}kv:{ns}:{key}"

    def _log_key(self, ns: str) -> str:
        if self._cluster:
            return f"{self._prefix}log:{{{ns}}}"
        return f"{self._prefix}log:{ns}"

    @property
    def replication(self) -> ReplicationStats:
        """Acknowledged, unconfirmed and refused writes, and failovers seen (see
        :class:`~airstore._redis_replication.ReplicationStats`)."""
        return self._replication.stats(*self._nodes.values())

    # -- the pipeline ------------------------------------------------------------------------
    async def _run_batch(self, ops: Sequence[_Op]) -> list[Any]:
        watch = self._replication
        wait = watch.durability == "replicated" and any(op[0] != "get" for op in ops)
        if self._cluster:
            if wait and not self._nodes:
                await self._probe()
            results = await self._run_cluster(ops, wait=wait)
        else:
            if wait and watch.replicas_seen is None:
                await self._probe()
            if wait and watch.no_replica_known():
                return await self._refuse_writes(ops, list(range(len(ops))))
            results = await self._run_node(ops, wait=wait)
            watch.wrote(_written(ops, results))
        if watch.probe_due():
            await self._probe()
        return results

    async def _run_node(self, ops: Sequence[_Op], *, wait: bool) -> list[Any]:
        """One pipeline on one connection (a single node, or Sentinel's master); with ``wait``
        it ends with ``WAIT``, which covers every write this connection sent before it."""
        groups = plan(ops)
        commands = [
            command(kind, [ops[i] for i in members], self._max_log) for kind, members in groups
        ]
        if wait:
            commands.append(("WAIT", self._replicas, self._wait_ms))
        replies = await self._execute(self._client, commands, "pipeline")
        acked = replies.pop() if wait else None
        results = outcomes(ops, groups, replies, self._clock(), self.where)
        if wait:
            self._confirm(ops, results, acked, self._replication)
        return results

    async def _run_cluster(self, ops: Sequence[_Op], *, wait: bool) -> list[Any]:
        """Cluster: commands grouped per slot (each namespace is one); without ``wait`` the
        cluster client routes them (following MOVED/ASK). With ``wait``, each master's share
        goes down one connection to that master, ended by its own ``WAIT``; a master known to
        have no replica has its share refused unsent, and a master that fails fails only its
        share. Acknowledged writes are counted per master (for failovers)."""
        groups = plan(ops, slot=_tag_of)
        commands = [
            command(kind, [ops[i] for i in members], self._max_log) for kind, members in groups
        ]
        by_node: dict[tuple[str, int], list[int]] = {}
        for g, cmd in enumerate(commands):
            node = self._client.get_node_from_key(_first_key(cmd))
            by_node.setdefault((node.host, node.port), []).append(g)
        if not wait:
            routed = await self._execute(self._client, commands, "pipeline")
            results = outcomes(ops, groups, routed, self._clock(), self.where)
            for where, members in by_node.items():
                mine = [i for g in members for i in groups[g][1]]
                self._node_watch(where).wrote(
                    _written([ops[i] for i in mine], [results[i] for i in mine])
                )
            return results
        replies: list[Any] = [None] * len(commands)
        acks: dict[tuple[str, int], Any] = {}
        refused: list[int] = []

        async def one(where: tuple[str, int], members: builtins.list[int]) -> None:
            wait_here = True
            if self._node_watch(where).no_replica_known():  # its writes: refused, unsent
                for g in members:
                    if groups[g][0] != "get":
                        refused.extend(groups[g][1])
                        replies[g] = _NOT_SENT
                members = [g for g in members if groups[g][0] == "get"]
                wait_here = False
                if not members:
                    return
            wanted = [commands[g] for g in members]
            if wait_here:
                wanted.append(("WAIT", self._replicas, self._wait_ms))
            try:
                got = await self._execute(
                    self._node_client(where), wanted, "pipeline", cluster=True
                )
            except StorageIOError as exc:  # this master only
                got = [exc] * len(wanted)
            if wait_here:
                acks[where] = got.pop()
            for g, reply in zip(members, got, strict=True):
                replies[g] = reply

        await asyncio.gather(*(one(where, members) for where, members in by_node.items()))
        sent = [g for g, reply in enumerate(replies) if reply is not _NOT_SENT]
        results = outcomes(
            ops,
            [groups[g] for g in sent],
            [replies[g] for g in sent],
            self._clock(),
            self.where,
        )
        for where, members in by_node.items():
            if where not in acks:
                continue
            mine = sorted(i for g in members for i in groups[g][1])
            sub = [results[i] for i in mine]
            watch = self._node_watch(where)
            self._confirm([ops[i] for i in mine], sub, acks[where], watch)
            for i, result in zip(mine, sub, strict=True):
                results[i] = result
            watch.wrote(_written([ops[i] for i in mine], sub))
        if refused:
            for i, value in zip(
                refused, await self._refuse_writes([ops[i] for i in refused], []), strict=True
            ):
                results[i] = value
        return results

    def _node_watch(self, where: tuple[str, int]) -> ReplicationWatch:
        """Cluster: the replication figures of one master (by its address)."""
        name = f"{where[0]}:{where[1]}"
        watch = self._nodes.get(name)
        if watch is None:
            watch = self._nodes[name] = ReplicationWatch(self._replication.durability, name)
        return watch

    def _node_client(self, where: tuple[str, int]) -> Any:
        """A plain client to one cluster master (for a pipeline ended by ``WAIT``)."""
        client = self._node_clients.get(where)
        if client is None:
            kwargs = self._client.connection_kwargs
            client = self._node_clients[where] = aioredis.Redis(
                retry=no_retry(),
                host=where[0],
                port=where[1],
                username=kwargs.get("username"),
                password=kwargs.get("password"),
                socket_timeout=kwargs.get("socket_timeout"),
                socket_connect_timeout=kwargs.get("socket_connect_timeout"),
            )
        return client

    async def _execute(
        self,
        client: Any,
        commands: builtins.list[tuple[Any, ...]],
        action: str,
        *,
        cluster: bool = False,
    ) -> builtins.list[Any]:
        replies: builtins.list[Any]
        try:
            if len(commands) == 1:  # a lone command needs no pipeline
                try:
                    replies = [await client.execute_command(*commands[0])]
                except rex.ResponseError as exc:
                    replies = [exc]
            else:
                async with client.pipeline(transaction=False) as pipe:
                    for cmd in commands:
                        pipe.execute_command(*cmd)
                    replies = await pipe.execute(raise_on_error=False)
        except rex.RedisError as exc:
            if cluster:  # a plain connection to a master that moved or died
                await self._refresh_slots()
            raise translate(exc, self.where, action) from exc
        if cluster and any(
            isinstance(r, rex.ResponseError) and str(r).startswith(("MOVED", "ASK"))
            for r in replies
        ):
            await self._refresh_slots()
        return replies

    async def _refresh_slots(self) -> None:
        with contextlib.suppress(rex.RedisError):
            await self._client.nodes_manager.initialize()

    def _confirm(
        self,
        ops: Sequence[_Op],
        results: builtins.list[Any],
        acked: Any,
        watch: ReplicationWatch,
    ) -> None:
        """Replicated mode: refuse the batch's writes unless ``acked`` (``WAIT``'s answer)
        reaches the replicas wanted."""
        if not isinstance(acked, BaseException) and int(acked) >= self._replicas:
            return
        confirmed = 0 if isinstance(acked, BaseException) else int(acked)
        error = ReplicationError(
            f"redis at {self.where}: {confirmed} of {self._replicas} replica(s) confirmed the "
            f"write within {self._wait_ms} ms (durability='replicated'): it is not "
            "acknowledged, and the master may still hold it",
            path=self.where,
            sent=True,
            confirmed=confirmed,
        )
        for i, op in enumerate(ops):
            if op[0] != "get" and not isinstance(results[i], BaseException):
                results[i] = error
                self._replication.refused += _rows(op)
        watch.replicas_checked = float("-inf")  # ask again before the next write
        self._replication.next_probe = 0.0

    async def _refuse_writes(self, ops: Sequence[_Op], run_reads: builtins.list[int]) -> list[Any]:
        """Replicated mode with no replica connected: refuse the writes at once (nothing is
        sent), run the reads among ``run_reads`` (indices of ``ops``)."""
        error = ReplicationError(
            f"redis at {self.where} has no replica connected, so no write can be confirmed "
            "(durability='replicated'): refused, nothing was sent",
            path=self.where,
            sent=False,
            confirmed=0,
        )
        reads = [i for i in run_reads if ops[i][0] == "get"]
        results: list[Any] = [error] * len(ops)
        self._replication.refused += sum(_rows(op) for op in ops if op[0] != "get")
        if reads:
            got = await self._run_node([ops[i] for i in reads], wait=False)
            for i, value in zip(reads, got, strict=True):
                results[i] = value
        return results

    async def _probe(self) -> None:
        """Read the master's run id and replication offsets (at most once a second; a
        failure only postpones it). Cluster: each master's replicas count, no offsets."""
        watch = self._replication
        watch.next_probe = time.monotonic() + 1.0
        try:
            if self._cluster:
                primaries = self._client.PRIMARIES
                servers = _by_node(await self._client.info("server", target_nodes=primaries))
                replication = _by_node(
                    await self._client.info("replication", target_nodes=primaries)
                )
                for name in list(self._nodes):
                    if name not in servers:  # no longer a master: died, or demoted
                        watch.retire(self._nodes.pop(name))
                for name, server in servers.items():
                    self._node_watch(_address(name)).probed(server, replication.get(name, {}))
                return
            async with self._client.pipeline(transaction=False) as pipe:
                pipe.info("server")
                pipe.info("replication")
                server, replication = await pipe.execute()
        except rex.RedisError as exc:
            logger.debug("redis at %s: replication probe failed: %s", self.where, exc)
            return
        watch.probed(server, replication)

    # -- key-value ---------------------------------------------------------------------------
    async def set(self, ns: str, key: str, value: JSONValue, ttl: float | None = None) -> None:
        """Store ``value`` (``SET``, with ``PX`` when it has a TTL). See :meth:`Store.set`.

        Raises:
            InvalidValueError: not JSON. StorageIOError: unreachable, read-only replica, OOM.
        """
        await self._submit(("set", [self._set_row(ns, key, value, ttl)]), write=True)

    async def set_many(
        self, ns: str, items: Iterable[tuple[str, JSONValue]], ttl: float | None = None
    ) -> None:
        """Store many ``(key, value)`` pairs in as few round trips as ``max_batch`` allows.
        Every pair is validated before anything is sent.

        Raises:
            InvalidKeyError, InvalidValueError: a bad pair (nothing written).
            StorageIOError: Redis failed (earlier batches may have been written).
        """
        await self._submit_rows([self._set_row(ns, k, v, ttl) for k, v in items], "set")

    def _set_row(self, ns: str, key: str, value: JSONValue, ttl: float | None) -> _Op:
        check_key(check_namespace(ns), key)
        json = encode_value(ns, key, value)
        ttl = self._default_ttl if ttl is None else check_ttl(ttl)
        if ttl is None:
            return (self._kv_key(ns, key), encode_value_payload(json, None), None)
        payload = encode_value_payload(json, self._clock() + ttl)
        return (self._kv_key(ns, key), payload, max(1, math.ceil(ttl * 1000)))

    async def _submit_rows(self, rows: builtins.list[_Op], kind: str, *head: Any) -> None:
        self._ensure_open()
        step = self._max_batch
        await asyncio.gather(
            *(
                self._submit((kind, *head, rows[i : i + step]), write=True)
                for i in range(0, len(rows), step)
            )
        )

    async def get(self, ns: str, key: str) -> JSONValue:
        """Return the live value or ``None``."""
        check_key(check_namespace(ns), key)
        return await self._submit(("get", self._kv_key(ns, key)), write=False)

    async def delete(self, ns: str, key: str) -> bool:
        """Remove ``key`` (``GETDEL``); True if it was present and live."""
        check_key(check_namespace(ns), key)
        return bool(await self._submit(("del", self._kv_key(ns, key)), write=True))

    async def list(self, ns: str, prefix: str = "") -> builtins.list[str]:
        """Live keys starting with ``prefix``, sorted (``SCAN … MATCH``, never ``KEYS``)."""
        return [k for k, _ in await self._live(ns, prefix)]

    async def entries(self, ns: str, prefix: str = "") -> builtins.list[tuple[str, JSONValue]]:
        """Live ``(key, value)`` pairs starting with ``prefix``, sorted by key."""
        return await self._live(ns, prefix)

    async def _live(self, ns: str, prefix: str) -> builtins.list[tuple[str, JSONValue]]:
        self._ensure_open()
        check_namespace(ns)
        check_prefix(prefix)
        base = self._kv_key(ns, "")
        pattern = escape_glob(base + prefix) + "*"
        out: builtins.list[tuple[str, JSONValue]] = []
        try:
            names: builtins.list[bytes] = [
                name async for name in self._client.scan_iter(match=pattern, count=_SCAN_COUNT)
            ]
            now = self._clock()
            for start in range(0, len(names), _PAGE):
                chunk = names[start : start + _PAGE]
                for name, payload in zip(chunk, await self._client.mget(chunk), strict=True):
                    if payload is None:  # deleted or reaped between SCAN and MGET
                        continue
                    live, value = decode_value(payload, now, f"{self.where} {name!r}")
                    if live:
                        out.append((name.decode()[len(base) :], value))
        except rex.RedisError as exc:
            raise translate(exc, self.where, "SCAN") from exc
        out.sort(key=lambda kv: kv[0])
        return out

    # -- append log --------------------------------------------------------------------------
    async def append(self, ns: str, entry: Entry) -> Entry:
        """Append ``entry`` to the namespace stream (``XADD``); returns it with ``_ts``."""
        stored, ts, body = stamp(check_namespace(ns), entry, self._clock)
        await self._submit(("app", self._log_key(ns), [(ts, body)]), write=True)
        if self._retention:
            await self._retain(ns, 1, len(body))
        return stored

    async def append_many(self, ns: str, entries: Iterable[Entry]) -> builtins.list[Entry]:
        """Append many entries (validated first) in as few round trips as possible."""
        check_namespace(ns)
        stamped = [stamp(ns, entry, self._clock) for entry in entries]
        rows = [(ts, body) for _, ts, body in stamped]
        await self._submit_rows(rows, "app", self._log_key(ns))
        if self._retention:
            await self._retain(ns, len(rows), sum(len(body) for _, body in rows))
        return [stored for stored, _, _ in stamped]

    async def query(
        self,
        ns: str,
        limit: int = 100,
        offset: int = 0,
        since: TimeBound = None,
        until: TimeBound = None,
        filter: dict[str, JSONValue] | None = None,
    ) -> builtins.list[Entry]:
        """Entries newest first (``XREVRANGE``), ``since`` ≤ id time < ``until``.

        ``filter`` (field equality): with a string or null value Redis scans the stream and
        sends only entries holding its bytes; otherwise pages are checked here.
        """
        self._ensure_open()
        check_namespace(ns)
        limit, offset = check_limits(limit, offset)
        window = clamp_window(to_epoch_ms(since), to_epoch_ms(until))
        filter = check_filter(filter)
        if limit == 0 or window is None:
            return []
        lo, hi = window  # stream ids take no number beyond 64 bits
        if hi is not None and (hi <= 0 or (lo is not None and lo >= hi)):
            return []
        upper = "+" if hi is None else f"({hi}-0"
        lower = "-" if lo is None or lo <= 0 else f"{lo}-0"
        needles = [n for f, v in (filter or {}).items() if (n := needle(f, v)) is not None]
        key = self._log_key(ns)
        if filter and needles:  # matching entries are found server-side
            bounds, window = (upper, lower), (limit, offset)
            where = self.where
            return await scan_filtered(
                self._client, key, bounds, window, filter, needles, where, ns
            )
        out: builtins.list[Entry] = []
        skipped = 0
        page = min(_PAGE, offset + limit) if not filter else _PAGE
        try:
            while len(out) < limit:
                rows = await self._client.xrevrange(key, max=upper, min=lower, count=page)
                for _id, fields in rows:
                    entry = orjson.loads(fields[_BODY])
                    if filter and not matches(entry, filter):
                        continue
                    if skipped < offset:
                        skipped += 1
                        continue
                    out.append(entry)
                    if len(out) >= limit:
                        break
                if len(rows) < page:
                    break
                upper = "(" + rows[-1][0].decode()
                page = _PAGE
        except rex.RedisError as exc:
            raise translate(exc, self.where, "XREVRANGE") from exc
        except (orjson.JSONDecodeError, KeyError) as exc:
            raise CorruptDataError(
                f"stream {key!r} at {self.where} holds an entry RedisStore did not write: {exc!r}",
                path=self.where,
                namespace=ns,
            ) from exc
        return out
