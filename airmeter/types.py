"""The vocabulary of airmeter: the protocols a meter, its sinks and its adapters agree on."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable

from airmeter.record import CallRecord

__all__ = ["Recorder", "Sink"]


@runtime_checkable
class Sink(Protocol):
    """Receives batches of records from the meter's background task.

    A sink must not raise into the meter for transient failures it can retry; it logs and
    counts them. ``close`` delivers whatever it still holds.
    """

    async def write(self, records: Sequence[CallRecord]) -> None:
        """Deliver one batch."""

    async def close(self) -> None:
        """Deliver what is pending and release resources. Idempotent."""


@runtime_checkable
class Recorder(Protocol):
    """Anything that takes a finished call: the :class:`~airmeter.Meter`, or a test double.

    ``record`` is synchronous and O(1): it never blocks or awaits on the call path.
    """

    def record(self, record: CallRecord) -> None:
        """Accept one record."""
