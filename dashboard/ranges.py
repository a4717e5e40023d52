"""Time ranges: the preset keys (15 min … 7 days), custom ranges, their bucket sizes, and the
range a page opens on when asked to fit the data (:data:`AUTO`, :func:`fitting_range`)."""

from __future__ import annotations

from datetime import datetime

from dashboard.errors import InvalidRangeError
from dashboard.types import TimeRange

__all__ = [
    "AUTO",
    "CUSTOM",
    "DEFAULT_RANGE",
    "FIT_LIMIT",
    "RANGES",
    "fitting_range",
    "parse_instant",
    "resolve_range",
]

_MIN = 60_000

RANGES: dict[str, tuple[str, int, int]] = {
    # key: (label, length in ms, bucket in ms); buckets are whole minutes (the meter's rollups)
    "15m": ("15 min", 15 * _MIN, _MIN),
    "1h": ("1 hour", 60 * _MIN, _MIN),
    "6h": ("6 hours", 6 * 60 * _MIN, 5 * _MIN),
    "24h": ("24 hours", 24 * 60 * _MIN, 20 * _MIN),
    "7d": ("7 days", 7 * 24 * 60 * _MIN, 3 * 60 * _MIN),
}
CUSTOM = "custom"
AUTO = "auto"
"""Open on the smallest preset range that holds the data (:func:`fitting_range`)."""
DEFAULT_RANGE = "1h"
FIT_LIMIT = "24h"
"""The range a page fitting the data opens on when the data is older (or there is none)."""

# Bucket sizes a custom range may use: the smallest that gives at most ~90 buckets.
_NICE_BUCKETS = (
    _MIN,
    5 * _MIN,
    15 * _MIN,
    30 * _MIN,
    60 * _MIN,
    3 * 60 * _MIN,
    6 * 60 * _MIN,
    24 * 60 * _MIN,
)
_MAX_BUCKETS = 90


def _bucket_for(span_ms: int) -> int:
    for size in _NICE_BUCKETS:
        if span_ms / size <= _MAX_BUCKETS:
            return size
    return _NICE_BUCKETS[-1] * max(1, span_ms // (_NICE_BUCKETS[-1] * _MAX_BUCKETS) + 1)


def fitting_range(oldest_ms: int | None, *, now_ms: int) -> str:
    """The smallest preset range that holds every call since ``oldest_ms`` (at most
    :data:`FIT_LIMIT`; :data:`FIT_LIMIT` too when there is none).

    Args:
        oldest_ms: the start of the oldest minute with calls within :data:`FIT_LIMIT`.
        now_ms: the current time in epoch ms.
    """
    if oldest_ms is None:
        return FIT_LIMIT
    span = now_ms - oldest_ms
    for key, (_, length, _) in RANGES.items():
        if span <= length or key == FIT_LIMIT:
            return key
    return FIT_LIMIT


def parse_instant(text: str) -> int:
    """Parse ``"2026-11-30 04:10"`` / ISO 8601 (local time unless it has an offset) to epoch ms.

    Raises:
        InvalidRangeError: the text is not a date/time.
    """
    try:
        return int(datetime.fromisoformat(text.strip()).timestamp() * 1000)
    except (ValueError, AttributeError) as exc:
        raise InvalidRangeError(
            f"{text!r} is not a date and time (use e.g. 2026-11-30 14:05)"
        ) from exc


def resolve_range(
    key: str,
    *,
    now_ms: int,
    start_ms: int | None = None,
    end_ms: int | None = None,
) -> TimeRange:
    """Turn a range key into concrete bounds ending now (or the custom ``start``/``end``).

    Args:
        key: one of :data:`RANGES` or ``"custom"``.
        now_ms: the current time in epoch ms.
        start_ms: the custom range's start (required for ``"custom"``).
        end_ms: the custom range's end (default: now).

    Returns:
        The range, with a bucket size that gives at most ~90 buckets. Preset ranges are
        ``[now - length, now]``; series buckets are aligned on multiples of the bucket size.

    Raises:
        InvalidRangeError: unknown key, missing start, or an empty/inverted custom range.
    """
    if key in RANGES:
        _, length, bucket = RANGES[key]
        return TimeRange(key=key, since_ms=now_ms - length, until_ms=now_ms + 1, bucket_ms=bucket)
    if key != CUSTOM:
        raise InvalidRangeError(f"unknown time range {key!r}; use one of {[*RANGES, CUSTOM]}")
    if start_ms is None:
        raise InvalidRangeError("a custom range needs a start")
    end = now_ms if end_ms is None else end_ms
    if end <= start_ms:
        raise InvalidRangeError("a custom range must end after it starts")
    return TimeRange(
        key=CUSTOM, since_ms=start_ms, until_ms=end, bucket_ms=_bucket_for(end - start_ms)
    )
