"""Test helpers for code that meters calls: an in-memory sink."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

from airmeter.record import CallRecord

__all__ = ["MemorySink"]


class MemorySink:
    """Keeps every delivered record in :attr:`records`; a real sink and the test double.

    Args:
        fail: raise this exception from :meth:`write` (to test failure accounting).
        block: an event :meth:`write` waits on before returning (to simulate a slow sink).
    """

    def __init__(
        self, *, fail: BaseException | None = None, block: asyncio.Event | None = None
    ) -> None:
        self.records: list[CallRecord] = []
        self.batches = 0
        self.closed = False
        self.fail = fail
        self.block = block
        self.entered = asyncio.Event()
        self._changed = asyncio.Condition()

    async def write(self, records: Sequence[CallRecord]) -> None:
        """Keep the batch (after waiting on ``block``, or raising ``fail``)."""
        self.entered.set()
        if self.block is not None:
            await self.block.wait()
        if self.fail is not None:
            raise self.fail
        self.records.extend(records)
        self.batches += 1
        async with self._changed:
            self._changed.notify_all()

    async def wait_for(self, count: int, *, timeout: float = 5.0) -> list[CallRecord]:
        """Wait until at least ``count`` records arrived; return them.

        Raises:
            TimeoutError: fewer arrived within ``timeout`` seconds.
        """
        async with asyncio.timeout(timeout), self._changed:
            await self._changed.wait_for(lambda: len(self.records) >= count)
        return list(self.records)

    async def close(self) -> None:
        """Mark the sink closed. Idempotent."""
        self.closed = True
