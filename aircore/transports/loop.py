"""The event loop a served server runs on: uvloop where it exists, plain asyncio elsewhere."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Coroutine
from typing import Any

from aircore._platform import loop_factory

__all__ = ["SHUTDOWN_GRACE", "loop_factory", "run_loop"]

logger = logging.getLogger(__name__)

SHUTDOWN_GRACE = 2.0
"""Seconds the tasks still running when the server has stopped get to end once cancelled."""


async def _cancel_leftovers(grace: float) -> None:
    """Cancel the tasks still running and wait for them at most ``grace`` seconds: a tool that
    swallows its ``CancelledError`` (to finish its work whatever happens) would otherwise keep
    the process alive for ever after its client has gone (``asyncio.Runner`` waits without a
    bound)."""
    tasks = asyncio.all_tasks() - {asyncio.current_task()}
    if not tasks:
        return
    for task in tasks:
        task.cancel()
    _, pending = await asyncio.wait(tasks, timeout=grace)
    if pending:
        names = sorted(task.get_name() for task in pending)
        logger.warning(
            "%d task(s) did not end %.0fs after being cancelled (%s); exiting without them",
            len(pending),
            grace,
            ", ".join(names),
        )


def run_loop(main: Coroutine[Any, Any, None], *, grace: float = SHUTDOWN_GRACE) -> None:
    """Run ``main`` to its end on a new event loop (see :func:`loop_factory`), then cancel the
    tasks left and close the loop, waiting at most ``grace`` seconds for them (not
    ``asyncio.Runner``, whose close waits for every task without a bound)."""
    factory = loop_factory()
    loop = factory() if factory is not None else asyncio.new_event_loop()
    if factory is None:
        asyncio.set_event_loop(loop)
    try:
        loop.run_until_complete(main)
    finally:
        try:
            loop.run_until_complete(_cancel_leftovers(grace))
            loop.run_until_complete(loop.shutdown_asyncgens())
            loop.run_until_complete(_shutdown_executor(loop, grace))
        finally:
            if factory is None:
                asyncio.set_event_loop(None)
            loop.close()


async def _shutdown_executor(loop: asyncio.AbstractEventLoop, grace: float) -> None:
    """Wait for the default executor's threads (a thread cannot be stopped, and the interpreter
    joins them at exit anyway), saying why after ``grace`` seconds. Not ``wait_for``: a
    cancelled shutdown leaves uvloop's joining thread calling into a closed loop."""
    shutdown = asyncio.ensure_future(loop.shutdown_default_executor())
    done, _ = await asyncio.wait({shutdown}, timeout=grace)
    if not done:
        logger.warning(
            "worker threads still busy %.0fs after the server stopped; the process ends when "
            "they finish",
            grace,
        )
        await shutdown
