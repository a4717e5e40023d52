"""Tell a tool's author why it failed: its traceback on the ``aircore`` logger, bounded.

The client only ever sees a clean ``isError`` result; the server's stderr gets the traceback,
with the tool name and the request id. A tool that fails on every call must not flood stderr, so
the full traceback is logged once per tool and exception type per :data:`TRACEBACK_EVERY`
seconds; the failures in between get one line each.

What an exception says is written the way the meter records it: secret-shaped parts masked
(airmeter's redaction by value shape: bearer tokens, URL credentials, provider tokens, JWTs …)
and cut to :data:`MAX_MESSAGE_CHARS`, in the line and in the traceback (chained exceptions
included), so a tool that raises with a megabyte of text, or with a credential in its message,
puts neither on stderr. A traceback keeps its first and last frames (:data:`MAX_FRAMES`), so a
deep recursion is not 200 KB of log per failure. Text that cannot be masked is withheld, never
logged as it was. The protocol layer logs its internal errors through :func:`logged_exc_info` too.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from types import TracebackType
from typing import cast

__all__ = ["FAILURES", "MAX_CHAIN", "MAX_FRAMES", "MAX_MESSAGE_CHARS", "MAX_TRACKED",
           "TRACEBACK_EVERY", "FailureLog", "logged_exc_info", "masked_text"]  # fmt: skip

logger = logging.getLogger("aircore")

TRACEBACK_EVERY = 60.0
"""Seconds between two full tracebacks of one tool and exception type."""

MAX_TRACKED = 1024
"""At most this many (tool, exception type) pairs are remembered; the oldest is forgotten."""

MAX_MESSAGE_CHARS = 4096
"""An exception's text is cut to this many characters in the log (its length is said)."""

MAX_CHAIN = 8
"""At most this many chained exceptions (``__cause__`` / ``__context__``) are shown."""

MAX_FRAMES = 32
"""A traceback shows at most this many frames per exception: the first and the last half (a
deep recursion's thousand frames would be ~200 KB of log per failure)."""


def masked_text(text: str) -> str:
    """``text`` with its secret shapes masked (airmeter's redaction); never raises: when masking
    fails, the text is withheld (its length said), never shown as it was."""
    # Imported on a failure only: a server that does not meter pays for airmeter's import at
    # its first failing call, never at start-up.
    from airmeter import redact_text

    try:
        return redact_text(text)
    except Exception as exc:  # a failure path must not fail, nor show what it could not mask
        return f"<{len(text)} characters withheld: masking them failed ({type(exc).__name__})>"


def _shown_text(exc: BaseException) -> str:
    """What ``exc`` says, secret shapes masked and cut to :data:`MAX_MESSAGE_CHARS`."""
    try:
        text = str(exc)
    except Exception:  # a broken __str__ must not hide the failure
        return f"<{type(exc).__name__} that cannot be printed>"
    head = text[: 2 * MAX_MESSAGE_CHARS]  # what lies beyond is dropped anyway
    shown = masked_text(head)
    if len(shown) > MAX_MESSAGE_CHARS or len(head) < len(text):
        shown = f"{shown[:MAX_MESSAGE_CHARS]}… ({len(text)} characters)"
    return shown


def _bounded(tb: TracebackType | None) -> tuple[TracebackType | None, int]:
    """``tb`` with at most :data:`MAX_FRAMES` frames (the first and the last half), and how
    many frames were left out of its middle."""
    frames: list[TracebackType] = []
    while tb is not None:
        frames.append(tb)
        tb = tb.tb_next
    if len(frames) <= MAX_FRAMES:
        return (frames[0] if frames else None), 0
    half = MAX_FRAMES // 2
    kept = frames[:half] + frames[-half:]
    out: TracebackType | None = None
    for frame in reversed(kept):
        out = TracebackType(out, frame.tb_frame, frame.tb_lasti, frame.tb_lineno)
    return out, len(frames) - len(kept)


def _shown(exc: BaseException, depth: int = 0) -> BaseException:
    """A stand-in for ``exc`` for the traceback printer: the same name, frames (at most
    :data:`MAX_FRAMES`) and chain, its text from :func:`_shown_text` (the exception itself is
    left as it is)."""
    kind = type(exc)
    names = {"__module__": kind.__module__, "__qualname__": kind.__qualname__}
    tb, left_out = _bounded(exc.__traceback__)
    text = _shown_text(exc)
    if left_out:
        text = f"{text} [{left_out} frames of its traceback left out]"
    proxy = cast(type[Exception], type(kind.__name__, (Exception,), names))(text)
    proxy.__traceback__ = tb
    if depth < MAX_CHAIN:
        if exc.__cause__ is not None:
            proxy.__cause__ = _shown(exc.__cause__, depth + 1)
        if exc.__context__ is not None and exc.__context__ is not exc.__cause__:
            proxy.__context__ = _shown(exc.__context__, depth + 1)
    proxy.__suppress_context__ = exc.__suppress_context__
    return proxy


_ExcInfo = tuple[type[BaseException], BaseException, TracebackType | None]


def logged_exc_info(exc: BaseException) -> _ExcInfo:
    """What to pass as ``exc_info=`` to log ``exc`` the bounded, masked way: its text (and its
    chain's) masked and cut, at most :data:`MAX_CHAIN` chained exceptions and
    :data:`MAX_FRAMES` frames each."""
    proxy = _shown(exc)
    return type(proxy), proxy, proxy.__traceback__


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
            _shown_text(exc),
            "" if with_traceback else " (same error as before; its traceback was logged then)",
            exc_info=logged_exc_info(exc) if with_traceback else None,
        )


FAILURES = FailureLog()
"""The process-wide failure log used by :func:`aircore.execution.run_call`."""
