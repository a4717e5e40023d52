"""Tell a tool's author why it failed: its traceback on the ``aircore`` logger, bounded.

The client only ever sees a clean ``isError`` result; the server's stderr gets the traceback,
with the tool name and the request id. A tool that fails on every call must not flood stderr, so
the full traceback is logged once per tool and exception type per :data:`TRACEBACK_EVERY`
seconds; the failures in between get one line each.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

__all__ = ["FAILURES", "MAX_TRACKED", "TRACEBACK_EVERY", "FailureLog"]

logger = logging.getLogger("aircore")

TRACEBACK_EVERY = 60.0
"""Seconds between two full tracebacks of one tool and exception type."""

MAX_TRACKED = 1024
"""At most this many (tool, exception type) pairs are remembered; the oldest is forgotten."""


class FailureLog:
    """Logs tool failures: a traceback now and then, one line otherwise.

    Args:
        every: seconds between two tracebacks of one tool and exception type.
        clock: monotonic seconds; injectable for tests.
    """

    def __init__(
        self, *, every: float = TRACEBACK_EVERY, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self._every = every
        self._clock = clock
        self._last: dict[tuple[str, str], float] = {}

    def tool_failed(
        self, tool: str, request_id: str | None, exc: BaseException, *, call_id: str | None = None
    ) -> None:
        """Log that ``tool`` raised ``exc`` while answering ``request_id`` (call ``call_id``)."""
        kind = type(exc).__name__
        key = (tool, kind)
        now = self._clock()
        last = self._last.get(key)
        with_traceback = last is None or now - last >= self._every
        if with_traceback:
            self._last.pop(key, None)
            self._last[key] = now
            if len(self._last) > MAX_TRACKED:
                del self._last[next(iter(self._last))]
        logger.error(
            "tool %r failed (request %s%s): %s: %s%s",
            tool,
            request_id if request_id is not None else "-",
            "" if call_id is None else f", call {call_id}",
            kind,
            exc,
            "" if with_traceback else " (same error as before; its traceback was logged then)",
            exc_info=exc if with_traceback else None,
        )


FAILURES = FailureLog()
"""The process-wide failure log used by :func:`aircore.execution.run_call`."""
