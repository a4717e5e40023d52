"""Errors raised by airmeter.

Telemetry never breaks the caller, so few of these reach a tool call: they are raised at the
call that configured something wrongly, or by a budget in ``block`` mode.

    AirmeterError
    ├── MeterConfigError       a bad option (negative size, unknown mode, bad rule …)
    ├── MeterClosedError       a record or snapshot on a meter that was stopped
    └── BudgetExceededError    a budget in ``block`` mode refused a call (carries the limit)
"""

from __future__ import annotations

__all__ = ["AirmeterError", "BudgetExceededError", "MeterClosedError", "MeterConfigError"]


class AirmeterError(Exception):
    """Base class of every airmeter error."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class MeterConfigError(AirmeterError, ValueError):
    """An option given to a meter, classifier, budget or sink is invalid."""


class MeterClosedError(AirmeterError):
    """The meter was used after :meth:`~airmeter.Meter.stop`."""


class BudgetExceededError(AirmeterError):
    """A budget in ``block`` mode refused a call.

    Attributes:
        limit: which limit: ``"daily"``, ``"monthly"`` or ``"tokens_per_call"``.
        spent: what was spent (cost units, or tokens for the per-call limit).
        allowed: the configured limit.
    """

    def __init__(self, message: str, *, limit: str, spent: float, allowed: float) -> None:
        super().__init__(message)
        self.limit = limit
        self.spent = spent
        self.allowed = allowed
