"""What airhttp needs from the OS: the stop signals and the descriptor limit.

The implementation is chosen by what the interpreter and the running loop offer, not by the
platform's name:

- stop signals: SIGTERM, SIGINT (Ctrl+C) and, where the interpreter has it, SIGBREAK
  (Ctrl+Break on Windows). A loop with working ``add_signal_handler`` (selector loops and
  uvloop on POSIX) gets loop handlers; otherwise (the Proactor loop of Windows, which raises
  ``NotImplementedError``) a process handler (``signal.signal``) hands the stop to the loop with
  ``call_soon_threadsafe``, which also wakes a loop blocked in its selector or proactor.
- the listening socket's address reuse: ``SO_EXCLUSIVEADDRUSE`` where the interpreter has it
  (Windows, where ``SO_REUSEADDR`` would let another process bind the same port), else
  ``SO_REUSEADDR`` (a restarted server binds again while old connections linger in TIME_WAIT);
- the descriptor limit: the ``resource`` module where it exists (POSIX); elsewhere none is
  known and the caller's own cap stands.

Every function imports on every OS, so that both branches run in the tests on Linux:
:data:`LOOP_HANDLERS` set to ``False`` selects the Windows shape.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import signal
import socket
from collections.abc import Callable, Iterable
from types import FrameType

__all__ = [
    "LOOP_HANDLERS",
    "descriptor_limit",
    "on_stop_signals",
    "reuse_address",
    "stop_signals",
]

LOOP_HANDLERS = True
"""Try the loop's ``add_signal_handler`` first; ``False`` forces the process-handler path
(what Windows takes), so that it can be tested where loop handlers work."""

_STOP_NAMES = ("SIGTERM", "SIGINT", "SIGBREAK")


def stop_signals() -> tuple[signal.Signals, ...]:
    """The signals that ask a server to stop, those this interpreter has."""
    found = (getattr(signal, name, None) for name in _STOP_NAMES)
    return tuple(sig for sig in found if isinstance(sig, signal.Signals))


def on_stop_signals(
    callback: Callable[[], None],
    loop: asyncio.AbstractEventLoop | None = None,
    *,
    signals: Iterable[signal.Signals] | None = None,
) -> Callable[[], None]:
    """Run ``callback`` on ``loop`` (the running loop by default) at each stop signal.

    Args:
        callback: what stops the caller; run as a loop callback, never inside a signal.
        loop: the loop to run it on.
        signals: the signals to handle (default: :func:`stop_signals`).

    Returns:
        The function that puts the former handlers back. Nothing is installed off the main
        thread (the interpreter allows signal handlers only there): the caller then stops by
        cancellation.
    """
    loop = loop or asyncio.get_running_loop()
    undo: list[Callable[[], None]] = []
    for sig in stop_signals() if signals is None else signals:
        if LOOP_HANDLERS and _loop_handler(loop, sig, callback):
            undo.append(functools.partial(_remove_loop_handler, loop, sig))
            continue
        former = _process_handler(loop, sig, callback)
        if former is not None:
            undo.append(functools.partial(_restore, sig, former))

    def uninstall() -> None:
        for step in reversed(undo):
            step()
        undo.clear()

    return uninstall


def _loop_handler(
    loop: asyncio.AbstractEventLoop, sig: signal.Signals, callback: Callable[[], None]
) -> bool:
    try:
        loop.add_signal_handler(sig, callback)
    except NotImplementedError:  # the Proactor loop (Windows)
        return False
    except (RuntimeError, ValueError):  # not the main thread, or a signal the loop refuses
        return False
    return True


def _remove_loop_handler(loop: asyncio.AbstractEventLoop, sig: signal.Signals) -> None:
    with contextlib.suppress(RuntimeError, ValueError):  # the loop is closed already
        loop.remove_signal_handler(sig)


_Handler = Callable[[int, FrameType | None], object] | int | signal.Handlers | None


def _process_handler(
    loop: asyncio.AbstractEventLoop, sig: signal.Signals, callback: Callable[[], None]
) -> list[_Handler] | None:
    """Install a process handler that hands ``callback`` to ``loop``; the former handler (in
    a list, as it may be ``None``), or ``None`` when nothing could be installed."""

    def handler(_signum: int, _frame: FrameType | None) -> None:
        with contextlib.suppress(RuntimeError):  # the loop closed meanwhile
            loop.call_soon_threadsafe(callback)

    try:
        former = signal.signal(sig, handler)
    except (ValueError, OSError):  # not the main thread, or a signal the OS refuses
        return None
    return [former]


def _restore(sig: signal.Signals, former: list[_Handler]) -> None:
    with contextlib.suppress(ValueError, OSError, TypeError):
        signal.signal(sig, former[0] if former[0] is not None else signal.SIG_DFL)


def descriptor_limit() -> int | None:
    """The soft limit on open descriptors, or ``None`` where there is none to read (no
    ``resource`` module, as on Windows, or an unlimited one)."""
    try:
        import resource
    except ImportError:
        return None
    with contextlib.suppress(ValueError, OSError):
        soft, _hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        if soft != resource.RLIM_INFINITY:
            return int(soft)
    return None


def reuse_address(sock: socket.socket) -> None:
    """Set the address-reuse option a listening socket wants on this OS (module docstring)."""
    exclusive = getattr(socket, "SO_EXCLUSIVEADDRUSE", None)
    if exclusive is not None:
        sock.setsockopt(socket.SOL_SOCKET, exclusive, 1)
    else:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
