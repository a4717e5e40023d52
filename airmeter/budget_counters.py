"""A budget's per-client limits, counted in the store so that they hold across replicas.

A :class:`~airmeter.Budget` with a client selector (``client="*"``, ``client="ci-*"``) limits
every matching client on its own: calls per UTC day (``calls_per_day``) and cost per UTC day
and month (``daily_limit``, ``monthly_limit``). The counts live in the store's namespace
:data:`COUNTERS_NAMESPACE`, one counter per (server, client, period), so every process
metering into the store (each replica, each MCP client's own server process) shares them:

- **calls**: a call takes its slot with an atomic ``incr`` before it runs; the one past the
  limit gives it back and is refused. Exactly ``calls_per_day`` calls run per client and day,
  however many replicas serve them.
- **cost**: known only once a call finished, so it is added afterwards (a process adds what
  it charged before its next admission and at least every ``REFRESH_S``). A call is refused
  once the stored plus this process's unsent cost reaches the limit; calls running at that
  moment, and another replica's cost of the last seconds, may overshoot it.

Without a store (a meter with none) the counters live in this process. Keys hold a hash of the
server and client (clients are named by their tokens: any text), never the names.
"""

from __future__ import annotations

import fnmatch
import hashlib
import logging
from typing import Final

from airhttp.identity import current_identity
from airmeter.clients import client_key
from airmeter.errors import BudgetExceededError
from airstore.types import Store

__all__ = ["CALLS_PER_DAY", "COUNTERS_NAMESPACE", "ClientCounters", "caller_key"]

logger = logging.getLogger(__name__)

COUNTERS_NAMESPACE: Final = "meter.budget"
"""Where per-client budget counters live (one per server, client and period)."""
CALLS_PER_DAY: Final = "calls_per_day"
"""The ``limit`` of a :class:`BudgetExceededError` raised for a client's calls of the day."""
_UNIT: Final = 1_000_000_000
"""Cost is counted in billionths (counters are integers, within ±2**53: 9 million a period);
what is left below one billionth is carried to the next send, never dropped."""
_DAY_TTL: Final = 2 * 86_400.0
_MONTH_TTL: Final = 32 * 86_400.0
_MAX_UNSENT: Final = 10_000  # (client, period) charges kept between two sends; beyond: dropped
_MAX_WARNED: Final = 10_000


def caller_key() -> str:
    """The current call's client as budgets and reports name it (``(none)`` without one)."""
    identity = current_identity()
    return client_key(None, None) if identity is None else client_key(
        identity.client_id, identity.auth
    )  # fmt: skip


class ClientCounters:
    """The store side of a client-selecting budget (see the module docstring)."""

    def __init__(self, selector: str) -> None:
        self.selector = selector
        self.store: Store | None = None
        self.server = ""
        self._unsent: dict[tuple[str, bool, int], float] = {}
        """Cost not sent yet, per (client, monthly, period start): each period on its own, so
        that a write refused for one does not send the other twice."""
        self._warned: set[tuple[str, str, int]] = set()
        self._dropped = 0

    def scope(self) -> str | None:
        """The current caller's client when the selector matches it, else ``None``."""
        client = caller_key()
        return client if fnmatch.fnmatchcase(client, self.selector) else None

    def _key(self, kind: str, start_ms: int, client: str) -> str:
        digest = hashlib.sha256(f"{self.server}\0{client}".encode()).hexdigest()[:32]
        return f"{kind}:{start_ms}:{digest}"

    @staticmethod
    def _cost_kind(monthly: bool) -> str:
        # a day and a month starting at the same instant (the 1st) are two counters
        return "cost-month" if monthly else "cost-day"

    async def _store(self) -> Store:
        if self.store is None:
            from airstore import MemoryStore  # a meter without a store: this process only

            self.store = MemoryStore()
        return self.store

    def charge(self, client: str, day: int, month: int, cost: float) -> None:
        """Remember ``cost`` for ``client`` in the day and month (sent by :meth:`send`)."""
        for key in ((client, False, day), (client, True, month)):
            if key not in self._unsent and len(self._unsent) >= _MAX_UNSENT:
                self._dropped += 1
                continue
            self._unsent[key] = self._unsent.get(key, 0.0) + cost

    def unsent(self, client: str, start: int, *, monthly: bool) -> float:
        """This process's cost of ``client`` not sent yet, in the period starting ``start``."""
        return self._unsent.get((client, monthly, start), 0.0)

    async def send(self) -> None:
        """Add the remembered costs to the store's counters (whole billionths; the rest stays
        remembered for the next send).

        Raises:
            airstore.AirstoreError: the store refused a write (the rest stays remembered).
        """
        store = await self._store()
        for key, cost in list(self._unsent.items()):
            client, monthly, start = key
            units = int(cost * _UNIT)  # toward zero; the remainder is kept
            if units:
                counter = self._key(self._cost_kind(monthly), start, client)
                ttl = _MONTH_TTL if monthly else _DAY_TTL
                await store.incr(COUNTERS_NAMESPACE, counter, units, ttl=ttl)
            rest = cost - units / _UNIT
            if rest > 0.0:
                self._unsent[key] = rest
            else:
                del self._unsent[key]

    async def take_call(self, client: str, day: int, limit: int, *, block: bool) -> int | None:
        """Count one call of ``client`` today; the count before it when that reached
        ``limit`` (and, when blocking, give the slot back), else ``None``."""
        store = await self._store()
        key = self._key("calls", day, client)
        count = await store.incr(COUNTERS_NAMESPACE, key, 1, ttl=_DAY_TTL)
        if count <= limit:
            return None
        if block:
            await store.incr(COUNTERS_NAMESPACE, key, -1, ttl=_DAY_TTL)
        return count - 1

    async def give_back_call(self, client: str, day: int) -> None:
        """Undo :meth:`take_call` for a call refused for another limit."""
        store = await self._store()
        await store.incr(COUNTERS_NAMESPACE, self._key("calls", day, client), -1, ttl=_DAY_TTL)

    async def spent(self, client: str, start: int, *, monthly: bool) -> float:
        """The stored cost of ``client`` in the period starting ``start``, plus this
        process's unsent cost of it."""
        store = await self._store()
        raw = await store.get(
            COUNTERS_NAMESPACE, self._key(self._cost_kind(monthly), start, client)
        )
        stored = raw / _UNIT if isinstance(raw, int | float) else 0.0
        return stored + self.unsent(client, start, monthly=monthly)

    def exceeded(
        self, what: str, client: str, start: int, spent: float, allowed: float, *, block: bool,
        limit: str,
    ) -> BudgetExceededError | None:  # fmt: skip
        """The refusal (blocking), or ``None`` after a warning logged once per period."""
        message = (f"{what} budget of client {client!r} exceeded: {spent:g} of {allowed:g}; "
                   "the call was not run")  # fmt: skip
        if block:
            return BudgetExceededError(message, limit=limit, spent=spent, allowed=allowed)
        mark = (what, client, start)
        if mark not in self._warned:
            if len(self._warned) >= _MAX_WARNED:
                self._warned.clear()
            self._warned.add(mark)
            logger.warning("airmeter: %s budget of client %r exceeded (%g of %g)", what,
                           client, spent, allowed)  # fmt: skip
        return None
