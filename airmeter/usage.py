"""What a handler reports about its own call: tokens and cost, through a context variable.

The meter middleware opens a :class:`CallUsage` for each call; a handler anywhere below it
(in the same task) calls :func:`report_usage`. Outside a metered call it is a no-op.
"""

from __future__ import annotations

from collections.abc import Callable
from contextvars import ContextVar

__all__ = ["CallUsage", "current_usage", "report_usage"]


class CallUsage:
    """Tokens and cost reported for the call in progress.

    ``check`` is set by a budget in ``block`` mode: it runs after each report and may raise
    :class:`~airmeter.BudgetExceededError` to stop the handler early.
    """

    __slots__ = ("check", "cost", "tokens_in", "tokens_out")

    def __init__(self, check: Callable[[CallUsage], None] | None = None) -> None:
        self.tokens_in: int | None = None
        self.tokens_out: int | None = None
        self.cost: float | None = None
        self.check = check

    @property
    def tokens(self) -> int:
        """Tokens in + out reported so far."""
        return (self.tokens_in or 0) + (self.tokens_out or 0)

    def add(
        self,
        *,
        tokens_in: int | None = None,
        tokens_out: int | None = None,
        cost: float | None = None,
    ) -> None:
        """Add to the running totals (``None`` leaves a field unchanged)."""
        if tokens_in is not None:
            self.tokens_in = (self.tokens_in or 0) + int(tokens_in)
        if tokens_out is not None:
            self.tokens_out = (self.tokens_out or 0) + int(tokens_out)
        if cost is not None:
            self.cost = (self.cost or 0.0) + float(cost)
        if self.check is not None:
            self.check(self)


_CURRENT: ContextVar[CallUsage | None] = ContextVar("airmeter_usage", default=None)


def current_usage() -> CallUsage | None:
    """The usage of the metered call in progress, or ``None`` outside one."""
    return _CURRENT.get()


def report_usage(
    *,
    tokens_in: int | None = None,
    tokens_out: int | None = None,
    cost: float | None = None,
) -> bool:
    """Report tokens and/or cost for the current call; repeated reports add up.

    Args:
        tokens_in: prompt/input tokens used.
        tokens_out: completion/output tokens produced.
        cost: a cost in your budget's units; without it the budget prices tokens or the layer.

    Returns:
        True when a metered call received it, False outside one.

    Raises:
        BudgetExceededError: the per-call token limit of a blocking budget was passed.
    """
    usage = _CURRENT.get()
    if usage is None:
        return False
    usage.add(tokens_in=tokens_in, tokens_out=tokens_out, cost=cost)
    return True
