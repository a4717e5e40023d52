"""The event loop a served server runs on: uvloop where it exists, plain asyncio elsewhere."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine
from typing import Any

__all__ = ["loop_factory", "run_loop"]


def loop_factory() -> Callable[[], asyncio.AbstractEventLoop] | None:
    """uvloop's loop factory when uvloop is installed (not on Windows), else ``None``."""
    try:
        import uvloop
    except ImportError:  # Windows, or a trimmed install: plain asyncio
        return None
    factory: Callable[[], asyncio.AbstractEventLoop] = uvloop.new_event_loop
    return factory


def run_loop(main: Coroutine[Any, Any, None]) -> None:
    """Run ``main`` to its end on a new event loop (see :func:`loop_factory`)."""
    with asyncio.Runner(loop_factory=loop_factory()) as runner:
        runner.run(main)
