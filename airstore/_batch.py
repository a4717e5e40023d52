"""Group commit: operations submitted during one event-loop turn run as one batch.

A backend hands :class:`Batcher` a coroutine function that executes a list of operations in
one round trip (one SQLite transaction, one Redis pipeline) and returns one result or exception
per operation. Callers ``await batcher.submit(op)`` and resume only after their batch finished,
so an awaited write is committed, while many concurrent writers share one commit.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, Generic, TypeVar

__all__ = ["Batcher"]

Op = TypeVar("Op")

RunBatch = Callable[[Sequence[Op]], Awaitable[Sequence[Any]]]
"""Runs a batch; returns one result per op (an ``Exception`` instance fails just that op)."""


class Batcher(Generic[Op]):
    """Coalesces operations into batches run one at a time by a single writer task.

    Args:
        run: executes one batch; see :data:`RunBatch`.
        max_batch: the most operations handed to ``run`` at once.
    """

    def __init__(self, run: RunBatch[Op], *, max_batch: int = 10_000) -> None:
        self._run = run
        self._max_batch = max_batch
        self._ops: list[Op] = []
        self._futures: list[asyncio.Future[Any]] = []
        self._task: asyncio.Task[None] | None = None

    @property
    def pending(self) -> int:
        """Operations submitted and not yet handed to ``run``."""
        return len(self._ops)

    def submit(self, op: Op) -> asyncio.Future[Any]:
        """Queue ``op``; the returned future resolves once its batch ran."""
        loop = asyncio.get_running_loop()
        fut: asyncio.Future[Any] = loop.create_future()
        self._ops.append(op)
        self._futures.append(fut)
        if self._task is None:
            self._task = loop.create_task(self._drain())
        return fut

    async def drain(self) -> None:
        """Wait until every operation submitted so far has run."""
        while self._task is not None:
            await asyncio.shield(self._task)

    async def _drain(self) -> None:
        try:
            # This task's first step runs after the loop turn that created it, so every
            # operation submitted during that turn is already queued here.
            while self._ops:
                ops = self._ops[: self._max_batch]
                futs = self._futures[: self._max_batch]
                del self._ops[: self._max_batch]
                del self._futures[: self._max_batch]
                try:
                    results: Sequence[Any] = await self._run(ops)
                except BaseException as exc:  # the whole batch failed: fail each caller
                    for fut in futs:
                        if not fut.done():
                            fut.set_exception(exc)
                    if not isinstance(exc, Exception):
                        raise
                    continue
                for fut, result in zip(futs, results, strict=True):
                    if fut.done():
                        continue
                    if isinstance(result, BaseException):
                        fut.set_exception(result)
                    else:
                        fut.set_result(result)
        finally:
            self._task = None
            if self._ops:  # cancelled mid-way: nobody will run these any more
                for fut in self._futures:
                    fut.cancel()
                self._ops.clear()
                self._futures.clear()
