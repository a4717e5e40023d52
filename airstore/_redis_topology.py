"""How RedisStore reaches its server(s): one node, a Redis Cluster, or a Sentinel-watched master.

URLs::

    redis://[user:pw@]host:port/db          one node (also rediss://, unix://)
    redis+cluster://[user:pw@]h:p[,h:p…]/   Redis Cluster: the hosts are start-up nodes; the
                                            client follows MOVED/ASK and topology changes
    redis+sentinel://[user:pw@]h:p[,h:p…]/master/db
                                            the master Sentinel names, followed after failover
                                            (user:pw are the data nodes'; sentinels without auth)

The server kind (Redis or Valkey) and its version are checked per kind: Redis ≥ 7.0 and
Valkey ≥ 7.2 (stream ids ``<ms>-*`` and ``#!lua`` scripts).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal
from urllib.parse import unquote, urlsplit

from airstore.errors import InvalidArgumentError, StorageIOError

__all__ = [
    "MIN_VERSIONS",
    "Topology",
    "check_server",
    "connect",
    "hash_tag",
    "no_retry",
    "parse_hosts",
]

Kind = Literal["node", "cluster", "sentinel"]

MIN_VERSIONS = {"redis": (7, 0), "valkey": (7, 2)}
"""The oldest server of each kind RedisStore runs on."""

CLUSTER_SCHEME = "redis+cluster"
SENTINEL_SCHEME = "redis+sentinel"


@dataclass(frozen=True, slots=True)
class Topology:
    """What a URL names: its kind, and where (for messages)."""

    kind: Kind
    where: str
    hosts: tuple[tuple[str, int], ...] = ()
    master: str = ""
    db: int = 0
    username: str | None = None
    password: str | None = None


Hosts = tuple[tuple[str, int], ...]


def parse_hosts(netloc: str, url: str) -> tuple[str | None, str | None, Hosts]:
    """``user:pw@h:p,h:p`` → (user, password, hosts).

    Raises:
        InvalidArgumentError: no host, or a port that is not a number.
    """
    auth, _, hostlist = netloc.rpartition("@")
    user: str | None = None
    password: str | None = None
    if auth:
        name, sep, secret = auth.partition(":")
        user = unquote(name) or None
        password = unquote(secret) if sep else None
    hosts: list[tuple[str, int]] = []
    for part in hostlist.split(","):
        host, sep, port = part.strip().rpartition(":")
        if not sep:
            host, port = part.strip(), "6379"
        host = host.strip("[]")
        if not host or not (port.isascii() and port.isdigit()) or not 0 < int(port) < 65536:
            raise InvalidArgumentError(f"bad redis URL {_safe(url)!r}: {part!r} is not host:port")
        hosts.append((host, int(port)))
    if not hosts:
        raise InvalidArgumentError(f"bad redis URL {_safe(url)!r}: it names no host")
    return user, password, tuple(hosts)


def _safe(url: str) -> str:
    """The URL without its password (for messages)."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    return url.replace(f":{parts.password}@", ":***@", 1)


def topology_of(url: str) -> Topology:
    """Parse a store URL's topology.

    Raises:
        InvalidArgumentError: a malformed cluster or sentinel URL.
    """
    scheme, _, rest = url.partition("://")
    scheme = scheme.lower()
    if scheme not in (CLUSTER_SCHEME, SENTINEL_SCHEME):
        return Topology("node", "")
    netloc, _, path = rest.partition("/")
    path = path.partition("?")[0]
    user, password, hosts = parse_hosts(netloc, url)
    where = ",".join(f"{h}:{p}" for h, p in hosts)
    if scheme == CLUSTER_SCHEME:
        if path.strip("/") not in ("", "0"):
            raise InvalidArgumentError(
                f"bad redis URL {_safe(url)!r}: a cluster has only database 0 "
                "(redis+cluster://host:port,host:port/)"
            )
        return Topology("cluster", f"cluster {where}", hosts, "", 0, user, password)
    master, _, db = path.strip("/").partition("/")
    if not master:
        raise InvalidArgumentError(
            f"bad redis URL {_safe(url)!r}: name the master "
            "(redis+sentinel://host:port,host:port/mymaster/0)"
        )
    if db and not (db.isascii() and db.isdigit()):
        raise InvalidArgumentError(
            f"bad redis URL {_safe(url)!r}: the database {db!r} must be a number"
        )
    return Topology(
        "sentinel", f"sentinel {where}/{master}", hosts, master, int(db or 0), user, password
    )


def no_retry() -> Any:
    """redis-py's automatic retry turned off: it resends a command whose connection broke or
    timed out after the server may have run it, which would store a write twice (an append, an
    incr). A failed batch fails its callers instead; the store's callers decide."""
    from redis.asyncio.retry import Retry
    from redis.backoff import NoBackoff

    return Retry(NoBackoff(), 0)


def connect(topo: Topology, options: dict[str, Any]) -> tuple[Any, list[Any]]:
    """A redis.asyncio client for a cluster or sentinel topology (redis is imported here), and
    the other clients to close with it (Sentinel's connections to the sentinels)."""
    if topo.kind == "cluster":
        from redis.asyncio.cluster import ClusterNode, RedisCluster

        cluster = RedisCluster(
            startup_nodes=[ClusterNode(h, p) for h, p in topo.hosts],
            username=topo.username,
            password=topo.password,
            socket_timeout=options["socket_timeout"],
            socket_connect_timeout=options["connect_timeout"],
            max_connections=options["max_connections"],
            require_full_coverage=True,
            retry=no_retry(),
        )
        return cluster, []
    from redis.asyncio.sentinel import Sentinel

    sentinel = Sentinel(
        list(topo.hosts),
        socket_timeout=options["socket_timeout"],
        socket_connect_timeout=options["connect_timeout"],
        sentinel_kwargs={
            "socket_timeout": options["socket_timeout"],
            "socket_connect_timeout": options["connect_timeout"],
        },
    )
    client = sentinel.master_for(
        topo.master,
        db=topo.db,
        retry=no_retry(),
        username=topo.username,
        password=topo.password,
        socket_timeout=options["socket_timeout"],
        socket_connect_timeout=options["connect_timeout"],
        max_connections=options["max_connections"],
    )
    return client, list(sentinel.sentinels)


def hash_tag(key: str) -> str:
    """The part of ``key`` Redis Cluster hashes (the first non-empty ``{…}``, else the key)."""
    start = key.find("{")
    if start >= 0:
        end = key.find("}", start + 1)
        if end > start + 1:
            return key[start + 1 : end]
    return key


def check_server(info: dict[str, Any], where: str) -> tuple[str, str]:
    """``(kind, version)`` of a server from its ``INFO server``.

    Raises:
        StorageIOError: a server older than :data:`MIN_VERSIONS` allows for its kind.
    """
    kind = "valkey" if "valkey_version" in info or info.get("server_name") == "valkey" else "redis"
    version = str(info.get("valkey_version" if kind == "valkey" else "redis_version", "0"))
    parts = version.split(".")
    try:
        found = (int(parts[0]), int(parts[1]) if len(parts) > 1 else 0)
    except ValueError:
        found = (0, 0)
    need = MIN_VERSIONS[kind]
    if found < need:
        raise StorageIOError(
            f"{kind} at {where} is version {version}; RedisStore needs {kind.capitalize()} >= "
            f"{need[0]}.{need[1]} (stream ids '<ms>-*', '#!lua' scripts)",
            path=where,
        )
    return kind, version
