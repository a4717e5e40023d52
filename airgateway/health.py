"""The Health Checker: every interval, each replica gets a liveness probe and a ``tools/list``.

A replica that is down (or never came up) is reconnected (a new handshake); one that is up
gets ``ping`` (legacy) or ``server/discover`` (2026-07-28). Then its listings are read and
handed to the index, so a changed ``tools/list`` reaches clients even from an upstream that
never sends ``list_changed``. ``unhealthy_after`` consecutive failures (active or passive)
take a replica out of the pool; ``healthy_after`` consecutive successes bring it back.
Gateways sharing a store share what their checks find (:mod:`airgateway.shared_health`).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import Any

from airgateway import eras
from airgateway.config import HealthConfig
from airgateway.errors import GatewayError, UpstreamError
from airgateway.index import Listing
from airgateway.replica import DOWN, STARTING, Replica
from airgateway.shared_health import POLL_S, SharedHealth

__all__ = ["MAX_PAGES", "HealthChecker", "read_listing"]

logger = logging.getLogger(__name__)

MAX_PAGES = 100
"""Pages of one list read at most (a cursor that never ends is cut off here)."""
_METHOD_NOT_FOUND = -32601


async def _list_all(replica: Replica, method: str, key: str, timeout: float) -> tuple[Any, ...]:
    items: list[Any] = []
    cursor: Any = None
    for _ in range(MAX_PAGES):
        params: dict[str, Any] = {} if cursor is None else {"cursor": cursor}
        try:
            page = await replica.client.request(method, params, timeout=timeout)
        except UpstreamError as exc:
            if exc.code == _METHOD_NOT_FOUND:
                return ()
            raise
        found = page.get(key)
        if isinstance(found, list):
            items.extend(x for x in found if isinstance(x, dict))
        cursor = page.get("nextCursor")
        if not cursor:
            break
    return tuple(items)


async def read_listing(replica: Replica, timeout: float) -> Listing:
    """Every tool, resource, template and prompt a replica lists (all pages).

    Raises:
        UpstreamError: the upstream refused ``tools/list``.
        UpstreamUnavailableError: it did not answer.
    """
    return Listing(
        tools=await _list_all(replica, "tools/list", "tools", timeout),
        resources=await _list_all(replica, "resources/list", "resources", timeout),
        templates=await _list_all(
            replica, "resources/templates/list", "resourceTemplates", timeout
        ),
        prompts=await _list_all(replica, "prompts/list", "prompts", timeout),
    )


class HealthChecker:
    """Checks every replica each ``interval_s`` (see the module docstring).

    Args:
        config: the health section.
        on_listing: told ``(replica, listing)`` after every successful check.
        on_state: told ``(replica)`` when a replica leaves or rejoins the pool.
        shared: the health shared with other gateways through the store, if any.
    """

    def __init__(
        self,
        config: HealthConfig,
        *,
        on_listing: Callable[[Replica, Listing], Awaitable[None]],
        on_state: Callable[[Replica], None],
        shared: SharedHealth | None = None,
    ) -> None:
        self.config = config
        self.on_listing = on_listing
        self.on_state = on_state
        self.shared = shared
        self._task: asyncio.Task[None] | None = None
        self._poller: asyncio.Task[None] | None = None
        self._wake = asyncio.Event()

    async def check(self, replica: Replica) -> bool:
        """Check one replica now; return whether it answered."""
        timeout = self.config.timeout_s
        try:
            async with asyncio.timeout(timeout * 3):
                if replica.state in (DOWN, STARTING) or replica.client.era is None:
                    await replica.client.connect()
                elif replica.client.era == eras.MODERN:
                    await replica.client.request("server/discover", {}, timeout=timeout)
                else:
                    await replica.client.request("ping", {}, timeout=timeout)
                listing = await read_listing(replica, timeout)
        except (GatewayError, TimeoutError, OSError) as exc:
            message = str(exc) or (
                f"no answer within {timeout * 3:g} s"
                if isinstance(exc, TimeoutError)
                else type(exc).__name__
            )
            if replica.failed(message, self.config.unhealthy_after):
                logger.warning("%s is out of the pool: %s", replica.label, message)
                self.on_state(replica)
            shared = self.shared
            if shared is not None and replica.state == DOWN and shared.shared(replica):
                await shared.mark(replica, message)
            return False
        replica.tools = len(listing.tools)
        if replica.succeeded(self.config.healthy_after):
            logger.info("%s is in the pool", replica.label)
            self.on_state(replica)
        if self.shared is not None:
            await self.shared.clear(replica)
        await self.on_listing(replica, listing)
        return True

    async def poll(self, replicas: list[Replica]) -> None:
        """Read the other gateways' marks now: hold down the replicas they hold down, and
        check again soon the ones they let go."""
        if self.shared is None:
            return
        foreign = await self.shared.foreign(replicas)
        for replica in replicas:
            error = foreign.get(replica.label)
            if error is not None:
                if replica.hold(error):
                    logger.warning("%s is out of the pool: %s", replica.label, replica.last_error)
                    self.on_state(replica)
            elif replica.held is not None:
                replica.held = None
                self.wake()  # its own check brings it back

    async def check_all(self, replicas: list[Replica]) -> None:
        """Check every replica at once (after reading the other gateways' marks)."""
        await self.poll(replicas)
        await asyncio.gather(*(self.check(r) for r in replicas))

    def start(self, replicas: Callable[[], list[Replica]]) -> None:
        """Check every ``interval_s`` from now on (and whenever :meth:`wake` is called).

        Args:
            replicas: gives the replicas to check, at each round (the pool may grow or
                shrink: :mod:`airgateway.registry_sync`).
        """

        async def loop() -> None:
            while True:
                try:
                    async with asyncio.timeout(self.config.interval_s):
                        await self._wake.wait()
                except TimeoutError:
                    pass
                self._wake.clear()
                try:
                    await self.check_all(replicas())
                except Exception:  # a bug must not stop health checking
                    logger.exception("health check failed")

        async def polling() -> None:
            while True:
                await asyncio.sleep(min(POLL_S, self.config.interval_s))
                try:
                    await self.poll(replicas())
                except Exception:
                    logger.exception("reading the shared health failed")

        if self._task is None:
            self._task = asyncio.ensure_future(loop())
        if self._poller is None and self.shared is not None:
            self._poller = asyncio.ensure_future(polling())

    def wake(self) -> None:
        """Check again soon (an upstream said its list changed; a replica was ejected)."""
        self._wake.set()

    async def stop(self) -> None:
        """Stop checking. Idempotent."""
        tasks = [t for t in (self._task, self._poller) if t is not None]
        self._task = self._poller = None
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
