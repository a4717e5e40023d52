"""The one way a key is put into a FileStore namespace: :func:`put`.

``put(space, key, value, exp)`` validates the key and the value, encodes the journal record
``["key",value]`` (with the expiry ``exp`` as a third item when there is one), and stores the
value, the record and the expiry in the namespace's memory and the record in its pending
journal bytes; bad input raises the typed error having changed nothing. ``FileKeys.set`` and
``FileKeys.incr`` both put through it.

It has two implementations of the same signature, chosen once at import: :func:`python_put`,
and, where airstore's C speedups are loaded (``_accel``), :data:`native_put`: the C speedups
bound to :func:`python_put`, which run what they take in C and hand the rest to it. The
contract suite runs both (rows ``file-journal`` and ``file-journal-py``: ``_accel.disabled()``
makes :data:`put` :func:`python_put` for a while).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

import orjson

from airstore import _accel
from airstore._compaction import set_line
from airstore._validate import JSON_OPTS, MAX_KEY_LENGTH, check_key, encode_value
from airstore.types import JSONValue

if TYPE_CHECKING:
    from airstore._kvspace import KVSpace

__all__ = ["Put", "native_put", "put", "python_put"]

Put = Callable[["KVSpace", str, JSONValue, "float | None"], None]

_dumps = orjson.dumps
_N = ord("n")  # every ``null`` holds this byte
_DASH = ord("-")  # every uuid.UUID's text holds four
RECORD_OPTS = JSON_OPTS | orjson.OPT_PASSTHROUGH_SUBCLASS


def _record(ns: str, key: str, value: JSONValue) -> bytes:
    """``[key,value]`` for what the one-call encoding refused: a typed error for a bad key or
    value, else the record (a subclass of a JSON type written as that type).

    Raises:
        InvalidKeyError, InvalidValueError: the key or the value cannot be stored.
    """
    check_key(ns, key)
    return b"[%b,%b]" % (_dumps(key), encode_value(ns, key, value))


def python_put(space: KVSpace, key: str, value: JSONValue, exp: float | None) -> None:
    """Put ``key`` into ``space`` with the absolute expiry ``exp`` (or none): the Python
    implementation of :func:`put`.

    Raises:
        InvalidKeyError, InvalidValueError: the key or the value cannot be stored; nothing
            was changed.
    """
    ns = space.ns
    if type(key) is not str or not key or len(key) > MAX_KEY_LENGTH:
        check_key(ns, key)  # raises
    try:
        # The record [key,value] in one call, which also validates both (a lone surrogate in
        # the key fails here; a subclass of str, int, dict or list, which orjson would write as
        # its base type, goes the checked way).
        record = _dumps((key, value), None, RECORD_OPTS)
    except TypeError:
        record = _record(ns, key, value)
    # NaN/Infinity hide behind null: check properly. An "n" byte (one memchr) must be there
    # first; ``bytes.find`` alone costs four times as much. The value starts after the key (at
    # least len(key) + 4 bytes in).
    if (_N in record and record.find(b"null", len(key) + 3) >= 0) or (
        _DASH in record and record.count(_DASH, len(key) + 3) > 3
    ):  # and a uuid.UUID behind a string with four "-"
        encode_value(ns, key, value)
    # Every check has passed: from here on nothing raises (but memory).
    line = set_line(record, exp)  # a copy of exact size: orjson's own keeps its whole buffer
    space.items[key] = value
    space.entries[key] = line
    space.journal.pending += line
    if exp is not None:
        space.expire_at(key, exp)
    elif space.expires:
        space.expires.pop(key, None)


native_put: Put | None = (
    None if _accel.speedups is None else _accel.speedups.bind_put(python_put, MAX_KEY_LENGTH)
)
"""The C implementation of :func:`put` (``bind_put`` in ``airstore/_speedups.c``), or ``None``
where the speedups are not loaded: it runs a TTL-less put of plain ASCII JSON (the common case)
in one call and hands everything else, having changed nothing, to :func:`python_put`, which
raises the typed error or puts what C leaves out."""

put: Put = python_put
"""The one put: ``put(space, key, value, exp)``. Chosen at import (:func:`_choose`): ``native_put``
where the C speedups are loaded, else ``python_put``; callers look it up here at each call, so
``_accel.disabled()`` runs them on ``python_put`` for a while."""


def _choose(on: bool) -> None:
    global put
    put = native_put if on and native_put is not None else python_put


_accel.on_switch(_choose)
