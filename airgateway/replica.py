"""One replica of an upstream server: its connection and its health as the router sees it."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Sequence

from airgateway.config import ServerConfig
from airgateway.types import UpstreamClient

__all__ = [
    "DOWN",
    "HEALTHY",
    "LATENCY_WEIGHT",
    "STARTING",
    "Replica",
    "close_when_idle",
    "free_index",
]

logger = logging.getLogger(__name__)

STARTING = "starting"
HEALTHY = "healthy"
DOWN = "down"
LATENCY_WEIGHT = 0.2
"""Weight of the newest call in the moving average of latency (p2c_latency)."""
DRAIN_POLL_S = 0.05
"""How often a replica that left the pool is looked at until its last call is over."""


class Replica:
    """A replica's connection and counters (in flight, latency, consecutive results).

    Args:
        config: its configuration entry.
        index: its position among the replicas of its server (0-based).
        client: its upstream connection.
    """

    __slots__ = (
        "client",
        "config",
        "down_since",
        "failures",
        "held",
        "in_flight",
        "index",
        "instance",
        "label",
        "last_error",
        "last_error_at",
        "last_ok_at",
        "latency_ms",
        "registered_by",
        "retired",
        "state",
        "successes",
        "tools",
    )

    def __init__(self, config: ServerConfig, index: int, client: UpstreamClient) -> None:
        self.config = config
        self.index = index
        self.label = f"{config.name}#{index}"
        self.instance = config.url if config.url is not None else self.label
        """The replica's name in metering and session hashing: the same in every gateway for
        a network replica (its URL); a stdio replica is this gateway's own child (its label)."""
        self.client = client
        self.state = STARTING
        self.in_flight = 0
        self.latency_ms: float | None = None
        self.failures = 0
        self.successes = 0
        self.last_error: str | None = None
        self.last_error_at: float | None = None
        """``time.monotonic()`` when ``last_error`` was set."""
        self.down_since: float | None = None
        """``time.monotonic()`` when it left the pool (``None`` while in it or starting)."""
        self.last_ok_at: float | None = None
        """``time.monotonic()`` of the newest success (a call or a probe)."""
        self.tools = 0
        self.held: str | None = None
        """Another gateway sharing the store holds this replica down (its error), see
        :mod:`airgateway.shared_health`: it stays out of the pool until that is over."""
        self.registered_by: str | None = None
        """The gateway whose registration brought this replica (``None``: this gateway's own
        configuration), see :mod:`airgateway.registry_sync`."""
        self.retired = False
        """It left the pool for good (an adopted replica whose registration is gone)."""

    @property
    def name(self) -> str:
        """The server's name (shared by its replicas)."""
        return self.config.name

    @property
    def healthy(self) -> bool:
        """Whether the balancer may pick it."""
        return self.state == HEALTHY

    def error_status(self, now: float) -> tuple[float | None, bool]:
        """``(age of last_error in seconds, recovered)`` at ``now`` (``time.monotonic()``):
        recovered when a success came after the error (so the error is stale)."""
        at = self.last_error_at
        if at is None:
            return None, False
        ok = self.last_ok_at
        return round(max(0.0, now - at), 1), ok is not None and ok >= at

    def observe(self, started: float) -> None:
        """Fold one call's latency (``started`` from ``time.perf_counter``) into the average."""
        ms = (time.perf_counter() - started) * 1000.0
        old = self.latency_ms
        self.latency_ms = ms if old is None else old + LATENCY_WEIGHT * (ms - old)

    def succeeded(self, healthy_after: int) -> bool:
        """Count a success; return True when it brings the replica back into the pool."""
        self.failures = 0
        self.last_ok_at = time.monotonic()
        if self.state == HEALTHY:
            return False
        if self.held is not None:  # not back while another gateway holds it down
            self.successes = 0
            return False
        self.successes += 1
        if self.successes >= healthy_after:
            self.state, self.successes, self.last_error = HEALTHY, 0, None
            self.down_since = None
            return True
        return False

    def hold(self, error: str) -> bool:
        """Another gateway holds the replica down; return True when that takes it out of
        this gateway's pool."""
        self.held = error
        self.successes = 0
        self.last_error = f"down at another gateway: {error}"
        self.last_error_at = time.monotonic()
        if self.state == DOWN:
            return False
        self.state = DOWN
        self.down_since = time.monotonic()
        return True

    def failed(self, error: str, unhealthy_after: int) -> bool:
        """Count a failure; return True when it takes the replica out of the pool."""
        self.successes = 0
        self.failures += 1
        self.last_error = error
        self.last_error_at = time.monotonic()
        if self.state != DOWN and (self.failures >= unhealthy_after or self.state == STARTING):
            self.state = DOWN
            self.down_since = time.monotonic()
            return True
        return False


def free_index(group: Sequence[Replica]) -> int:
    """The lowest replica index no replica of ``group`` has (indices of replicas that left
    are given again, so they never grow with churn)."""
    taken = {r.index for r in group}
    return next(i for i in range(len(taken) + 1) if i not in taken)


async def close_when_idle(replica: Replica) -> None:
    """Close a replica that left the pool once its calls in flight are over, or after its
    per-call timeout at most (its connection is gone either way)."""
    deadline = time.monotonic() + replica.config.timeout_s
    # the router counts calls with a bare int (the call path stays free of events)
    while replica.in_flight > 0 and time.monotonic() < deadline:  # noqa: ASYNC110
        await asyncio.sleep(DRAIN_POLL_S)
    try:
        await replica.client.close()
    except Exception:  # its connection is gone either way
        logger.debug("closing %s failed", replica.label, exc_info=True)
