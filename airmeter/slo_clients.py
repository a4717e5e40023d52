"""SLO targets with a client selector, counted from the raw call log.

The rollups hold no clients, so a target with ``client`` reads the call log over its period (the
newest :data:`~airmeter.clients.MAX_CLIENT_READ` calls, like every reader bounded) and counts, per
(server, tool) it matches, the valid and bad calls of the matching clients, as the rollup
evaluation counts them (a call's latency is exact here, not a histogram bucket's).

How much of the period the log covers: all of it, unless the read stopped at its bound, or the
rollups hold calls from an hour of the period before the oldest call in the log (the log's
retention dropped them); then it covers from its oldest call read.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

from airmeter.clients import MAX_CLIENT_READ, client_key
from airmeter.outcome import RATE_CLASSES, error_class_of
from airmeter.record import CALLS_NAMESPACE, CallRecord
from airmeter.rollups import HOUR_MS, MINUTE_MS
from airmeter.slo_config import SloTarget
from airstore.types import Store

__all__ = ["ClientCounts", "count_client_targets"]

_EXCLUDED: Final = frozenset({"refused", "cancelled", "budget", "protocol"})


@dataclass(frozen=True, slots=True, kw_only=True)
class ClientCounts:
    """One client target's calls of one (server, tool): over its period and in each burn
    window (``windows``: ``(valid, bad)`` per window, in the order asked), and the seconds of the
    period the raw log covers."""

    target: SloTarget
    key: tuple[str, str]
    valid: int
    bad: int
    windows: list[tuple[int, int]]
    covers_s: float


@dataclass(frozen=True, slots=True)
class _Call:
    ts_ms: int
    server: str
    tool: str
    client: str
    counted: bool  # a valid call (not refused, cancelled, over budget, protocol)
    failed: bool  # one of the tool's own failures
    latency_ms: float


def _calls(entries: Sequence[dict[str, object]]) -> list[_Call]:
    out = []
    for entry in entries:
        try:
            rec = CallRecord.from_log(entry)
        except (KeyError, TypeError, ValueError):  # not a call record: skipped
            continue
        cls = None if rec.ok else error_class_of(rec.error_type or "error")
        out.append(_Call(rec.ts_ms, rec.server, rec.tool, client_key(rec.client_id, rec.auth),
                         cls not in _EXCLUDED, cls in RATE_CLASSES, rec.latency_ms))  # fmt: skip
    return out


async def count_client_targets(
    store: Store,
    targets: Sequence[SloTarget],
    *,
    now_ms: int,
    windows_min: Sequence[int],
    rollup_hours: Sequence[int],
) -> list[ClientCounts]:
    """Count every client target over the raw log, one read for all of them.

    Args:
        store: the store holding the call log.
        targets: targets with a ``client``.
        now_ms: the evaluation's clock.
        windows_min: the burn windows, in minutes (each starts on a minute, as the rollups').
        rollup_hours: the hours the rollups hold calls of (epoch hours).

    Returns:
        One :class:`ClientCounts` per target and (server, tool) with calls of its clients.

    Raises:
        airstore.AirstoreError: the store cannot be read.
    """
    if not targets:
        return []
    longest = max(t.period_s for t in targets)
    since = now_ms - int(longest * 1000)
    entries = await store.query(CALLS_NAMESPACE, limit=MAX_CLIENT_READ + 1, since=since)
    truncated = len(entries) > MAX_CLIENT_READ
    calls = _calls(entries[:MAX_CLIENT_READ])
    oldest = min((c.ts_ms for c in calls), default=now_ms)
    # an hour of rollups wholly in the window and before the log's oldest hour: its calls left
    # the log (retention), or were not read (the bound)
    pruned = any(hour * HOUR_MS >= since and hour < oldest // HOUR_MS for hour in rollup_hours)
    firsts = []
    for minutes in windows_min:
        start = now_ms - minutes * MINUTE_MS
        firsts.append(start - start % MINUTE_MS)
    out = []
    for target in targets:
        period_start = now_ms - int(target.period_s * 1000)
        covers_ms = now_ms - (oldest if truncated or pruned else period_start)
        covers_s = min(target.period_s, max(0.0, covers_ms / 1000))
        threshold = target.threshold_ms
        sums: dict[tuple[str, str], list[int]] = {}  # valid, bad, then per window
        matched: dict[tuple[str, str, str], bool] = {}
        for call in calls:
            if not call.counted or call.ts_ms < period_start or call.ts_ms > now_ms:
                continue
            key = (call.server, call.tool)
            found = matched.get((call.client, *key))
            if found is None:
                found = matched[(call.client, *key)] = target.matches(*key) and (
                    target.matches_client(call.client)
                )
            if not found:
                continue
            row = sums.get(key)
            if row is None:
                row = sums[key] = [0] * (2 + 2 * len(firsts))
            bad = call.failed if threshold is None else call.latency_ms > threshold
            row[0] += 1
            row[1] += bad
            for i, first in enumerate(firsts):
                if call.ts_ms >= first:
                    row[2 + 2 * i] += 1
                    row[3 + 2 * i] += bad
        for key in sorted(sums):
            row = sums[key]
            out.append(ClientCounts(
                target=target, key=key, valid=row[0], bad=row[1],
                windows=[(row[2 + 2 * i], row[3 + 2 * i]) for i in range(len(firsts))],
                covers_s=covers_s,
            ))  # fmt: skip
    return out
