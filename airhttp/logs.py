"""Rate-limited logging: a flood of one repeated error (every refused ``accept``, every failed
request) becomes a few lines and a count, never megabytes of tracebacks."""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import Callable, Iterator

__all__ = ["DEFAULT_LOG_BURST", "DEFAULT_LOG_WINDOW", "RepeatFilter", "repeat_filter_installed"]

DEFAULT_LOG_WINDOW = 10.0
"""Seconds over which repeats of one message are counted."""

DEFAULT_LOG_BURST = 5
"""Records of one message let through per window; the rest are counted, then summarized."""

_MAX_KEYS = 1024


class RepeatFilter(logging.Filter):
    """Let at most ``burst`` records of one message (logger, level and format string) through
    per ``window`` seconds; the first record after a window that dropped some says how many.

    Args:
        window: seconds per window.
        burst: records let through per window.
        clock: a monotonic clock (tests pass their own).
    """

    def __init__(
        self,
        *,
        window: float = DEFAULT_LOG_WINDOW,
        burst: int = DEFAULT_LOG_BURST,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        super().__init__()
        self.window = window
        self.burst = burst
        self.clock = clock
        self._seen: dict[tuple[str, int, str], list[float]] = {}
        self.suppressed = 0
        """Records dropped so far."""

    def filter(self, record: logging.LogRecord) -> bool:
        key = (record.name, record.levelno, str(record.msg))
        now = self.clock()
        state = self._seen.get(key)
        if state is None or now - state[0] >= self.window:
            dropped = int(state[2]) if state is not None else 0
            if len(self._seen) >= _MAX_KEYS and state is None:
                self._seen.clear()  # bounded: forget old messages rather than grow
            self._seen[key] = [now, 1.0, 0.0]
            if dropped:
                record.msg = f"{record.msg} ({dropped} similar messages suppressed)"
            return True
        if state[1] < self.burst:
            state[1] += 1
            return True
        state[2] += 1
        self.suppressed += 1
        return False


@contextlib.contextmanager
def repeat_filter_installed(
    logger: logging.Logger | None = None, *, flt: RepeatFilter | None = None
) -> Iterator[RepeatFilter]:
    """Put a :class:`RepeatFilter` on every handler of ``logger`` (the root logger by default)
    for the duration of the block, so records propagated from any library pass it."""
    target = logger or logging.getLogger()
    active = flt or RepeatFilter()
    handlers = list(target.handlers)
    for handler in handlers:
        handler.addFilter(active)
    try:
        yield active
    finally:
        for handler in handlers:
            handler.removeFilter(active)
