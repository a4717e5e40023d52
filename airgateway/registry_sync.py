"""Keeping a gateway in step with the shared registry (:mod:`airgateway.shared_registry`).

Every health interval the gateway renews its registration and the ranks of its server names;
every :data:`~airgateway.shared_health.POLL_S` seconds at most it reads the other gateways'
registrations. A network replica another gateway registered joins this gateway's pool for the
server of that name when this gateway's configuration declares the name too (the configuration
decides which servers a gateway fronts and under which prefix and access rules; the store only
adds replicas to them), with the same prefix, and no headers in this gateway's entries of that
server (headers are secrets of a configuration: they are never sent to a URL that came from
the store). An adopted replica is health-checked like the gateway's own, and leaves the pool
when its registration is gone, or, while the store cannot be read, when it was last seen
longer ago than a registration lives. A replica that leaves is out of the pool at once, but the
calls already in flight on it finish: its connection closes once none is left, or after its
per-call timeout at most. Its index (``notes#3``) goes to the next replica adopted.
"""

from __future__ import annotations

import asyncio
import heapq
import logging
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any

from airgateway.config import GatewayConfig, ServerConfig
from airgateway.replica import Replica
from airgateway.shared_health import POLL_S
from airgateway.shared_registry import MAX_ADOPTED, Published, Registration, SharedRegistry
from airgateway.types import UpstreamClient

__all__ = ["RegistrySync"]

logger = logging.getLogger(__name__)

DRAIN_POLL_S = 0.05
"""How often a replica that left the pool is looked at until its last call is over."""

_Key = tuple[str, str, str]
"""(server name, transport, url) of a network replica."""


class RegistrySync:
    """Adopts and drops other gateways' replicas and hands on the shared ranks.

    Args:
        shared: the store side of the registry.
        config: this gateway's configuration.
        groups: the router's replicas by server name (changed in place).
        make_client: the upstream connection of a new replica ``(config, index)``.
        on_added: told of each adopted replica once it is in its group.
        on_ranks: given the shared ranks of this gateway's server names.
        on_dropped: told of each replica that left the pool (its shared-health mark goes).
    """

    def __init__(
        self,
        shared: SharedRegistry,
        *,
        config: GatewayConfig,
        groups: dict[str, list[Replica]],
        make_client: Callable[[ServerConfig, int], UpstreamClient],
        on_added: Callable[[Replica], None],
        on_ranks: Callable[[Mapping[str, int]], None],
        on_dropped: Callable[[Replica], Awaitable[None]] | None = None,
    ) -> None:
        self.shared = shared
        self.config = config
        self.groups = groups
        self.make_client = make_client
        self.on_added = on_added
        self.on_ranks = on_ranks
        self.on_dropped = on_dropped
        self.gateways: list[Registration] = []
        """The live registrations at the last reading (this gateway's own included)."""
        self._names = list(dict.fromkeys(s.name for s in config.servers))
        self._own_keys = {(s.name, s.transport, s.url) for s in config.servers if s.url}
        self._adoptable: dict[str, ServerConfig] = {}
        for server in config.servers:
            self._adoptable.setdefault(server.name, server)
        for server in config.servers:
            if server.headers:  # its replicas need secrets: none is taken from the store
                self._adoptable.pop(server.name, None)
        self._next = {name: len(group) for name, group in groups.items()}
        self._free: dict[str, list[int]] = {}
        self._closing: dict[asyncio.Task[None], Replica] = {}
        self._adopted: dict[_Key, Replica] = {}
        self._seen: dict[_Key, float] = {}
        self._task: asyncio.Task[None] | None = None
        self._started = False
        self.urls: tuple[str, ...] = ()
        """This gateway's own endpoint URLs (published: no gateway adopts them)."""

    async def publish(self) -> None:
        """Renew this gateway's registration and its names' ranks (ranks go to ``on_ranks``)."""
        await self.shared.publish(self.config.servers, urls=self.urls)
        ranks = await self.shared.ranks(self._names)
        if ranks is not None:
            self.on_ranks(ranks)

    async def refresh(self) -> None:
        """Read the registrations; adopt the replicas that joined, drop those that left."""
        registrations = await self.shared.read()
        now = time.monotonic()
        if registrations is None:  # keep what was seen, for as long as a registration lives
            for key, seen in list(self._seen.items()):
                if now - seen > self.shared.ttl:
                    await self._drop(key, "its registration could not be read")
            return
        self.gateways = registrations
        wanted = self._wanted(registrations)
        for key in list(self._adopted):
            if key not in wanted:
                await self._drop(key, "its registration expired or was withdrawn")
        for key, (published, gateway) in wanted.items():
            self._seen[key] = now
            replica = self._adopted.get(key)
            if replica is None:
                self._adopt(key, published, gateway)
            else:
                replica.registered_by = gateway

    def _wanted(self, registrations: list[Registration]) -> dict[_Key, tuple[Published, str]]:
        wanted: dict[_Key, tuple[Published, str]] = {}
        counts: dict[str, int] = {}
        gateways = {u for r in registrations for u in r.urls} | set(self.urls)
        for registration in registrations:
            if registration.gateway == self.shared.me:
                continue
            for name, items in registration.servers.items():
                own = self._adoptable.get(name)
                if own is None:
                    continue
                for published in items:
                    key = (name, published.transport, published.url)
                    if key in self._own_keys or key in wanted:
                        continue
                    if published.url in gateways:
                        self.shared.tell(
                            f"gateway {registration.gateway} gives {published.url} as a replica "
                            f"of {name}: it is a gateway's own endpoint, not adopted"
                        )
                        continue
                    if published.prefix != own.prefix:
                        self.shared.tell(
                            f"gateway {registration.gateway} gives {name} the prefix "
                            f"{published.prefix!r}, this gateway {own.prefix!r}: not adopted"
                        )
                        continue
                    if counts.get(name, 0) >= MAX_ADOPTED:
                        self.shared.tell(
                            f"more than {MAX_ADOPTED} replicas of {name} are registered by "
                            "other gateways: the rest are ignored"
                        )
                        break
                    counts[name] = counts.get(name, 0) + 1
                    wanted[key] = (published, registration.gateway)
        return wanted

    def _adopt(self, key: _Key, published: Published, gateway: str) -> None:
        name = key[0]
        own = self._adoptable[name]
        free = self._free.get(name)
        index = free[0] if free else self._next.get(name, 0)
        config = ServerConfig(
            name=name,
            transport=published.transport,
            url=published.url,
            prefix=own.prefix,
            timeout_s=published.timeout_s,
            include_drafts=own.include_drafts,
        )
        try:
            client = self.make_client(config, index)
        except Exception as exc:  # a URL the checks let through must not stop the others
            self.shared.tell(f"a replica of {name} at {published.url!r} cannot be used: {exc}")
            return
        if free:
            heapq.heappop(free)
        else:
            self._next[name] = index + 1
        replica = Replica(config, index, client)
        replica.registered_by = gateway
        self.groups.setdefault(name, []).append(replica)
        self._adopted[key] = replica
        logger.info("%s (%s) joins the pool, registered by gateway %s",
                    replica.label, published.url, gateway)  # fmt: skip
        self.on_added(replica)

    async def _drop(self, key: _Key, why: str) -> None:
        replica = self._adopted.pop(key, None)
        self._seen.pop(key, None)
        if replica is None:
            return
        group = self.groups.get(key[0], [])
        if replica in group:
            group.remove(replica)
        logger.warning("%s (%s) leaves the pool: %s", replica.label, key[2], why)
        heapq.heappush(self._free.setdefault(key[0], []), replica.index)
        task = asyncio.ensure_future(self._close_when_idle(replica))
        self._closing[task] = replica
        task.add_done_callback(self._closing.pop)
        if self.on_dropped is not None:
            await self.on_dropped(replica)

    @staticmethod
    async def _close_when_idle(replica: Replica) -> None:
        """Close once the calls in flight are over, or after the per-call timeout at most."""
        deadline = time.monotonic() + replica.config.timeout_s
        # the router counts calls with a bare int (the call path stays free of events)
        while replica.in_flight > 0 and time.monotonic() < deadline:  # noqa: ASYNC110
            await asyncio.sleep(DRAIN_POLL_S)
        try:
            await replica.client.close()
        except Exception:  # its connection is gone either way
            logger.debug("closing %s failed", replica.label, exc_info=True)

    async def listening(self, urls: Sequence[str]) -> None:
        """Learn this gateway's own endpoint URLs: publish them and drop any adopted replica
        they name (a gateway never calls itself)."""
        self.urls = tuple(urls)
        if self._started:
            try:
                await self.publish()
                await self.refresh()
            except Exception:  # as in the loop
                logger.exception("keeping the shared registry failed")

    def adopted(self) -> list[Replica]:
        """The replicas adopted from other gateways now."""
        return list(self._adopted.values())

    def status(self) -> dict[str, Any]:
        """The status page's ``registry`` section."""
        return {
            "gateway": self.shared.me,
            "error": self.shared.error,
            "gateways": [r.to_json(me=self.shared.me) for r in self.gateways],
        }

    async def start(self, interval_s: float) -> None:
        """Register, read once, then keep both up to date until :meth:`stop`."""
        self._started = True
        try:
            await self.publish()
            await self.refresh()
        except Exception:  # as in the loop: a bug must not stop the gateway from starting
            logger.exception("keeping the shared registry failed")

        async def loop() -> None:
            due = time.monotonic() + interval_s
            while True:
                await asyncio.sleep(min(POLL_S, interval_s))
                try:
                    if time.monotonic() >= due:
                        due = time.monotonic() + interval_s
                        await self.publish()
                    await self.refresh()
                except Exception:  # a bug must not stop the sharing for good
                    logger.exception("keeping the shared registry failed")

        if self._task is None:
            self._task = asyncio.ensure_future(loop())

    async def stop(self) -> None:
        """Stop, and withdraw this gateway's registration. Idempotent."""
        task, self._task = self._task, None
        if not self._started:
            return
        self._started = False
        if task is not None:
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
        await self.shared.withdraw()
        closing = dict(self._closing)  # the gateway stops: no waiting for their last calls
        for waiting in closing:
            waiting.cancel()
        await asyncio.gather(*closing, return_exceptions=True)
        await asyncio.gather(*(r.client.close() for r in closing.values()),
                             return_exceptions=True)  # fmt: skip
