"""``gc_paused()``: keep the cyclic garbage collector off while a large rollup read runs.

An explicit choice of the program, never a library side effect: the dashboard passes
``pause_gc=True`` to its :class:`~airmeter.RollupReader`; ``air meter report`` keeps the
collector off for its one report. A library user who reads a long history cold can do the same.

A cold read builds millions of long-lived objects (the store's documents, the parsed rows);
each full collection the allocations trigger walks all of them again (1.5 M rows over 30 days:
20 full collections, 17 s of a 28 s report). Nothing read is cyclic garbage, so the collector
can resume when the last read ends; the objects then age into the old generation once instead
of being walked at every threshold.
"""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["gc_paused"]

_pauses = 0  # pauses running (in any task or thread) that keep the collector off
_lock = threading.Lock()


@contextmanager
def gc_paused() -> Iterator[None]:
    """Keep the cyclic garbage collector off until the last pause running ends.

    Pauses nest and overlap across tasks and threads: the collector comes back when the last
    one ends, and only if it was enabled when the first began (a collector someone else turned
    off stays off).
    """
    global _pauses
    with _lock:
        if _pauses == 0 and not gc.isenabled():
            owner = False
        else:
            owner = True
            _pauses += 1
            gc.disable()
    if not owner:  # someone else turned it off: leave it to them
        yield
        return
    try:
        yield
    finally:
        with _lock:
            _pauses -= 1
            if _pauses == 0:
                gc.enable()
