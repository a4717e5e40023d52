"""Errors raised by the dashboard.

DashboardError
├── StoreUnavailableError   the store URL names nothing, or it cannot be opened or read
└── InvalidRangeError       a time range or filter the dashboard cannot use
"""

from __future__ import annotations

__all__ = ["DashboardError", "InvalidRangeError", "StoreUnavailableError"]


class DashboardError(Exception):
    """Base class of every dashboard error."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class StoreUnavailableError(DashboardError):
    """The store cannot be opened or read; ``url`` says which, ``hint`` what to do about it."""

    def __init__(self, message: str, *, url: str, hint: str = "") -> None:
        super().__init__(message)
        self.url = url
        self.hint = hint


class InvalidRangeError(DashboardError):
    """A time range (or custom start/end) is unknown or empty."""
