"""The optional C speedups of the KV set path (``airstore/_speedups.c``), chosen once at import.

``file_put`` and ``mem_put`` are the extension's functions, or ``None`` when it was not built
(no C compiler at install time) or ``AIR_SPEEDUPS=off``: FileStore and MemoryStore then take
their Python paths, which behave the same (tests run both). ``AIR_SPEEDUPS=require`` makes a
missing extension an ImportError here, so a deployment that counts on the fast path finds out at
start instead of by a slower server.
"""

from __future__ import annotations

import contextlib
import logging
import warnings
from collections.abc import Callable, Iterator
from types import ModuleType
from typing import Any

from airstore.settings import store_settings

__all__ = ["FilePut", "MemPut", "disabled", "file_put", "mem_put", "on_switch", "speedups"]

logger = logging.getLogger(__name__)


_NEEDED = ("bind_put", "file_put", "mem_put")  # what this release calls in the extension


def _load() -> ModuleType | None:
    settings = store_settings()
    if settings.speedups_unknown is not None:
        warnings.warn(
            f"AIR_SPEEDUPS={settings.speedups_unknown!r} is not auto, off or require: "
            "taken as auto",
            RuntimeWarning,
            stacklevel=2,
        )
    mode = settings.speedups
    if mode == "off":
        return None
    try:
        from airstore import _speedups
    except ImportError as exc:
        if mode == "require":
            raise ImportError(
                "AIR_SPEEDUPS=require, but airstore's C speedups are not built: install a C "
                "compiler and the Python headers (Debian: apt-get install gcc python3-dev), "
                "then reinstall air-mcp"
            ) from exc
        return None
    if not all(hasattr(_speedups, name) for name in _NEEDED):
        # A module an earlier build left in the tree (an editable install not rebuilt since
        # _speedups.c changed): its functions are not the ones this code calls.
        if mode == "require":
            raise ImportError(
                "AIR_SPEEDUPS=require, but airstore's C speedups are out of date (built from an "
                f"earlier _speedups.c: {_speedups.__file__}): reinstall air-mcp (make install)"
            )
        logger.warning(
            "airstore: the C speedups in %s are out of date (reinstall air-mcp: make install); "
            "running the Python paths",
            _speedups.__file__,
        )
        return None
    return _speedups


speedups: ModuleType | None = _load()
"""The loaded extension module, or ``None`` (the pure-Python paths)."""

FilePut = Callable[
    [object, object, dict[str, Any], dict[str, bytes], dict[str, float], bytearray, int], bool
]
MemPut = Callable[[object, object, dict[str, Any], int], bool]

file_put: FilePut | None = None if speedups is None else speedups.file_put
"""``file_put(key, value, items, entries, expires, pending, max_key) -> bool``: FileStore's
TTL-less set; False changes nothing (take the Python path)."""

mem_put: MemPut | None = None if speedups is None else speedups.mem_put
"""``mem_put(key, value, items, max_key) -> bool``: MemoryStore's TTL-less set; False changes
nothing (take the Python path)."""


_switches: list[Callable[[bool], None]] = []


def on_switch(choose: Callable[[bool], None]) -> None:
    """Have ``choose(on)`` pick an implementation now (``on``: the speedups are loaded) and
    again whenever :func:`disabled` turns them off and back on (``_kvput`` binds its put so)."""
    _switches.append(choose)
    choose(file_put is not None)


@contextlib.contextmanager
def disabled() -> Iterator[None]:
    """The pure-Python paths for a while (the tests' ``-py`` rows and the benches' "pure Python"
    columns): ``file_put`` and ``mem_put`` are ``None`` inside, what they were after, and every
    implementation chosen through :func:`on_switch` is the Python one."""
    global file_put, mem_put
    saved = file_put, mem_put
    file_put = mem_put = None
    for choose in _switches:
        choose(False)
    try:
        yield
    finally:
        file_put, mem_put = saved
        for choose in _switches:
            choose(file_put is not None)
