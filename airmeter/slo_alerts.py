"""SLO alerts: once per state change, to a log line, a webhook and Python callbacks.

One evaluator should alert, not one per server process: run :class:`SloWatcher` in one place
(``air meter slo --watch``, or the dashboard process). Several watchers on one store still
alert once: each state change is claimed through the store's atomic ``incr`` (Redis INCRBY, one
SQLite statement, under the journal lock across processes for a FileStore) under the namespace
:data:`SLO_NAMESPACE`, and only the watcher that claims it alerts. A watcher that cannot write
the store (a FileStore another process holds) alerts from its own memory, and logs once that it
cannot deduplicate.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import logging
import time
from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Final

import orjson

from airmeter.slo import SloEvaluator, SloState, SloStatus
from airmeter.slo_config import Objective, SloTarget
from airstore.errors import AirstoreError, ReadOnlyStoreError
from airstore.types import Store

__all__ = [
    "CLAIM_TTL",
    "SLO_NAMESPACE",
    "AlertSink",
    "SloAlert",
    "SloWatcher",
    "WebhookAlerts",
    "log_alert",
]

logger = logging.getLogger(__name__)

SLO_NAMESPACE: Final = "meter.slo"
"""Keys ``state:{status key}`` (the last state alerted) and ``claim:{status key}:{version}``."""
CLAIM_TTL: Final = 3600.0
"""A claim lives this long (a watcher that died after claiming is replaced after it)."""
WEBHOOK_TIMEOUT: Final = 5.0
"""Longest wait on a webhook, in seconds."""

AlertSink = Callable[["SloAlert"], Awaitable[None] | None]
"""Receives each alert: a function or a coroutine function."""


@dataclass(frozen=True, slots=True, kw_only=True)
class SloAlert:
    """A state change of one target for one server's tool."""

    status: SloStatus
    previous: SloState
    at_ms: int

    @property
    def resolved(self) -> bool:
        """Whether it went back to ``ok``."""
        return self.status.state == "ok"

    @property
    def message(self) -> str:
        """One line for a log or a chat message."""
        s = self.status
        what = f"{s.kind} {s.target:g}" + (f" <= {s.threshold_ms:g} ms" if s.threshold_ms else "")
        head = (f"SLO resolved ({self.previous} -> ok)" if self.resolved
                else f"SLO {s.state.upper()} (was {self.previous})")  # fmt: skip
        return (
            f"{head}: {s.server}/{s.tool} {what} over {s.period}: budget "
            f"{s.budget_remaining * 100:.1f}% left, burn 1h {s.burn_rate_1h:.1f}x / 5m "
            f"{s.burn_rate_5m:.1f}x / 6h {s.burn_rate_6h:.1f}x / 30m {s.burn_rate_30m:.1f}x"
        )

    def to_dict(self) -> dict[str, Any]:
        """The JSON a webhook receives."""
        return {"alert": "resolved" if self.resolved else self.status.state,
                "previous": self.previous, "at_ms": self.at_ms, "message": self.message,
                "slo": self.status.to_dict()}  # fmt: skip


def log_alert(alert: SloAlert) -> None:
    """An alert as a log line (warning; a resolve as info) on ``airmeter.slo_alerts``."""
    logger.log(logging.INFO if alert.resolved else logging.WARNING, "%s", alert.message)


class WebhookAlerts:
    """POSTs each alert as JSON to a URL (failures are logged, never raised).

    Args:
        url: an ``http://`` or ``https://`` URL.
        timeout: longest wait on one POST.
    """

    def __init__(self, url: str, *, timeout: float = WEBHOOK_TIMEOUT) -> None:
        if not url.startswith(("http://", "https://")):
            from airmeter.errors import MeterConfigError

            raise MeterConfigError(f"webhook URL must be http(s)://, got {url!r}")
        self.url = url
        self.timeout = timeout
        self.failures = 0

    async def __call__(self, alert: SloAlert) -> None:
        """Send one alert (on a worker thread)."""
        body = orjson.dumps(alert.to_dict())
        try:
            await asyncio.wait_for(asyncio.to_thread(self._post, body), self.timeout + 1.0)
        except Exception:  # an unreachable hook must not stop the watcher
            self.failures += 1
            logger.exception("airmeter: SLO webhook %s failed", self.url)

    def _post(self, body: bytes) -> None:
        import urllib.request  # only a watcher with a webhook needs it

        request = urllib.request.Request(
            self.url, data=body, method="POST", headers={"Content-Type": "application/json"}
        )
        with urllib.request.urlopen(request, timeout=self.timeout) as response:
            response.read()


class SloWatcher:
    """Evaluates objectives and alerts once per state change (see the module docstring).

    Args:
        store: the store holding the rollups (and, when writable, the alert claims).
        objectives: objectives or targets.
        sinks: where alerts go (default: :func:`log_alert`).
        clock: seconds since the epoch.
    """

    def __init__(
        self,
        store: Store,
        objectives: Iterable[Objective | SloTarget],
        *,
        sinks: Sequence[AlertSink] = (log_alert,),
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._store = store
        self._evaluator = SloEvaluator(store, objectives, clock=clock)
        self._sinks = list(sinks)
        self._clock = clock
        self._memory: dict[str, SloState] = {}
        self._shared = True
        self.alerts_sent = 0

    async def evaluate(self) -> list[SloStatus]:
        """Evaluate once, without alerting.

        Raises:
            airstore.AirstoreError: the store cannot be read.
        """
        return await self._evaluator.evaluate()

    async def check(self) -> tuple[list[SloStatus], list[SloAlert]]:
        """Evaluate once and send the alerts this watcher claimed.

        Returns:
            The statuses and the alerts sent.

        Raises:
            airstore.AirstoreError: the store cannot be read.
        """
        statuses = await self._evaluator.evaluate()
        sent = []
        for status in statuses:
            previous = await self._claim(status)
            if previous is None:
                continue
            alert = SloAlert(status=status, previous=previous, at_ms=int(self._clock() * 1000))
            for sink in self._sinks:
                try:
                    outcome = sink(alert)
                    if inspect.isawaitable(outcome):
                        await outcome
                except Exception:  # one broken sink must not silence the others
                    logger.exception("airmeter: an SLO alert sink failed")
            sent.append(alert)
        self.alerts_sent += len(sent)
        return statuses, sent

    async def _claim(self, status: SloStatus) -> SloState | None:
        """The previous state when this watcher owns the change to ``status.state``, else
        ``None`` (no change, or another watcher claimed it)."""
        if self._shared:
            try:
                return await self._claim_shared(status)
            except ReadOnlyStoreError:
                self._shared = False
                logger.warning("airmeter: the store is read-only here; SLO alerts are not "
                               "deduplicated with other watchers")  # fmt: skip
        previous = self._memory.get(status.key, "ok")
        self._memory[status.key] = status.state
        return None if previous == status.state else previous

    async def _claim_shared(self, status: SloStatus) -> SloState | None:
        key = f"state:{status.key}"
        stored = await self._store.get(SLO_NAMESPACE, key)
        previous: SloState = "ok"
        version = 0
        if isinstance(stored, dict):
            state = stored.get("state")
            previous = state if state in ("ok", "warning", "breach") else "ok"
            raw = stored.get("version")
            version = raw if isinstance(raw, int) else 0
        if previous == status.state:
            return None
        claimed = await self._store.incr(SLO_NAMESPACE, f"claim:{status.key}:{version}",
                                         ttl=CLAIM_TTL)  # fmt: skip
        if claimed != 1:
            return None  # another watcher owns this change and alerts for it
        doc = {"state": status.state, "version": version + 1,
               "at_ms": int(self._clock() * 1000)}  # fmt: skip
        await self._store.set(SLO_NAMESPACE, key, doc)
        return previous

    async def run(self, *, interval: float = 30.0, stop: asyncio.Event | None = None) -> None:
        """Check every ``interval`` seconds until ``stop`` is set (store errors are logged)."""
        stop = stop or asyncio.Event()
        while not stop.is_set():
            try:
                await self.check()
            except AirstoreError:
                logger.exception("airmeter: SLO evaluation failed; trying again")
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), interval)
