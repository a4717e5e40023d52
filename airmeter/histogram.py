"""Log-bucketed latency histograms: mergeable, small, percentiles within 1.5 %.

Bucket ``i`` (``i >= 1``) holds latencies in ``[BASE_MS * GROWTH**(i-1), BASE_MS * GROWTH**i)``;
bucket 0 holds everything at or below ``BASE_MS``. A percentile is answered with the bucket's
geometric midpoint, so its relative error is at most ``sqrt(GROWTH) - 1`` (1.5 %). A
histogram is a plain ``dict[int, int]`` (bucket → count): merging is adding counts, and its
JSON form is the flat list ``[bucket, count, …]``.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence

__all__ = [
    "BASE_MS",
    "GROWTH",
    "MAX_BUCKET",
    "bucket_of",
    "bucket_value",
    "from_json",
    "merge_into",
    "percentile",
    "percentiles",
    "to_json",
]

BASE_MS = 0.001
GROWTH = 1.03
_INV_LOG_GROWTH = 1.0 / math.log(GROWTH)
_LOG_BASE = math.log(BASE_MS)
MAX_BUCKET = 20_000
"""The highest bucket index a stored histogram may hold: ~1e254 ms, far past any latency or
token count, and far below where :func:`bucket_value` overflows a float (~24 000)."""


def bucket_of(latency_ms: float) -> int:
    """The bucket index of one latency in milliseconds."""
    if latency_ms <= BASE_MS:
        return 0
    return int((math.log(latency_ms) - _LOG_BASE) * _INV_LOG_GROWTH) + 1


def bucket_value(index: int) -> float:
    """The representative latency of a bucket: its geometric midpoint (``BASE_MS`` for 0)."""
    if index <= 0:
        return BASE_MS
    return float(BASE_MS * GROWTH ** (index - 0.5))


def merge_into(target: dict[int, int], source: Mapping[int, int]) -> None:
    """Add the counts of ``source`` into ``target``."""
    get = target.get
    for index, count in source.items():
        target[index] = get(index, 0) + count


def percentiles(hist: Mapping[int, int], qs: Iterable[float]) -> list[float | None]:
    """Several percentiles (``q`` in 0-100) in one pass; ``None`` for an empty histogram.

    The rank used is the nearest-rank definition: the smallest value with at least ``q`` % of
    the samples at or below it.
    """
    wanted = list(qs)
    total = sum(hist.values())
    if total <= 0:
        return [None] * len(wanted)
    order = sorted(range(len(wanted)), key=lambda i: wanted[i])
    ranks = [max(1, math.ceil(wanted[i] / 100.0 * total)) for i in order]
    out: list[float | None] = [None] * len(wanted)
    seen = 0
    pos = 0
    for index in sorted(hist):
        seen += hist[index]
        while pos < len(order) and seen >= ranks[pos]:
            out[order[pos]] = bucket_value(index)
            pos += 1
        if pos == len(order):
            break
    return out


def percentile(hist: Mapping[int, int], q: float) -> float | None:
    """One percentile (``q`` in 0-100) of a histogram; ``None`` when it is empty."""
    return percentiles(hist, (q,))[0]


def to_json(hist: Mapping[int, int]) -> list[int]:
    """The JSON form: a flat ``[bucket, count, bucket, count, …]`` list (compact, and parsed
    back at C speed)."""
    out: list[int] = []
    for index, count in hist.items():
        out.append(index)
        out.append(count)
    return out


def from_json(data: Sequence[int] | Mapping[str, int]) -> dict[int, int]:
    """Parse the JSON form back (also the older ``{"bucket": count}`` form).

    Raises:
        ValueError: a bucket outside ``0…MAX_BUCKET`` or a negative count (a damaged document).
        TypeError: a bucket or a count that is not a number.
    """
    if isinstance(data, Mapping):
        hist = {int(k): int(v) for k, v in data.items()}
    else:
        pairs = iter(data)
        hist = dict(zip(pairs, pairs))  # noqa: B905 - pairs of one iterator: equal by design
    # min/max run at C speed; a str among the numbers raises TypeError on comparing
    if hist and (min(hist) < 0 or max(hist) > MAX_BUCKET or min(hist.values()) < 0):
        raise ValueError("histogram bucket or count out of range")
    return hist
