"""Keeping a gateway in step with the shared registry (:mod:`airgateway.shared_registry`).

Every health interval the gateway renews its registration and the ranks of its server names;
every :data:`~airgateway.shared_health.POLL_S` seconds at most it reads the other gateways'
registrations, and at once after its configuration is reloaded.

What a gateway serves is the union of its own configuration and the fleet's:

- A network replica another gateway registered joins this gateway's pool for the server of
  that name when this gateway's configuration declares the name too, with the same prefix,
  and no ``headers``, ``oauth`` or ``send_caller`` in this gateway's entries of that server
  (headers and tokens are secrets of a configuration, the caller's identity is personal data:
  none is ever sent to a URL that came from the store).
- A server this gateway's configuration does not name at all is a *fleet server* (unless the
  file says ``registry: {fleet_servers: false}``): it is served here while any live gateway
  registers it (a gateway that stops withdraws its registration;
  one that dies leaves it to expire after :data:`~airgateway.shared_registry.TTL_CHECKS`
  health intervals). Its tools are listed and its replicas routed to like the configuration's.
- Gateways that *disagree* about a server (another prefix, so other tool names) do not flap
  between the two: this gateway's own configuration decides for the servers it names, and the
  oldest live gateway registering it (then the lowest id) for a fleet server, the same in
  every gateway. The replicas registered with the other definition are not adopted; the
  disagreement is logged once and listed in ``GET /status`` (``registry.disagreements``).

An adopted replica is health-checked like the gateway's own, and leaves the pool when its
registration is gone, or, while the store cannot be read, when it was last seen longer ago
than a registration lives. A replica that leaves is out of the pool at once, but the calls
already in flight on it finish: its connection closes once none is left, or after its
per-call timeout at most. Its index (``notes#3``) goes to the next replica of that server.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any

from airgateway.config import GatewayConfig, ServerConfig
from airgateway.replica import Replica, close_when_idle, free_index
from airgateway.shared_health import POLL_S
from airgateway.shared_registry import MAX_ADOPTED, Published, Registration, SharedRegistry
from airgateway.types import UpstreamClient

__all__ = ["RegistrySync"]

logger = logging.getLogger(__name__)

_Key = tuple[str, str, str]
"""(server name, transport, url) of a network replica."""
_Want = tuple[Published, str, str | None]
"""A replica to adopt: as published, by which gateway, under which prefix."""


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
        on_fleet: Callable[[], None] | None = None,
    ) -> None:
        self.shared = shared
        self.groups = groups
        self.make_client = make_client
        self.on_added = on_added
        self.on_ranks = on_ranks
        self.on_dropped = on_dropped
        self.on_fleet = on_fleet
        self.gateways: list[Registration] = []
        """The live registrations at the last reading (this gateway's own included)."""
        self.fleet: dict[str, ServerConfig] = {}
        """The fleet servers served now (see the module docstring), by name."""
        self.disagreements: list[dict[str, Any]] = []
        """The definitions of other gateways not followed here, at the last reading."""
        self._closing: dict[asyncio.Task[None], Replica] = {}
        self._adopted: dict[_Key, Replica] = {}
        self._seen: dict[_Key, float] = {}
        self._task: asyncio.Task[None] | None = None
        self._started = False
        self.urls: tuple[str, ...] = ()
        """This gateway's own endpoint URLs (published: no gateway adopts them)."""
        self.reconfigure(config)

    def reconfigure(self, config: GatewayConfig) -> None:
        """Take a reloaded configuration (what is adopted changes at the next :meth:`refresh`)."""
        self.config = config
        self._names = list(dict.fromkeys(s.name for s in config.servers))
        self._own_names = set(self._names)
        self._own_keys = {(s.name, s.transport, s.url) for s in config.servers if s.url}
        self._adoptable: dict[str, ServerConfig] = {}
        for server in config.servers:
            self._adoptable.setdefault(server.name, server)
        for server in config.servers:
            if server.headers or server.oauth is not None or server.send_caller:
                # secrets, and the caller's identity: none go to URLs from the store
                self._adoptable.pop(server.name, None)

    async def publish(self) -> None:
        """Renew this gateway's registration and its names' ranks (ranks go to ``on_ranks``)."""
        await self.shared.publish(self.config.servers, urls=self.urls)
        names = self._names + [n for n in self.fleet if n not in self._own_names]
        ranks = await self.shared.ranks(names)
        if ranks is not None:
            self.on_ranks(ranks)

    async def refresh(self) -> None:
        """Read the registrations; adopt the replicas (and fleet servers) that joined, drop
        those that left."""
        registrations = await self.shared.read()
        now = time.monotonic()
        if registrations is None:  # keep what was seen, for as long as a registration lives
            for key, seen in list(self._seen.items()):
                if now - seen > self.shared.ttl:
                    await self._drop(key, "its registration could not be read")
            self._fleet_changed()
            return
        self.gateways = registrations
        wanted = self._wanted(registrations)
        for key, had in list(self._adopted.items()):
            want = wanted.get(key)
            if want is None:
                await self._drop(key, "its registration expired or was withdrawn")
            elif want[2] != had.config.prefix:
                await self._drop(key, "the prefix it is served under changed")
        added: list[Replica] = []
        for key, (published, gateway, prefix) in wanted.items():
            self._seen[key] = now
            replica = self._adopted.get(key)
            if replica is not None:
                replica.registered_by = gateway
                continue
            new = self._adopt(key, published, gateway, prefix)
            if new is not None:
                added.append(new)
        self._fleet_changed()
        for replica in added:
            self.on_added(replica)

    def _fleet_changed(self) -> None:
        fleet: dict[str, ServerConfig] = {}
        for (name, _transport, _url), replica in self._adopted.items():
            if name not in self._own_names and name not in fleet:
                prefix = replica.config.prefix
                fleet[name] = ServerConfig(name=name, transport="http", prefix=prefix)
        if fleet != self.fleet:
            for name in sorted(set(fleet) - set(self.fleet)):
                logger.warning("%s joins from the fleet (registered by another gateway)", name)
            for name in sorted(set(self.fleet) - set(fleet)):
                logger.warning("%s leaves: no live gateway registers it any more", name)
            self.fleet = fleet
            if self.on_fleet is not None:
                self.on_fleet()

    def _wanted(self, registrations: list[Registration]) -> dict[_Key, _Want]:
        wanted: dict[_Key, _Want] = {}
        counts: dict[str, int] = {}
        gateways = {u for r in registrations for u in r.urls} | set(self.urls)
        defined: dict[str, tuple[str | None, str | None]] = {}
        """name -> (prefix, the gateway whose definition it is; ``None``: this one's)"""
        disagreements: list[dict[str, Any]] = []
        for registration in sorted(registrations, key=Registration.order):
            if registration.gateway == self.shared.me:
                continue
            for name, items in registration.servers.items():
                own = self._adoptable.get(name)
                if own is not None:
                    prefix, by = own.prefix, None
                elif name in self._own_names or not self.config.fleet_servers:
                    continue  # declared here with headers, oauth or send_caller (its replicas
                    # are this gateway's own),
                    # or this gateway serves only the servers its file names
                else:
                    prefix, by = defined.setdefault(name, (items[0].prefix, registration.gateway))
                told = False
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
                    if published.prefix != prefix:
                        if not told:
                            told = True
                            disagreements.append(
                                self._disagree(name, registration.gateway, published.prefix,
                                               prefix, by)
                            )  # fmt: skip
                        continue
                    if counts.get(name, 0) >= MAX_ADOPTED:
                        self.shared.tell(
                            f"more than {MAX_ADOPTED} replicas of {name} are registered by "
                            "other gateways: the rest are ignored"
                        )
                        break
                    counts[name] = counts.get(name, 0) + 1
                    wanted[key] = (published, registration.gateway, prefix)
        self.disagreements = disagreements
        return wanted

    def _disagree(
        self, name: str, gateway: str, theirs: str | None, kept: str | None, by: str | None
    ) -> dict[str, Any]:
        whose = "this gateway's configuration" if by is None else f"gateway {by} (older)"
        self.shared.tell(
            f"gateway {gateway} defines {name} with the prefix {theirs!r}, {whose} with "
            f"{kept!r}: its replicas of {name} are not adopted (the gateways disagree)"
        )
        return {"server": name, "gateway": gateway, "theirs": {"prefix": theirs},
                "kept": {"prefix": kept}, "kept_by": by or self.shared.me}  # fmt: skip

    def _adopt(
        self, key: _Key, published: Published, gateway: str, prefix: str | None
    ) -> Replica | None:
        name = key[0]
        own = self._adoptable.get(name)
        group = self.groups.get(name, [])
        index = free_index(group)
        config = ServerConfig(
            name=name,
            transport=published.transport,
            url=published.url,
            prefix=prefix,
            timeout_s=published.timeout_s,
            include_drafts=False if own is None else own.include_drafts,
        )
        try:
            client = self.make_client(config, index)
        except Exception as exc:  # a URL the checks let through must not stop the others
            self.shared.tell(f"a replica of {name} at {published.url!r} cannot be used: {exc}")
            return None
        replica = Replica(config, index, client)
        replica.registered_by = gateway
        self.groups.setdefault(name, []).append(replica)
        self._adopted[key] = replica
        logger.info("%s (%s) joins the pool, registered by gateway %s",
                    replica.label, published.url, gateway)  # fmt: skip
        return replica

    async def _drop(self, key: _Key, why: str) -> None:
        replica = self._adopted.pop(key, None)
        self._seen.pop(key, None)
        if replica is None:
            return
        group = self.groups.get(key[0], [])
        if replica in group:
            group.remove(replica)
        if not group and key[0] not in self._own_names:
            self.groups.pop(key[0], None)
        logger.warning("%s (%s) leaves the pool: %s", replica.label, key[2], why)
        task = asyncio.ensure_future(close_when_idle(replica))
        self._closing[task] = replica
        task.add_done_callback(self._closing.pop)
        if self.on_dropped is not None:
            await self.on_dropped(replica)

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
            "fleet": sorted(self.fleet),
            "disagreements": list(self.disagreements),
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
