"""Close what the owner forgot when the process ends: normal interpreter exit and SIGTERM.

* ``atexit``: every FileStore still open gets a synchronous final flush; every other store
  still open (SQLite, Redis, memory) is closed. Each emits a ``ResourceWarning`` naming it: a
  store should be closed by its owner (``async with`` or ``await store.close()``). Nothing here
  ever blocks exit (SQLite's worker threads are daemon threads, stopped here).
* SIGTERM: only when nobody else handles it (the handler is ``SIG_DFL``) and the store was
  opened on the main thread's running loop, a loop signal handler is installed. It runs as an
  ordinary loop callback, so it never interrupts a store half-way through an operation; it
  flushes every store, restores the default action and re-sends SIGTERM, so the process still
  ends with the status a SIGTERM gives. Applications with their own SIGTERM handling (uvicorn,
  for example) keep it and should ``await store.close()`` in their shutdown path.
"""

from __future__ import annotations

import asyncio
import atexit
import functools
import logging
import signal
import threading
import warnings
import weakref
from typing import Protocol

from airstore import _platform

__all__ = ["register", "track", "unregister", "untrack"]

logger = logging.getLogger(__name__)


class _Flushable(Protocol):
    def flush_now(self) -> None: ...


class _Closable(Protocol):
    def close_at_exit(self) -> None: ...


# Strong references: an open FileStore that its owner dropped without close() must still be
# flushed at exit. close() removes it.
_stores: set[_Flushable] = set()
# Weak references: a store with nothing left to flush (every acknowledged write is already
# committed) is only closed at exit if it is still alive then.
_others: weakref.WeakSet[_Closable] = weakref.WeakSet()
_loops_with_handler: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, int] = (
    weakref.WeakKeyDictionary()
)
_atexit_done = False


def _flush_all() -> None:
    for store in list(_stores):
        try:
            store.flush_now()
        except Exception:  # at exit: report and keep flushing the others
            logger.exception("airstore: final flush at exit failed")


def _at_exit() -> None:
    for store in list(_stores):
        warnings.warn(f"{store!r} was never closed; flushed at exit", ResourceWarning, 1)
    _flush_all()
    for other in list(_others):
        warnings.warn(f"{other!r} was never closed; closed at exit", ResourceWarning, 1)
        try:
            other.close_at_exit()
        except Exception:  # at exit: report and keep closing the others
            logger.exception("airstore: closing a store at exit failed")


def _ensure_atexit() -> None:
    global _atexit_done
    if not _atexit_done:
        atexit.register(_at_exit)
        _atexit_done = True


def track(store: _Closable) -> None:
    """Close ``store`` at interpreter exit (with a ``ResourceWarning``) if it is still open."""
    _others.add(store)
    _ensure_atexit()


def untrack(store: _Closable) -> None:
    """``store`` was closed by its owner."""
    _others.discard(store)


def _on_sigterm(loop: asyncio.AbstractEventLoop) -> None:
    logger.warning("airstore: SIGTERM received, flushing open stores")
    _flush_all()
    if _ours(loop):
        _platform.remove_sigterm_handler(loop)
    _loops_with_handler.pop(loop, None)
    _platform.resend_sigterm()


def register(store: _Flushable, *, handle_sigterm: bool) -> bool:
    """Track ``store`` so that exit and (optionally) SIGTERM flush it.

    Returns:
        True when the store counts towards the loop's SIGTERM handler (pass it back to
        :func:`unregister`).
    """
    _stores.add(store)
    _ensure_atexit()
    if not handle_sigterm or threading.current_thread() is not threading.main_thread():
        return False
    loop = asyncio.get_running_loop()
    if loop in _loops_with_handler:
        _loops_with_handler[loop] += 1
        return True
    if signal.getsignal(signal.SIGTERM) is not signal.SIG_DFL:
        return False
    if not _platform.add_sigterm_handler(loop, functools.partial(_on_sigterm, loop)):
        return False
    _loops_with_handler[loop] = 1
    return True


def unregister(store: _Flushable, *, counted: bool) -> None:
    """Stop tracking ``store``; the last counted store on a loop removes the SIGTERM handler."""
    _stores.discard(store)
    if not counted:
        return
    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:
        return
    count = _loops_with_handler.get(loop)
    if count is None:
        return
    if count > 1:
        _loops_with_handler[loop] = count - 1
        return
    del _loops_with_handler[loop]
    if _ours(loop):
        _platform.remove_sigterm_handler(loop)


def _ours(loop: asyncio.AbstractEventLoop) -> bool:
    """True if the loop's SIGTERM handler is still ours (someone may have replaced it since).

    asyncio has no public accessor for a loop's signal handlers; when the private one is
    missing we leave the handler alone: with no store left it only restores the default action.
    """
    handlers = getattr(loop, "_signal_handlers", None)
    handle = handlers.get(signal.SIGTERM) if isinstance(handlers, dict) else None
    callback = getattr(handle, "_callback", None)
    return isinstance(callback, functools.partial) and callback.func is _on_sigterm
