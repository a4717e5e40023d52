"""The Server Registry shared between gateway processes through the store.

Every gateway publishes its own network replicas (HTTP or SSE: URL, transport, prefix,
per-call timeout; never an entry with headers, never a URL its readers would refuse) under
one key of namespace ``gateway.registry``, renewed every health interval and expiring after
:data:`TTL_CHECKS` intervals, so a gateway that died leaves the registry a few intervals later
(one that stops cleanly withdraws at once). What another gateway reads back is checked entry by
entry (:func:`parse_registration`): a corrupt or hostile entry, or the part of it that is, is
skipped and logged, and the amount read is bounded (:data:`MAX_GATEWAYS`, :data:`MAX_SERVERS`,
:data:`MAX_REPLICAS`). A URL must be ``http(s)://`` without credentials, query or fragment, and
name a loopback host unless the reading gateway was allowed remote.

Tool-name ownership is kept here too: each server name gets a rank the first time any gateway
sharing the store registers it (the store's atomic ``incr``), renewed by every gateway that
declares the name and dropped a few intervals after the last one stops. Ranks order servers
in every gateway's Tool Index, so when two servers offer one name every gateway gives it to the
same server, whatever the order of its own configuration file.

A store that cannot be reached only stops the sharing (logged); each gateway keeps working
from its own configuration.
"""

from __future__ import annotations

import logging
import math
import os
import re
import socket
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from airgateway.config import DEFAULT_TIMEOUT_S, ServerConfig
from airhttp.guards import is_loopback
from airstore.errors import AirstoreError, InvalidArgumentError, InvalidValueError
from airstore.types import Store

__all__ = [
    "MAX_ADOPTED",
    "MAX_GATEWAYS",
    "MAX_REPLICAS",
    "MAX_SERVERS",
    "REGISTRY_NAMESPACE",
    "TTL_CHECKS",
    "Published",
    "Registration",
    "SharedRegistry",
    "parse_registration",
    "publishable",
]

logger = logging.getLogger(__name__)

REGISTRY_NAMESPACE = "gateway.registry"
_NS = REGISTRY_NAMESPACE
TTL_CHECKS = 3
"""A registration (and a rank) lives this many health intervals unless renewed."""
MAX_GATEWAYS = 64
"""Registrations read at most (the others are ignored, logged)."""
MAX_SERVERS = 256
"""Servers one registration may carry; a registration with more is skipped whole."""
MAX_REPLICAS = 16
"""Replicas of one server read from one registration (the rest are ignored, logged)."""
MAX_ADOPTED = 16
"""Replicas of one server a gateway adopts from the others at most."""
MAX_URL = 2048
MAX_LISTEN_URLS = 8
"""A gateway's own listen URLs read from its registration at most."""
MAX_TIMEOUT_S = 3600.0
MAX_RANK = 2**53 - 1
_SEP = "\x1f"
GATEWAY_PREFIX = "gw" + _SEP
_RANK = "rank" + _SEP
_CLAIM = "claim" + _SEP
_SEQ = "seq"
_NAME = re.compile(r"^[A-Za-z0-9_.-]{1,64}$")
_NETWORK = ("http", "sse")
_MAX_TOLD = 256


@dataclass(frozen=True, slots=True, kw_only=True)
class Published:
    """One network replica as a gateway publishes it."""

    url: str
    transport: str
    prefix: str | None
    timeout_s: float

    def to_json(self) -> dict[str, Any]:
        """The stored form."""
        return {"url": self.url, "transport": self.transport, "prefix": self.prefix,
                "timeout_s": self.timeout_s}  # fmt: skip


@dataclass(frozen=True, slots=True, kw_only=True)
class Registration:
    """One live gateway's entry: its id, process, host and network replicas by server."""

    gateway: str
    pid: int | None
    host: str | None
    servers: Mapping[str, tuple[Published, ...]]
    urls: tuple[str, ...] = ()
    """The gateway's own endpoint URLs: never adopted as replicas (a gateway calling itself)."""
    since: float = math.inf
    """When the gateway started (its own clock, seconds since the epoch; ``inf``: unknown).
    The oldest gateway's definition of a server wins a disagreement
    (``airgateway.registry_sync.RegistrySync._wanted``)."""

    def to_json(self, *, me: str) -> dict[str, Any]:
        """The status page's form (``self``: this is the gateway answering)."""
        return {"id": self.gateway, "pid": self.pid, "host": self.host,
                "servers": sorted(self.servers), "self": self.gateway == me}  # fmt: skip

    def order(self) -> tuple[float, str]:
        """The key that sorts registrations oldest first (then by id): the same in every
        gateway, and stable while the gateways live."""
        return (self.since, self.gateway)


def publishable(servers: Sequence[ServerConfig]) -> dict[str, list[Published]]:
    """A configuration's network replicas as they may be published: HTTP and SSE entries
    without ``headers``, ``oauth``, ``send_caller`` or ``scopes`` (no other gateway could use
    them: headers are secrets, never published; an upstream told who calls is this gateway's
    own; one needing scopes would be served without them as another gateway's fleet server)
    whose URL passes the check every reader makes (:func:`url_problem`, remote allowed: no
    credentials, query, fragment, zone id or non-ASCII character). Stdio entries
    are each gateway's own child processes."""
    out: dict[str, list[Published]] = {}
    for server in servers:
        if server.transport not in _NETWORK or server.url is None:
            continue
        if server.headers or server.oauth is not None or server.send_caller:
            logger.info("%s is not published in the registry: it carries headers, oauth "
                        "credentials or the caller's identity (send_caller)",
                        server.name)  # fmt: skip
            continue
        if server.scopes:  # another gateway would serve it as a fleet server, unscoped
            logger.info("%s is not published in the registry: its scopes are this gateway's "
                        "to enforce", server.name)  # fmt: skip
            continue
        problem = url_problem(server.url, allow_remote=True)
        if problem is not None:
            logger.info("%s is not published in the registry: %s", server.name, problem)
            continue
        out.setdefault(server.name, []).append(Published(
            url=server.url, transport=server.transport, prefix=server.prefix,
            timeout_s=server.timeout_s))  # fmt: skip
    return out


def url_problem(url: Any, *, allow_remote: bool) -> str | None:
    """Why a URL read from the store may not be adopted, or ``None`` when it may."""
    if not isinstance(url, str) or not url or len(url) > MAX_URL:
        return "the url is not a string of 1-2048 characters"
    if any(c.isspace() or ord(c) < 32 or ord(c) == 127 for c in url):
        return "the url holds whitespace or control characters"
    if not url.isascii():
        return "the url holds non-ASCII characters"
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 - raises ValueError for a port that is not one
    except ValueError:
        return "the url does not parse"
    if parts.scheme not in ("http", "https") or not parts.hostname:
        return "the url is not http:// or https://"
    if "%" in parts.netloc:
        return "the url's host carries a zone id or a percent sign"
    if parts.username is not None or parts.password is not None:
        return "the url carries credentials"
    if parts.query or parts.fragment or "?" in url or "#" in url:
        return "the url carries a query or fragment"
    if not allow_remote and not is_loopback(parts.hostname):
        return "the url is not loopback (the gateway was not allowed remote)"
    return None


def _replica(item: Any, *, allow_remote: bool) -> Published | str:
    if not isinstance(item, dict):
        return "a replica is not an object"
    url = item.get("url")
    problem = url_problem(url, allow_remote=allow_remote)
    if problem is not None:
        return problem
    assert isinstance(url, str)
    transport = item.get("transport", "http")
    if transport not in _NETWORK:
        return "the transport is not http or sse"
    prefix = item.get("prefix")
    if prefix is not None and (not isinstance(prefix, str) or not _NAME.fullmatch(prefix)):
        return "the prefix is not a name"
    timeout = item.get("timeout_s", DEFAULT_TIMEOUT_S)
    if (
        isinstance(timeout, bool)
        or not isinstance(timeout, int | float)
        or not math.isfinite(timeout)
        or not 0 < timeout <= MAX_TIMEOUT_S
    ):
        return "timeout_s is not a number in (0, 3600]"
    return Published(url=url, transport=str(transport), prefix=prefix, timeout_s=float(timeout))


def parse_registration(
    key: str, value: Any, *, allow_remote: bool
) -> tuple[Registration | None, list[str]]:
    """Check one registration read back from the store.

    Args:
        key: its key in :data:`REGISTRY_NAMESPACE`.
        value: its value, whatever it is.
        allow_remote: whether non-loopback URLs are acceptable.

    Returns:
        ``(registration, problems)``: ``None`` when the entry is unusable as a whole; else the
        registration with every bad server or replica left out, each named in ``problems``.
    """
    gateway = key[len(GATEWAY_PREFIX) :] if key.startswith(GATEWAY_PREFIX) else ""
    if not _NAME.fullmatch(gateway):
        return None, [f"registry key {key[:80]!r} does not name a gateway"]
    where = f"registration of gateway {gateway}"
    if not isinstance(value, dict) or not isinstance(value.get("servers"), dict):
        return None, [f"{where} is not an object with servers"]
    servers_in: dict[Any, Any] = value["servers"]
    if len(servers_in) > MAX_SERVERS:
        return None, [f"{where} lists more than {MAX_SERVERS} servers"]
    problems: list[str] = []
    servers: dict[str, tuple[Published, ...]] = {}
    for name, items in servers_in.items():
        if not isinstance(name, str) or not _NAME.fullmatch(name):
            problems.append(f"{where}: a server name is not 1-64 of A-Za-z0-9_.-")
            continue
        if not isinstance(items, list):
            problems.append(f"{where}: {name} is not a list of replicas")
            continue
        if len(items) > MAX_REPLICAS:
            problems.append(f"{where}: {name} has more than {MAX_REPLICAS} replicas (cut)")
        kept: list[Published] = []
        for item in items[:MAX_REPLICAS]:
            checked = _replica(item, allow_remote=allow_remote)
            if isinstance(checked, str):
                problems.append(f"{where}: a replica of {name}: {checked}")
            else:
                kept.append(checked)
        if kept:
            servers[name] = tuple(kept)
    pid = value.get("pid")
    host = value.get("host")
    since = value.get("since")
    if isinstance(since, bool) or not isinstance(since, int | float) or not math.isfinite(since):
        since = math.inf
    urls_in = value.get("urls")
    urls = tuple(
        u for u in (urls_in if isinstance(urls_in, list) else [])[:MAX_LISTEN_URLS]
        if url_problem(u, allow_remote=True) is None
    )  # fmt: skip
    return Registration(
        urls=urls,
        since=float(since),
        gateway=gateway,
        pid=pid if isinstance(pid, int) and not isinstance(pid, bool) and pid > 0 else None,
        host=host[:64] if isinstance(host, str) and host.isprintable() else None,
        servers=servers,
    ), problems


class SharedRegistry:
    """This gateway's side of the shared registry (see the module docstring).

    Args:
        store: the store the gateways share.
        me: this gateway's id (the same as in the shared health marks).
        interval_s: the health interval (registrations expire after :data:`TTL_CHECKS`).
        allow_remote: adopt non-loopback URLs too.
    """

    def __init__(self, store: Store, *, me: str, interval_s: float, allow_remote: bool) -> None:
        self.store = store
        self.me = me
        self.since = time.time()  # wall clock: compared between processes, never for waiting
        self.ttl = max(1.0, interval_s * TTL_CHECKS)
        self.allow_remote = allow_remote
        self.error: str | None = None
        """Why the store could not be reached at the last attempt (``None``: it could)."""
        self._told: set[str] = set()
        # what publish() writes besides the URLs, worked out (and its skips logged) once
        self._published: tuple[Sequence[ServerConfig], dict[str, Any]] | None = None

    def _failed(self, doing: str, exc: Exception) -> None:
        message = f"could not {doing}: {exc}"
        if self.error is None:
            logger.warning("the registry is not shared for now: %s", message)
        self.error = message

    def _ok(self) -> None:
        if self.error is not None:
            logger.info("the registry is shared again")
        self.error = None

    def tell(self, problem: str) -> None:
        """Log a problem of what was read once (not at every reading)."""
        if problem in self._told:
            return
        if len(self._told) >= _MAX_TOLD:
            self._told.clear()
        self._told.add(problem)
        logger.warning("skipped in the shared registry: %s", problem)

    async def publish(self, servers: Sequence[ServerConfig], *, urls: Sequence[str] = ()) -> None:
        """Write (or renew) this gateway's registration (``urls``: its own endpoint's)."""
        if self._published is None or self._published[0] is not servers:
            fixed = {
                "pid": os.getpid(),
                "since": self.since,
                "host": socket.gethostname(),
                "servers": {k: [p.to_json() for p in v] for k, v in publishable(servers).items()},
            }
            self._published = (servers, fixed)
        value = {"v": 1, "urls": list(urls), **self._published[1]}
        try:
            await self.store.set(REGISTRY_NAMESPACE, GATEWAY_PREFIX + self.me, value, ttl=self.ttl)
        except AirstoreError as exc:
            self._failed("publish this gateway's registration", exc)
            return
        self._ok()

    async def withdraw(self) -> None:
        """Remove this gateway's registration (it stops)."""
        try:
            await self.store.delete(REGISTRY_NAMESPACE, GATEWAY_PREFIX + self.me)
        except AirstoreError as exc:
            logger.warning("could not withdraw this gateway's registration: %s", exc)

    async def read(self) -> list[Registration] | None:
        """Every live registration, checked (this gateway's own included); ``None`` when the
        store cannot be reached."""
        try:
            entries = await self.store.entries(REGISTRY_NAMESPACE, GATEWAY_PREFIX)
        except AirstoreError as exc:
            self._failed("read the registry", exc)
            return None
        self._ok()
        if len(entries) > MAX_GATEWAYS:
            self.tell(f"more than {MAX_GATEWAYS} registrations: only the first are read")
        out: list[Registration] = []
        for key, value in entries[:MAX_GATEWAYS]:
            registration, problems = parse_registration(key, value, allow_remote=self.allow_remote)
            for problem in problems:
                self.tell(problem)
            if registration is not None:
                out.append(registration)
        return out

    async def ranks(self, names: Sequence[str]) -> dict[str, int] | None:
        """The shared rank of each server name (claimed here, in ``names`` order, for the
        names no gateway registered yet; renewed for the others); ``None`` when the store
        cannot be reached. A name another gateway is claiming right now has no rank yet."""
        out: dict[str, int] = {}
        try:
            for name in names:
                rank = await self.store.get(REGISTRY_NAMESPACE, _RANK + name)
                if isinstance(rank, bool) or not isinstance(rank, int) or not 0 < rank <= MAX_RANK:
                    if rank is not None:
                        self.tell(f"the rank of {name} is not a positive integer")
                    try:
                        claimed = await self.store.incr(_NS, _CLAIM + name, ttl=self.ttl)
                        rank = await self.store.incr(_NS, _SEQ) if claimed == 1 else None
                    except (InvalidValueError, InvalidArgumentError) as exc:
                        self.tell(f"the rank of {name} cannot be claimed: {exc}")
                        continue
                    if rank is None:
                        continue  # another gateway is claiming it: its rank comes next time
                await self.store.set(REGISTRY_NAMESPACE, _RANK + name, rank, ttl=self.ttl)
                out[name] = rank
        except AirstoreError as exc:
            self._failed("keep the shared ranks", exc)
            return None
        return out
