"""What the ``air`` commands need from the OS: stopping on SIGTERM and Ctrl+Break as on
Ctrl+C, and telling whether stdout's reader went away.

Chosen by what the interpreter offers: SIGBREAK (Ctrl+Break) exists on Windows only, and
``select.poll`` on POSIX only. Everything imports on every OS. The asyncio commands' stop
handlers are airhttp's (:func:`airhttp.on_stop_signals`: loop handlers where the loop has
them, process handlers handing over to the loop elsewhere).
"""

from __future__ import annotations

import asyncio
import contextlib
import select
import signal
from collections.abc import Callable
from types import FrameType

from airhttp import on_stop_signals

__all__ = ["cancel_on_terminate", "interrupt_on_terminate", "reader_gone", "terminate_signals"]


def terminate_signals() -> tuple[signal.Signals, ...]:
    """SIGTERM and, where the interpreter has it, SIGBREAK (Ctrl+Break on Windows, whose
    default action ends the process at once, with nothing flushed)."""
    found = (getattr(signal, name, None) for name in ("SIGTERM", "SIGBREAK"))
    return tuple(sig for sig in found if isinstance(sig, signal.Signals))


def cancel_on_terminate(task: asyncio.Task[object]) -> Callable[[], None]:
    """Cancel ``task`` at SIGTERM or Ctrl+Break, as ``asyncio.run`` does at the first Ctrl+C
    (which stays ``asyncio.run``'s: a second one interrupts). Returns the undo function."""

    def cancel() -> None:
        task.cancel()

    return on_stop_signals(cancel, signals=terminate_signals())


_Handler = Callable[[int, FrameType | None], object] | int | signal.Handlers | None


def _interrupt(_signum: int, _frame: FrameType | None) -> None:
    raise KeyboardInterrupt


def interrupt_on_terminate() -> Callable[[], None]:
    """Make SIGTERM and Ctrl+Break raise ``KeyboardInterrupt`` in the main thread, as Ctrl+C
    does, for a command that blocks there (the dashboard). Returns the undo function; off the
    main thread nothing is installed."""
    former: list[tuple[signal.Signals, _Handler]] = []
    for sig in terminate_signals():
        with contextlib.suppress(ValueError, OSError):
            former.append((sig, signal.signal(sig, _interrupt)))

    def undo() -> None:
        for sig, handler in reversed(former):
            with contextlib.suppress(ValueError, OSError, TypeError):
                signal.signal(sig, signal.SIG_DFL if handler is None else handler)
        former.clear()

    return undo


def reader_gone(fd: int) -> bool:
    """Whether ``fd`` is a pipe or socket whose reading end is closed (Linux reports POLLERR
    for it, BSD and macOS POLLHUP). Without ``poll`` (Windows) this is not known: ``False``."""
    poll = getattr(select, "poll", None)
    if poll is None:
        return False
    try:
        poller = poll()
        poller.register(fd, select.POLLOUT)
        gone = select.POLLERR | select.POLLHUP
        return any(event & gone for _, event in poller.poll(0))
    except (OSError, ValueError):
        return False
