"""Budgets: daily and monthly cost limits and a per-call token limit.

The cost of a call is what the handler reported (``cost``), else its reported tokens times
``token_price`` (when a token price is set and tokens were reported), else the layer's weight times
``unit_price``. Days and months are UTC calendar periods. With ``on_exceed="warn"`` an exceeded
limit is logged (once per period) and calls go on; with ``"block"`` the meter middleware answers
``isError`` with a clear message and records the call with ``error_type="budget_exceeded"``.

With a client selector (``client="*"``, ``client="ci-*"``) the limits hold for every matching
client on its own, counted in the store (:mod:`airmeter.budget_counters`), and
``calls_per_day`` limits each client's calls.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Literal

from airmeter.budget_counters import CALLS_PER_DAY, ClientCounters
from airmeter.errors import BudgetExceededError, MeterConfigError
from airmeter.layers import Layer
from airmeter.outcome import BUDGET_ERROR_TYPE
from airmeter.rollup_reader import RollupReader
from airmeter.usage import CallUsage
from airstore.types import Clock, Store

if TYPE_CHECKING:
    from airmeter.rollups import RollupRow

__all__ = [
    "BUDGET_ERROR_TYPE",
    "REFRESH_S",
    "TOKENS_LIMIT",
    "Budget",
    "BudgetStatus",
    "OnExceed",
]

logger = logging.getLogger(__name__)

OnExceed = Literal["warn", "block"]
REFRESH_S = 2.0
"""Seconds between two reads of every process's spending (see :meth:`Budget.load`)."""
TOKENS_LIMIT = "tokens_per_call"
"""The ``limit`` of a :class:`BudgetExceededError` raised for a call's reported tokens."""


@dataclass(frozen=True, slots=True, kw_only=True)
class BudgetStatus:
    """What was spent in the current UTC day and month, and the limits."""

    spent_today: float
    spent_month: float
    daily_limit: float | None
    monthly_limit: float | None
    tokens_per_call: int | None
    on_exceed: OnExceed


def _period_starts(now: float) -> tuple[int, int]:
    """Epoch ms of the start of the UTC day and month containing ``now`` (seconds)."""
    dt = datetime.fromtimestamp(now, tz=UTC)
    day = dt.replace(hour=0, minute=0, second=0, microsecond=0)
    month = day.replace(day=1)
    return int(day.timestamp() * 1000), int(month.timestamp() * 1000)


class Budget:
    """Cost limits checked by the meter middleware.

    Args:
        daily_limit: most cost per UTC day (``None``: no limit).
        monthly_limit: most cost per UTC month.
        tokens_per_call: most tokens (in + out) one call may report.
        on_exceed: ``"warn"`` (log and go on) or ``"block"`` (refuse with ``isError``).
        unit_price: price of one unit of layer weight (L1 = 1 … L7 = 100).
        token_price: price of one token; when set, reported tokens are priced with it.
        client: a glob over client ids (``"*"``: every client, ``"(none)"``: calls without
            one): the limits then hold for each matching client on its own, through the
            store; other clients' calls are neither limited nor counted by this budget.
        calls_per_day: most calls per UTC day of each matching client (needs ``client``).
        per_client: a budget with a client selector that holds beside this server-wide one
            (each call counts in both; its cost is priced by this budget).
        clock: seconds since the epoch (injectable for tests).

    Raises:
        MeterConfigError: a negative limit or price, an unknown ``on_exceed``, an empty
            ``client``, ``calls_per_day`` without ``client``, or a ``per_client`` budget
            without a client selector (or given to one that has one).
    """

    def __init__(
        self,
        *,
        daily_limit: float | None = None,
        monthly_limit: float | None = None,
        tokens_per_call: int | None = None,
        on_exceed: OnExceed = "warn",
        unit_price: float = 1.0,
        token_price: float | None = None,
        client: str | None = None,
        calls_per_day: int | None = None,
        per_client: Budget | None = None,
        clock: Clock = time.time,
    ) -> None:
        if on_exceed not in ("warn", "block"):
            raise MeterConfigError(f"on_exceed must be 'warn' or 'block', got {on_exceed!r}")
        for name, value in (("daily_limit", daily_limit), ("monthly_limit", monthly_limit),
                            ("tokens_per_call", tokens_per_call), ("unit_price", unit_price),
                            ("token_price", token_price)):  # fmt: skip
            if value is not None and (not isinstance(value, int | float) or value < 0):
                raise MeterConfigError(f"{name} must be a non-negative number, got {value!r}")
        if client is not None and (not isinstance(client, str) or not client):
            raise MeterConfigError(f"client must be a non-empty glob of client ids, got {client!r}")
        if calls_per_day is not None:
            if isinstance(calls_per_day, bool) or not isinstance(calls_per_day, int):
                raise MeterConfigError(
                    f"calls_per_day must be a whole number, got {calls_per_day!r}"
                )
            if calls_per_day < 0 or client is None:
                raise MeterConfigError(
                    "calls_per_day must be >= 0 and needs a client selector (client='*')"
                )
        if per_client is not None and (
            not isinstance(per_client, Budget) or per_client.counters is None or client is not None
        ):
            raise MeterConfigError(
                "per_client must be a Budget with a client selector, given to a server-wide one"
            )
        self.client: str | None = client
        self.calls_per_day = calls_per_day
        self.counters: ClientCounters | None = None if client is None else ClientCounters(client)
        self.per_client = per_client
        self.daily_limit = daily_limit
        self.monthly_limit = monthly_limit
        self.tokens_per_call = tokens_per_call
        self.on_exceed: OnExceed = on_exceed
        self.unit_price = float(unit_price)
        self.token_price = token_price
        self._clock = clock
        self._day, self._month = _period_starts(clock())
        self._spent_day = 0.0
        self._spent_month = 0.0
        self._reader: RollupReader | None = None
        self._before_today: tuple[int, float] | None = (
            None  # (day, stored cost of the month before it)
        )
        self._warned: set[tuple[str, int]] = set()

    @property
    def counted(self) -> bool:
        """Whether :meth:`admit` has limits to check (a client selector, here or in
        ``per_client``)."""
        return self.counters is not None or self.per_client is not None

    async def send_charges(self) -> None:
        """Send the per-client costs this process charged to the store now (at stop).

        Raises:
            airstore.AirstoreError: the store refused them.
        """
        for counters in (self.counters, None if self.per_client is None else
                         self.per_client.counters):  # fmt: skip
            if counters is not None and counters.store is not None:
                await counters.send()

    @property
    def blocking(self) -> bool:
        """Whether exceeded limits refuse calls."""
        return self.on_exceed == "block"

    def cost_of(self, layer: Layer, usage: CallUsage | None = None) -> float:
        """The cost of one call of ``layer`` with what its handler reported."""
        if usage is not None:
            if usage.cost is not None:
                return usage.cost
            if self.token_price is not None and usage.tokens:
                return usage.tokens * self.token_price
        return layer.weight * self.unit_price

    def _roll(self) -> None:
        day, month = _period_starts(self._clock())
        if month != self._month:
            self._month, self._spent_month = month, 0.0
        if day != self._day:
            self._day, self._spent_day = day, 0.0

    def add(self, cost: float) -> None:
        """Count the cost of a finished call in the current day and month (for a client
        selector: the caller's, sent to the store's counters before the next admission)."""
        self._roll()
        if self.per_client is not None:
            self.per_client.add(cost)
        counters = self.counters
        if counters is not None:
            limited = self.daily_limit is not None or self.monthly_limit is not None
            if cost and limited and (client := counters.scope()) is not None:
                counters.charge(client, self._day, self._month, cost)
            return
        self._spent_day += cost
        self._spent_month += cost

    async def admit(self) -> BudgetExceededError | None:
        """Before a call, for a client selector: take the caller's call slot of the day and
        check its cost, through the store. The error refusing the call when a limit is
        reached and blocking, else ``None`` (warn mode logs once per client and period).

        Raises:
            airstore.AirstoreError: the store cannot count (the call then fails, never runs
                unaccounted).
        """
        counters = self.counters
        if counters is None:
            return None if self.per_client is None else await self.per_client.admit()
        if (client := counters.scope()) is None:
            return None
        self._roll()
        day, month, block = self._day, self._month, self.blocking
        await counters.send()
        took = self.calls_per_day is not None
        if took:
            assert self.calls_per_day is not None
            over = await counters.take_call(client, day, self.calls_per_day, block=block)
            if over is not None:
                refusal = counters.exceeded("daily call", client, day, over, self.calls_per_day,
                                            block=block, limit=CALLS_PER_DAY)  # fmt: skip
                if refusal is not None:
                    return refusal
        periods = (("daily", day, self.daily_limit, False),
                   ("monthly", month, self.monthly_limit, True))  # fmt: skip
        for period, start, limit, monthly in periods:
            if limit is None:
                continue
            spent = await counters.spent(client, start, monthly=monthly)
            if spent >= limit:
                refusal = counters.exceeded(f"{period} cost", client, start, spent, limit,
                                            block=block, limit=period)  # fmt: skip
                if refusal is not None:
                    if took:
                        await counters.give_back_call(client, day)
                    return refusal
        return None

    def check_call(self) -> str | None:
        """Before a call: the refusal message when a limit is reached and blocking, else
        ``None`` (in warn mode a reached limit is logged once per period)."""
        refusal = self.refusal()
        return None if refusal is None else refusal.message

    def refusal(self) -> BudgetExceededError | None:
        """Before a call: the error refusing it when a limit is reached and blocking, else
        ``None`` (in warn mode a reached limit is logged once per period). A budget with a
        client selector answers in :meth:`admit` instead."""
        if self.counters is not None:
            return None
        self._roll()
        for period, spent, limit, start in (
            ("daily", self._spent_day, self.daily_limit, self._day),
            ("monthly", self._spent_month, self.monthly_limit, self._month),
        ):
            if limit is not None and spent >= limit:
                message = (f"{period} budget exceeded: spent {spent:g} of {limit:g}; "
                           "the call was not run")  # fmt: skip
                if self.blocking:
                    return BudgetExceededError(message, limit=period, spent=spent, allowed=limit)
                if (period, start) not in self._warned:
                    self._warned.add((period, start))
                    logger.warning("airmeter: %s budget exceeded (%g of %g)", period, spent, limit)
        return None

    def check_tokens(self, usage: CallUsage) -> None:
        """Check a call's reported tokens against ``tokens_per_call``.

        Raises:
            BudgetExceededError: in block mode, when the call reported more tokens.
        """
        limit = self.tokens_per_call
        if limit is None or usage.tokens <= limit:
            return
        message = f"token limit per call exceeded: {usage.tokens} tokens, limit {limit}"
        if self.blocking:
            raise BudgetExceededError(message, limit=TOKENS_LIMIT, spent=usage.tokens,
                                      allowed=limit)  # fmt: skip
        logger.warning("airmeter: %s", message)

    async def load(self, store: Store, *, server: str | None = None) -> None:
        """Take in what the store's rollups say was spent today and this month: at start
        (after a restart), and again every :data:`REFRESH_S` while the meter middleware runs.

        ``server``: count only that server's calls — every process serving it (each MCP
        client spawns its own) shares the limits; other servers metering into the same data
        dir do not count. The spending becomes the larger of what this budget counted itself
        and what the rollups hold, never their sum: the rollups hold this process's calls
        too, up to its last persist (~1 s). Another process's spending shows here once it
        persisted and this budget refreshed: within a few seconds. The month before today is
        read once a day; a refresh reads today's rollups only.

        With a client selector it takes the store for its counters instead, and sends the
        costs this process charged.
        """
        if self.per_client is not None:
            await self.per_client.load(store, server=server)
        if self.counters is not None:
            self.counters.store, self.counters.server = store, server or ""
            await self.counters.send()
            return
        if self._reader is None or self._reader.store is not store:
            self._reader = RollupReader(store)  # kept: a refresh parses only what changed
        reader = self._reader
        self._roll()
        day, month = self._day, self._month
        if self._before_today is None or self._before_today[0] != day:
            groups = await reader.load_groups(since_ms=month, until_ms=day)
            self._before_today = (day, _cost(groups, server))
        today = _cost(await reader.load_groups(since_ms=day), server)
        before = self._before_today[1]
        self._roll()
        if (day, month) == (self._day, self._month):  # no new period began while reading
            self._spent_month = max(self._spent_month, before + today)
            self._spent_day = max(self._spent_day, today)

    def status(self) -> BudgetStatus:
        """The spending and the limits right now."""
        self._roll()
        return BudgetStatus(
            spent_today=self._spent_day, spent_month=self._spent_month,
            daily_limit=self.daily_limit, monthly_limit=self.monthly_limit,
            tokens_per_call=self.tokens_per_call, on_exceed=self.on_exceed,
        )  # fmt: skip


def _cost(groups: Iterable[tuple[int, Iterable[RollupRow]]], server: str | None) -> float:
    return sum(r.cost for _, rows in groups for r in rows if server is None or r.server == server)
