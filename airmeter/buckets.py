"""Time bounds and bucket arithmetic of snapshots: minutes, "nice" bucket widths, merged buckets.

Pure functions and one bounded cache; no I/O. A window is minute-granular: a stored minute
counts when it overlaps ``[since, until)``.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from datetime import datetime, timedelta

from airmeter.errors import MeterConfigError
from airmeter.rollups import MINUTE_MS, RollupRow, merge_row_into
from airstore import to_epoch_ms  # the same bound rules as the store
from airstore.errors import InvalidArgumentError

__all__ = [
    "DEFAULT_MAX_BUCKETS",
    "Bound",
    "BucketCache",
    "RowGroup",
    "bucket_width",
    "ceil_minute",
    "floor_minute",
    "merge_bucket",
    "to_ms",
]

DEFAULT_MAX_BUCKETS = 60

Bound = datetime | timedelta | int | float | None
"""A time bound: a ``datetime``, epoch milliseconds, or a ``timedelta`` meaning "that long ago"."""

RowGroup = tuple[int, Sequence[RollupRow]]
"""One stored minute: its start (epoch ms) and its rollup rows."""

_NICE_MINUTES = (1, 2, 5, 10, 15, 30, 60, 120, 180, 360, 720, 1440)
_DAY_MS = 1440 * MINUTE_MS
_MAX_CACHED_BUCKETS = 8192


def to_ms(bound: Bound, now_ms: int) -> int | None:
    """Epoch milliseconds of a bound (``timedelta`` counts back from ``now_ms``).

    Raises:
        MeterConfigError: the bound is of another type.
    """
    if isinstance(bound, timedelta):
        return now_ms - int(bound.total_seconds() * 1000)
    try:
        return to_epoch_ms(bound)
    except InvalidArgumentError as exc:
        raise MeterConfigError(
            f"time bound must be a datetime, timedelta or finite epoch ms: {bound!r}"
        ) from exc


def floor_minute(ms: int) -> int:
    """The start of the minute holding ``ms``."""
    return ms - ms % MINUTE_MS


def ceil_minute(ms: int) -> int:
    """The first minute start at or after ``ms``."""
    return -(-ms // MINUTE_MS) * MINUTE_MS


def _nice_widths() -> Iterator[int]:
    yield from (m * MINUTE_MS for m in _NICE_MINUTES)
    days = 2
    while True:
        yield days * _DAY_MS
        days *= 2


def bucket_width(start: int, end: int, max_buckets: int) -> int:
    """The smallest "nice" width (1, 2, 5 … minutes, hours, days) giving at most
    ``max_buckets`` epoch-aligned buckets over ``[start, end)``."""
    for width in _nice_widths():
        first = start - start % width
        if -(-(end - first) // width) <= max_buckets:
            return width
    raise AssertionError("unreachable")  # pragma: no cover


def merge_bucket(groups: Sequence[Sequence[RollupRow]], start: int) -> list[RollupRow]:
    """The rows of several minutes merged into one row per (server, instance, tool, layer),
    stamped ``start``."""
    out: dict[tuple[str, str, str, int], RollupRow] = {}
    for rows in groups:
        for r in rows:
            merge_row_into(out, r, start)
    return list(out.values())


class BucketCache:
    """Merged rows per time bucket, reused while the bucket's minute row lists are the same
    objects (a document cache hands out the same list while a minute is unchanged).

    Bounded: past 8,192 buckets it starts again empty.
    """

    def __init__(self) -> None:
        self._entries: dict[tuple[int, ...], tuple[list[Sequence[RollupRow]], list[RollupRow]]]
        self._entries = {}

    def merged(self, key: tuple[int, ...], groups: list[Sequence[RollupRow]]) -> list[RollupRow]:
        """The merged rows of one bucket (``key[0]`` is its start)."""
        hit = self._entries.get(key)
        if (
            hit is not None
            and len(hit[0]) == len(groups)
            and all(a is b for a, b in zip(hit[0], groups, strict=True))
        ):
            return hit[1]
        merged = merge_bucket(groups, key[0])
        if len(self._entries) >= _MAX_CACHED_BUCKETS:
            self._entries.clear()
        self._entries[key] = (groups, merged)
        return merged
