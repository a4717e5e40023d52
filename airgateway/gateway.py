"""The gateway: the Server Registry (replicas), Tool Index, Router, Health Checker and access,
wired together. The HTTP endpoint (:mod:`airgateway.endpoint`) is a thin layer over this."""

from __future__ import annotations

import asyncio
import fnmatch
import logging
import secrets
import time
from collections.abc import Callable, Coroutine, Mapping
from dataclasses import replace
from typing import Any, Self

from aircore.settings import REQUEST_STATE_KEY_ENV
from airgateway import eras
from airgateway._state_keys import request_state_keys
from airgateway._wire import HOP_HEADER
from airgateway.access import Access
from airgateway.balancer import Balancer
from airgateway.caller import with_caller
from airgateway.config import ClientConfig, GatewayConfig, ServerConfig, UpstreamOAuth
from airgateway.errors import GatewayError
from airgateway.health import HealthChecker
from airgateway.index import IndexedTool, Listing, ToolIndex
from airgateway.metering import GatewayMeter, without_metered
from airgateway.registry_sync import RegistrySync
from airgateway.reload import diff_entries, unapplied_sections
from airgateway.replica import Replica, close_when_idle, free_index
from airgateway.rounds import InputRounds
from airgateway.router import Router
from airgateway.sessions import SessionBook
from airgateway.shared_health import SharedHealth
from airgateway.shared_registry import SharedRegistry
from airgateway.tasks import TaskRoutes, replica_of
from airgateway.types import JSONDict, MessageHandler, UpstreamClient
from airgateway.upstream_auth import ClientCredentials
from airgateway.upstream_http import HttpUpstream
from airgateway.upstream_sse import SseUpstream
from airgateway.upstream_stdio import StdioUpstream
from airhttp.identity import current_identity
from airstore.types import Store

__all__ = ["INVALID_PARAMS", "Gateway"]

logger = logging.getLogger(__name__)

_NO_SCOPES: frozenset[str] = frozenset()

INVALID_PARAMS = -32602
INVALID_REQUEST = -32600
Notify = Callable[[JSONDict], None]

_LIST_CHANGED = (
    "notifications/tools/list_changed",
    "notifications/resources/list_changed",
    "notifications/prompts/list_changed",
)


DEFAULT_SHARE_REGISTRY = True
"""Gateways sharing a store share their Server Registry unless told otherwise."""


class Gateway:
    """Every upstream behind one front (see the module docstring).

    Args:
        config: the checked configuration.
        store: sessions and rate counters (a ``redis://`` store shares them between gateways).
        token: the gateway's own bearer token (``--token``).
        meter: meters every proxied call (``None``: no metering).
        share_registry: publish this gateway's network replicas in the store and adopt those
            other gateways sharing it publish (:mod:`airgateway.registry_sync`).
        allow_remote: adopt replicas at non-loopback URLs too.
    """

    def __init__(
        self,
        config: GatewayConfig,
        *,
        store: Store,
        token: str | None = None,
        meter: GatewayMeter | None = None,
        share_registry: bool = DEFAULT_SHARE_REGISTRY,
        allow_remote: bool = False,
    ) -> None:
        self.config = config
        self.id = secrets.token_hex(6)
        """This gateway process's id in the store (registry and health marks)."""
        self.store = store
        self.meter = meter
        self.warnings: list[str] = []
        """Problems of the configuration worth telling (logged at start, in ``/status``)."""
        self._state_keys = request_state_keys(config.servers, self.warnings)
        self.index = ToolIndex(config.servers)
        self._credentials: dict[UpstreamOAuth, ClientCredentials] = {}
        """The gateway's own OAuth tokens, one per ``oauth:`` section (replicas share one)."""
        self._send_caller = frozenset(s.name for s in config.servers if s.send_caller)
        self._scopes = {s.name: s.scopes for s in config.servers if s.scopes}
        groups: dict[str, list[Replica]] = {}
        self._groups = groups
        for server in config.servers:
            group = groups.setdefault(server.name, [])
            group.append(Replica(server, len(group), self._client(server, len(group))))
        self.balancer = Balancer(config.balancer.strategy)
        self.router = Router(
            groups,
            self.balancer,
            config.health,
            retries=config.balancer.retries,
            on_state=self._state_changed,
        )
        marks = SharedHealth(store, interval_s=config.health.interval_s, me=self.id)
        self._marks = marks
        self.health = HealthChecker(
            config.health, on_listing=self._listing, on_state=self._state_changed, shared=marks
        )
        self.registry: RegistrySync | None = None
        """The Server Registry shared through the store (``None``: not shared)."""
        if share_registry:
            shared = SharedRegistry(store, me=self.id, interval_s=config.health.interval_s,
                                    allow_remote=allow_remote)  # fmt: skip
            self.registry = RegistrySync(shared, config=config, groups=groups,
                                         make_client=self._client, on_added=self._adopted,
                                         on_ranks=self._ranked, on_dropped=marks.forget,
                                         on_fleet=self._servers_changed)  # fmt: skip
        self.rounds = InputRounds()
        """2026-07-28 clients' calls held for input from legacy-era upstreams."""
        self.sessions = SessionBook(store)
        self.tasks = TaskRoutes(store)
        self.access = Access(config.clients, config.per_tool_rate_per_s, token=token, store=store)
        self._listeners: set[Notify] = set()
        self._started = self._live = False
        self._checks: set[asyncio.Task[Any]] = set()
        self._checking: set[Replica] = set()
        """Replicas with a check started by :meth:`_check_soon` running."""
        self._recheck: set[Replica] = set()
        """Of those, the ones announced changed again meanwhile."""
        self._absence: dict[str, asyncio.TimerHandle] = {}
        """Per server with every replica down: when its tools leave the listing."""
        self._retiring: dict[asyncio.Task[None], Replica] = {}
        """Replicas a reload removed, closing once their last call is over."""

    def _client(self, server: ServerConfig, index: int) -> UpstreamClient:
        label = f"{server.name}#{index}"
        if server.transport == "stdio":
            key = self._state_keys.get(server.name)
            return StdioUpstream(
                label,
                server.command,
                env=server.env if key is None else {**server.env, REQUEST_STATE_KEY_ENV: key},
                cwd=server.cwd,
                listener=self._upstream_notification,
            )
        assert server.url is not None
        headers = {**server.headers, HOP_HEADER: self.id}
        if server.transport == "sse":
            return SseUpstream(
                label, server.url, headers=headers, listener=self._upstream_notification
            )
        credentials = None
        if server.oauth is not None:
            credentials = self._credentials.get(server.oauth)
            if credentials is None:
                credentials = ClientCredentials(server.oauth, label=server.name)
                self._credentials[server.oauth] = credentials
        return HttpUpstream(label, server.url, headers=headers, credentials=credentials)

    @property
    def scopes_of_tools(self) -> Callable[[str], frozenset[str]] | None:
        """:meth:`upstream_scopes` when a server has ``scopes:`` or ``auth.tools`` names tools
        (a renamed tool's old names carry their globs over), else ``None``."""
        return self.upstream_scopes if self.has_tool_scopes() else None

    def has_tool_scopes(self) -> bool:
        """Whether :meth:`upstream_scopes` may name any scope now: a server has ``scopes:``
        (a reload may add or remove them) or ``auth.tools`` names tools. Cheap: the OAuth
        guard asks it on every request, to parse a body for its tool only when it matters."""
        auth = self.config.auth
        return bool(self._scopes) or bool(auth is not None and auth.tools)

    def upstream_scopes(self, tool: str) -> frozenset[str]:
        """The scopes an OAuth caller needs to call ``tool`` beyond the ``auth:`` section's
        globs matching its name: the ``scopes:`` of the server that serves it, and the globs
        matching the tool's other names (its new name when ``tool`` is a deprecated old one,
        its old names when it is the new one: a glob written before ``air migrate --rename``
        keeps protecting the tool). None for a tool no server has."""
        entry = self.index.tool(tool)
        if entry is None:
            return _NO_SCOPES
        need = self._scopes.get(entry.server, _NO_SCOPES)
        globs = self.config.auth.tools if self.config.auth is not None else ()
        if globs:
            others = [n for n in self.index.names_of(entry.name) if n != tool]
            extra = {scope for glob, scopes in globs for scope in scopes
                     if any(fnmatch.fnmatchcase(n, glob) for n in others)}  # fmt: skip
            if extra:
                need = need | extra
        return need

    def missing_server_scopes(self, server: str) -> frozenset[str]:
        """The scopes of ``server``'s ``scopes:`` the current OAuth caller lacks (none for
        other callers: a static token holds every scope)."""
        need = self._scopes.get(server)
        if not need:
            return _NO_SCOPES
        identity = current_identity()
        if identity is None or identity.auth != "oauth":
            return _NO_SCOPES
        return need - identity.scopes

    def check_server_scopes(self, server: str) -> None:
        """Refuse a request to ``server`` from an OAuth caller without its ``scopes:``.

        Raises:
            GatewayError: -32600 ``insufficient_scope``, naming the scopes.
        """
        missing = self.missing_server_scopes(server)
        if missing:
            raise GatewayError(
                f"insufficient_scope: server {server!r} needs {' '.join(sorted(missing))}",
                code=INVALID_REQUEST,
                data={"server": server, "scope": sorted(missing)},
            )

    def hidden_from_caller(self, key: str, item: Mapping[str, Any]) -> bool:
        """Whether a listed resource, template or prompt comes from a server whose ``scopes:``
        the current OAuth caller lacks."""
        server = self.index.server_of(key, item)
        return server is not None and bool(self.missing_server_scopes(server))

    def caller_params(self, server: str, params: JSONDict) -> JSONDict:
        """``params`` as ``server`` gets them: the caller's identity in ``_meta`` if it asked
        for it (``send_caller``), never a client's own ``io.air/caller``."""
        return with_caller(params, send=server in self._send_caller)

    # ---- lifecycle ------------------------------------------------------------------------
    async def start(self) -> None:
        """Connect every replica (a failed one stays out of the pool and is retried every
        health interval), read their listings, report name conflicts, start health checks."""
        if self._started:
            return
        self._started = True
        try:
            await self._start()
        except BaseException:  # withdraw what was registered, close what was opened
            await self.stop()
            raise

    async def _start(self) -> None:
        if self.registry is not None:
            await self.registry.start(self.config.health.interval_s)
        replicas = self.router.all()
        await self.health.check_all(replicas)
        for warning in self.warnings:
            logger.warning("%s", warning)
        for replica in replicas:
            if not replica.healthy:
                logger.warning(
                    "%s is not reachable at start: %s", replica.label, replica.last_error
                )
        self.health.start(self.router.all)
        self._live = True
        if self.meter is not None:
            await self.meter.start()

    async def stop(self) -> None:
        """Stop health checks, close every upstream (stdio children too), flush metering."""
        if not self._started:
            return
        self._started = self._live = False
        for handle in self._absence.values():
            handle.cancel()
        self._absence.clear()
        self.rounds.close()
        if self.registry is not None:
            await self.registry.stop()
        await self.health.stop()
        for task in list(self._checks):
            task.cancel()
        await asyncio.gather(*self._checks, return_exceptions=True)
        retiring = dict(self._retiring)  # the gateway stops: no waiting for their last calls
        for task in retiring:
            task.cancel()
        await asyncio.gather(*retiring, return_exceptions=True)
        closing = [*self.router.all(), *retiring.values()]
        await asyncio.gather(*(r.client.close() for r in closing), return_exceptions=True)
        await asyncio.gather(*(c.close() for c in self._credentials.values()),
                             return_exceptions=True)  # fmt: skip
        if self.meter is not None:
            await self.meter.stop()

    async def __aenter__(self) -> Self:
        await self.start()
        return self

    async def __aexit__(self, *_exc: object) -> None:
        await self.stop()

    # ---- reload ----------------------------------------------------------------------------
    async def reload(self, config: GatewayConfig) -> list[str]:
        """Serve a reloaded configuration's ``servers:`` from now on (a checked one: see
        :mod:`airgateway.reload`). An entry that did not change keeps its replica (its
        connection, health and calls in flight); a new one is connected and checked at once;
        one removed leaves the pool at once and is closed once its calls in flight are over.
        Other gateways sharing the store learn of it at once (the registration is renewed).
        ``registry.fleet_servers`` applies at once too; the other sections take effect at the
        next start (each one changed is logged).

        Returns:
            What changed, one line each (logged too).
        """
        lines = [f"the {section} section changed: it takes effect when the gateway restarts"
                 for section in unapplied_sections(self.config, config)]  # fmt: skip
        own = [r for r in self.router.all() if r.registered_by is None]
        kept, new, removed = diff_entries(own, config.servers)
        self.config = replace(self.config, servers=config.servers, path=config.path,
                              fleet_servers=config.fleet_servers)  # fmt: skip
        self._send_caller = frozenset(s.name for s in config.servers if s.send_caller)
        self._scopes = {s.name: s.scopes for s in config.servers if s.scopes}
        self.warnings = []
        keys = request_state_keys(config.servers, self.warnings)
        self._state_keys = {name: self._state_keys.get(name, key) for name, key in keys.items()}
        for replica, server in kept:
            replica.config = server
        for replica in removed:
            group = self._groups.get(replica.name, [])
            group.remove(replica)
            if not group:
                del self._groups[replica.name]
            lines.append(f"{replica.label} ({replica.config.target}) is removed")
        added: list[Replica] = []
        for server in new:
            group = self._groups.setdefault(server.name, [])
            index = free_index(group)
            replica = Replica(server, index, self._client(server, index))
            group.append(replica)
            added.append(replica)
            lines.append(f"{replica.label} ({server.target}) is added")
        if self.registry is not None:
            self.registry.reconfigure(self.config)
        self._servers_changed()
        for line in lines:
            logger.warning("reload: %s", line)
        for replica in removed:
            await self._marks.forget(replica)
            task = asyncio.ensure_future(self._retire(replica))
            self._retiring[task] = replica
            task.add_done_callback(self._retiring.pop)
        for replica in added:
            self._check_soon(replica)
        if self.registry is not None and self._started:
            await self.registry.publish()
            await self.registry.refresh()
        return lines

    async def _retire(self, replica: Replica) -> None:
        """Close a replica that left the pool (once idle), then the OAuth credentials (their
        HTTP session and background refresh) that no other replica uses any more."""
        await close_when_idle(replica)
        others = [*self.router.all(), *(r for r in self._retiring.values() if r is not replica)]
        used = {r.config.oauth for r in others if r.config.oauth is not None}
        for key in [k for k in self._credentials if k not in used]:
            try:
                await self._credentials.pop(key).close()
            except Exception:  # its session is gone either way
                logger.debug("closing the credentials of %s failed", replica.label, exc_info=True)

    def _servers_changed(self) -> None:
        """The set of servers served changed (a reload, a fleet server joining or leaving)."""
        fleet = [] if self.registry is None else list(self.registry.fleet.values())
        if self.index.set_servers([*self.config.servers, *fleet]):
            self._list_changed()
        for name in [n for n in self._absence if n not in self._groups]:
            self._absence.pop(name).cancel()

    # ---- index upkeep ---------------------------------------------------------------------
    async def _listing(self, replica: Replica, listing: Listing) -> None:
        group = self.router.replicas.get(replica.name, ())
        source = next((r for r in group if r.healthy), None)
        if source is not replica:
            return  # the first healthy replica of a server speaks for it
        if self.index.update(replica.name, listing):
            for method in _LIST_CHANGED:
                self._broadcast({"jsonrpc": "2.0", "method": method, "params": {}})

    def _adopted(self, replica: Replica) -> None:
        if self._live:  # at start, the first round checks it
            self._check_soon(replica)

    def _ranked(self, ranks: Mapping[str, int]) -> None:
        if self.index.rank(ranks):
            for method in _LIST_CHANGED:
                self._broadcast({"jsonrpc": "2.0", "method": method, "params": {}})

    def listening(self, url: str) -> None:
        """Tell the gateway its own endpoint's URL: it is published, and no gateway sharing
        the store adopts it as a replica (:meth:`RegistrySync.listening`)."""
        if self.registry is not None:
            self._background(self.registry.listening([url]))

    def _check_soon(self, replica: Replica) -> None:
        """Check ``replica`` now. One check per replica at a time: list changes announced
        while it runs fold into one more check after it (an upstream writing thousands of
        ``list_changed`` would otherwise start as many checks at once)."""
        if replica in self._checking:
            self._recheck.add(replica)
            return
        self._checking.add(replica)
        self._background(self._check_until_settled(replica))

    async def _check_until_settled(self, replica: Replica) -> None:
        try:
            while True:
                self._recheck.discard(replica)
                await self.health.check(replica)
                if replica not in self._recheck:
                    return
        finally:
            self._checking.discard(replica)
            self._recheck.discard(replica)

    def _background(self, work: Coroutine[Any, Any, Any]) -> None:
        task = asyncio.ensure_future(work)
        self._checks.add(task)
        task.add_done_callback(self._checks.discard)

    def _state_changed(self, replica: Replica) -> None:
        if not replica.healthy:
            self.health.wake()  # check the others soon; the pool just shrank
            self._watch_absence(replica.name)
            return
        handle = self._absence.pop(replica.name, None)
        if handle is not None:
            handle.cancel()
        if self.index.set_absent(replica.name, False):
            logger.info("%s is back: its tools are listed again", replica.name)
            self._list_changed()

    def _down_for(self, server: str) -> float | None:
        """Seconds since the last replica of ``server`` left the pool; ``None`` while one
        is in it (or was never seen down)."""
        group = self.router.replicas.get(server, [])
        since = [r.down_since for r in group if not r.healthy and not r.retired]
        if not group or len(since) != len(group) or None in since:
            return None
        return time.monotonic() - max(s for s in since if s is not None)

    def _watch_absence(self, server: str) -> None:
        """Take ``server``'s tools out of the listing once every replica has been down for
        ``health.unhealthy_for_s`` (checked again then; a replica back cancels it)."""
        down = self._down_for(server)
        if down is None or not self._started:
            return
        old = self._absence.pop(server, None)
        if old is not None:
            old.cancel()
        wait = self.config.health.unhealthy_for_s - down
        if wait > 0:
            loop = asyncio.get_running_loop()
            self._absence[server] = loop.call_later(wait, self._watch_absence, server)
        elif self.index.set_absent(server, True):
            logger.warning(
                "%s has been down for %.0f s (health.unhealthy_for_s): its tools leave "
                "tools/list until it is back",
                server,
                down,
            )
            self._list_changed()

    def _list_changed(self) -> None:
        for method in _LIST_CHANGED:
            self._broadcast({"jsonrpc": "2.0", "method": method, "params": {}})

    def _upstream_notification(self, label: str, message: JSONDict) -> None:
        method = message.get("method")
        if method in _LIST_CHANGED:
            replica = self.router.find(label)
            if replica is not None:
                self._check_soon(replica)
        else:
            logger.debug("%s: %s", label, method)

    def listen(self, notify: Notify) -> Callable[[], None]:
        """Be told of list changes; returns the function that stops it."""
        self._listeners.add(notify)
        return lambda: self._listeners.discard(notify)

    def _broadcast(self, message: JSONDict) -> None:
        for notify in list(self._listeners):
            try:
                notify(message)
            except Exception:
                logger.exception("a list-changed listener failed")

    # ---- calls -----------------------------------------------------------------------------
    def legacy_era(self, server: str) -> bool:
        """Whether a replica of ``server`` speaks the legacy era (its questions to the client
        come mid-call, see :mod:`airgateway.rounds`)."""
        return any(r.client.era == eras.LEGACY for r in self.router.replicas.get(server, ()))

    def tool(self, name: Any) -> IndexedTool:
        """The exposed tool of that name.

        Raises:
            GatewayError: -32602 for an unknown tool.
        """
        entry = self.index.tool(name) if isinstance(name, str) else None
        if entry is None:
            raise GatewayError(f"Unknown tool: {name}", code=INVALID_PARAMS, data={"name": name})
        return entry

    async def call_tool(
        self,
        params: JSONDict,
        *,
        client: ClientConfig | None = None,
        session_key: str | None = None,
        on_message: MessageHandler | None = None,
        request_id: Any = None,
        protocol_version: str | None = None,
    ) -> JSONDict:
        """Route one ``tools/call`` (access, rate limits, replica, retries, metering).

        Raises:
            GatewayError: unknown tool, access denied, rate limited, or no replica answered;
                an upstream's own JSON-RPC error as :class:`~airgateway.errors.UpstreamError`.
        """
        entry = self.tool(params.get("name"))
        self.access.check(client, entry.name)
        await self.access.admit(client, entry.name)
        upstream = self.caller_params(entry.server, {**params, "name": entry.upstream_name})
        picked: list[Replica] = []
        meter = self.meter
        if meter is None:
            result = await self.router.send(
                entry.server,
                "tools/call",
                upstream,
                retry_safe=entry.retry_safe,
                session_key=session_key,
                on_message=on_message,
                picked=picked,
            )
            await self.task_started(result, entry, picked, client)
            return without_metered(result)
        call = meter.begin(
            entry,
            upstream,
            client=client,
            request_id=request_id,
            session_id=session_key,
            protocol_version=protocol_version,
        )
        try:
            result = await self.router.send(
                entry.server,
                "tools/call",
                call.params,
                retry_safe=entry.retry_safe,
                session_key=session_key,
                on_message=on_message,
                picked=picked,
            )
        except BaseException as exc:
            meter.end(call, picked, None, exc)
            raise
        meter.end(call, picked, result, None)
        await self.task_started(result, entry, picked, client)
        return without_metered(result)  # the upstream's marker is for this gateway only

    async def task_started(
        self, result: JSONDict, entry: IndexedTool, picked: list[Replica],
        client: ClientConfig | None,
    ) -> None:  # fmt: skip
        """Keep the route of a task a call just started (a ``CreateTaskResult``)."""
        if result.get("resultType") == "task" and picked:
            await self.tasks.remember(result, server=entry.server, replica=picked[-1].index,
                                      tool=entry.name, client=client,
                                      url=picked[-1].config.url)  # fmt: skip

    async def task_request(
        self, method: str, params: JSONDict, *, client: ClientConfig | None
    ) -> JSONDict:
        """Send ``tasks/get|update|cancel`` to the replica that started the task.

        Raises:
            GatewayError: -32602 for a task this client did not start through a gateway
                sharing this store (or one that expired); access denied when its allow list
                no longer admits the tool; the replica's own errors.
        """
        task_id = params.get("taskId")
        route = await self.tasks.find(task_id)
        name = None if client is None else client.name
        group = None if route is None else self.router.replicas.get(route.server)
        replica = None
        if route is not None and group is not None and route.client == name:
            replica = replica_of(route, group)
        if route is None or replica is None:
            raise GatewayError("Failed to retrieve task: Task not found", code=INVALID_PARAMS,
                               data={"taskId": task_id})  # fmt: skip
        self.access.check(client, route.tool)
        self.check_server_scopes(route.server)
        params = self.caller_params(route.server, params)  # never a client's own caller
        result = await replica.client.request(method, params, timeout=replica.config.timeout_s)
        return without_metered(result)

    async def forward(
        self,
        server: str,
        method: str,
        params: JSONDict,
        *,
        session_key: str | None = None,
        on_message: MessageHandler | None = None,
    ) -> JSONDict:
        """Send a read-only request (``resources/read``, ``prompts/get`` …) to a server.

        Raises:
            GatewayError: the caller lacks the server's ``scopes:``; the server's own errors.
        """
        self.check_server_scopes(server)
        params = self.caller_params(server, params)
        return await self.router.send(
            server, method, params, retry_safe=True, session_key=session_key, on_message=on_message
        )

    # ---- status ----------------------------------------------------------------------------
    def status(self) -> JSONDict:
        """What ``GET /status`` answers: every replica's state (and which gateway registered
        it), the name conflicts, warnings and the shared registry's live gateways."""
        now = time.monotonic()
        upstreams = [
            {
                "name": r.name,
                "url": r.config.target,
                "replica": r.index,
                "transport": r.config.transport,
                "state": r.state,
                "latency_ms": None if r.latency_ms is None else round(r.latency_ms, 3),
                "in_flight": r.in_flight,
                "last_error": r.last_error,
                "last_error_age_s": r.error_status(now)[0],
                "recovered": r.error_status(now)[1],
                "tools": r.tools,
                "registered_by": r.registered_by,
            }
            for r in self.router.all()
        ]
        return {
            "upstreams": upstreams,
            "conflicts": [c.to_json() for c in self.index.conflicts],
            "warnings": list(self.warnings),
            "registry": None if self.registry is None else self.registry.status(),
        }
