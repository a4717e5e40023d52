"""Flush open FileStores when the process ends: normal interpreter exit and SIGTERM.

* ``atexit``: every store still open gets a synchronous final flush.
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
import logging
import os
import signal
import threading
import weakref
from typing import Protocol

__all__ = ["register", "unregister"]

logger = logging.getLogger(__name__)


class _Flushable(Protocol):
    def flush_now(self) -> None: ...


# Strong references: an open store that its owner dropped without close() must still be flushed
# at exit. close() removes it.
_stores: set[_Flushable] = set()
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


def _on_sigterm(loop: asyncio.AbstractEventLoop) -> None:
    logger.warning("airstore: SIGTERM received, flushing open stores")
    _flush_all()
    if _ours(loop):
        loop.remove_signal_handler(signal.SIGTERM)
    _loops_with_handler.pop(loop, None)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    os.kill(os.getpid(), signal.SIGTERM)


def register(store: _Flushable, *, handle_sigterm: bool) -> bool:
    """Track ``store`` so that exit and (optionally) SIGTERM flush it.

    Returns:
        True when the store counts towards the loop's SIGTERM handler (pass it back to
        :func:`unregister`).
    """
    global _atexit_done
    _stores.add(store)
    if not _atexit_done:
        atexit.register(_flush_all)
        _atexit_done = True
    if not handle_sigterm or threading.current_thread() is not threading.main_thread():
        return False
    loop = asyncio.get_running_loop()
    if loop in _loops_with_handler:
        _loops_with_handler[loop] += 1
        return True
    if signal.getsignal(signal.SIGTERM) is not signal.SIG_DFL:
        return False
    try:
        loop.add_signal_handler(signal.SIGTERM, _on_sigterm, loop)
    except (NotImplementedError, RuntimeError, ValueError):
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
        loop.remove_signal_handler(signal.SIGTERM)


def _ours(loop: asyncio.AbstractEventLoop) -> bool:
    """True if the loop's SIGTERM handler is still ours (someone may have replaced it since).

    asyncio has no public accessor for a loop's signal handlers; when the private one is
    missing we leave the handler alone: with no store left it only restores the default action.
    """
    handlers = getattr(loop, "_signal_handlers", None)
    handle = handlers.get(signal.SIGTERM) if isinstance(handlers, dict) else None
    return getattr(handle, "_callback", None) is _on_sigterm
