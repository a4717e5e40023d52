"""SLO alerts: once per state change, to a log line, a webhook and Python callbacks.

One evaluator should alert, not one per server process: run :class:`SloWatcher` in one place
(``air meter slo --watch``, or the dashboard process). Several watchers on one store still
alert once: each state change is claimed through the store's atomic ``incr`` (Redis INCRBY, one
SQLite statement, under the journal lock across processes for a FileStore) under the namespace
:data:`SLO_NAMESPACE`, and only the watcher that claims it alerts. A watcher that cannot write
the store (a FileStore another process holds) alerts from its own memory, and logs once that it
cannot deduplicate.

A webhook (:class:`WebhookAlerts`) never holds the watcher up: each alert is POSTed in the
background under a total deadline (connect, send and the whole answer), at most
:data:`WEBHOOK_MAX_PENDING` at once per hook, past which alerts to that hook are dropped and
counted; no thread is used, so a hook that answers one byte every few seconds costs a socket
for :data:`WEBHOOK_TIMEOUT` seconds, never a worker, and the other sinks alert on. The URL
comes from trusted configuration only (``AIR_SLO_WEBHOOK_URL``, code): the watcher POSTs to
whatever it names, internal addresses included, so it must never come from a client. Redirects
are not followed.
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

from airmeter.redact import redact_text
from airmeter.slo import STATES, SloEvaluator, SloState, SloStatus
from airmeter.slo_config import Objective, SloTarget
from airstore.errors import AirstoreError, ReadOnlyStoreError
from airstore.types import Store

__all__ = [
    "CLAIM_TTL",
    "SLO_NAMESPACE",
    "WEBHOOK_MAX_PENDING",
    "WEBHOOK_TIMEOUT",
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
"""Total deadline of one webhook POST, in seconds: connect, send and the whole answer."""
WEBHOOK_MAX_PENDING: Final = 8
"""At most this many alerts are being POSTed to one webhook at once; more are dropped."""

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
    """POSTs each alert as JSON to a URL, in the background (failures are logged and counted,
    never raised; see the module docstring).

    The URL must come from trusted configuration: the watcher's host POSTs to it, whatever it
    names (SSRF).

    Args:
        url: an ``http://`` or ``https://`` URL.
        timeout: total deadline of one POST (connect, send, the whole answer), in seconds.
        max_pending: most POSTs in flight to this hook; an alert past it is dropped (counted
            in :attr:`dropped`).

    Attributes:
        sent: alerts the hook answered with a 2xx/3xx status.
        failures: alerts that failed (refused, an error status, past the deadline).
        dropped: alerts not sent because ``max_pending`` were in flight.
    """

    def __init__(
        self, url: str, *, timeout: float = WEBHOOK_TIMEOUT, max_pending: int = WEBHOOK_MAX_PENDING
    ) -> None:
        from airmeter.errors import MeterConfigError

        if not url.startswith(("http://", "https://")):
            raise MeterConfigError(f"webhook URL must be http(s)://, got {redact_text(url)!r}")
        if not timeout > 0 or max_pending < 1:
            raise MeterConfigError("webhook timeout must be positive and max_pending at least 1")
        self.url = url
        self.timeout = timeout
        self.max_pending = max_pending
        self.sent = 0
        self.failures = 0
        self.dropped = 0
        self._pending: set[asyncio.Task[None]] = set()

    @property
    def pending(self) -> int:
        """POSTs in flight now."""
        return len(self._pending)

    async def __call__(self, alert: SloAlert) -> None:
        """Start sending one alert and return at once (dropped when ``max_pending`` are in
        flight)."""
        if len(self._pending) >= self.max_pending:
            self.dropped += 1
            logger.warning("airmeter: SLO webhook %s has %d alerts in flight; one dropped "
                           "(%d so far)", redact_text(self.url), len(self._pending),
                           self.dropped)  # fmt: skip
            return
        task = asyncio.create_task(self._send(orjson.dumps(alert.to_dict())))
        self._pending.add(task)
        task.add_done_callback(self._pending.discard)

    async def drain(self, timeout: float | None = None) -> None:
        """Wait until the POSTs in flight end (each within its deadline), or ``timeout``."""
        if self._pending:
            await asyncio.wait(set(self._pending), timeout=timeout)

    async def aclose(self) -> None:
        """Wait for the POSTs in flight (at most one deadline), then cancel what is left."""
        await self.drain(self.timeout)
        for task in list(self._pending):
            task.cancel()
        if self._pending:
            await asyncio.wait(set(self._pending))

    async def _send(self, body: bytes) -> None:
        try:
            async with asyncio.timeout(self.timeout):  # the whole POST, whatever aiohttp does
                status = await self._post(body)
        except (Exception, TimeoutError) as exc:  # an unreachable hook must not stop anything
            self.failures += 1
            what = "no answer within the deadline" if isinstance(exc, TimeoutError) else exc
            logger.warning("airmeter: SLO webhook %s failed: %s", redact_text(self.url),
                           redact_text(str(what))[:500] or type(exc).__name__)  # fmt: skip
            return
        if status >= 400:
            self.failures += 1
            logger.warning("airmeter: SLO webhook %s answered %d", redact_text(self.url), status)
        else:
            self.sent += 1

    async def _post(self, body: bytes) -> int:
        import aiohttp  # only a watcher with a webhook needs it

        timeout = aiohttp.ClientTimeout(total=self.timeout)
        async with (
            aiohttp.ClientSession(timeout=timeout) as session,
            session.post(self.url, data=body, allow_redirects=False,
                         headers={"Content-Type": "application/json"}) as response,
        ):  # fmt: skip
            return response.status


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
            previous = state if state in STATES else "ok"
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
