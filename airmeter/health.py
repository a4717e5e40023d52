"""The meter's own health: drops and sink failures, made visible and kept in the store.

A meter never blocks a call, so under overload it drops records and counts them; a sink that
fails or hangs is counted too. Those counts must not stay in memory where nobody looks:

- a warning on this module's logger, at most once per :data:`WARN_INTERVAL` seconds
  (saying how many records were dropped meanwhile);
- Prometheus series beside the call metrics (:func:`render_health`);
- one document per meter instance in the store namespace :data:`HEALTH_NAMESPACE`, read by
  :func:`meter_health` (the dashboard draws a badge from it).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any, Final

from airmeter.prometheus import escape_label_value
from airstore.types import Store

__all__ = [
    "HEALTH_NAMESPACE",
    "HEALTH_TTL",
    "WARN_INTERVAL",
    "HealthReporter",
    "MeterHealth",
    "meter_health",
    "render_health",
]

logger = logging.getLogger(__name__)

HEALTH_NAMESPACE: Final = "meter.health"
"""One key per meter instance: its :class:`MeterHealth` as a JSON object."""
HEALTH_TTL: Final = 7 * 24 * 3600.0
"""A health document of an instance that stopped reporting lives this long (seconds)."""
WARN_INTERVAL: Final = 60.0
"""Seconds between two warnings about drops or sink failures."""
PERSIST_INTERVAL: Final = 5.0
"""Seconds between two health documents written while the counts change."""


@dataclass(frozen=True, slots=True, kw_only=True)
class MeterHealth:
    """The counters of one meter instance (cumulative since it started).

    ``dropped`` counts records lost to a full pending queue and records a store sink could not
    persist (a full disk); ``delivered`` only records the store sinks persisted; ``pending``
    includes records waiting in a sink's retry backlog; ``sink_errors`` failed sink calls;
    ``sink_timeouts`` sink calls that did not finish within the meter's timeout (their batch is
    lost for that sink); ``updated_ms`` when the document was written.
    """

    instance_id: str
    server: str
    recorded: int
    delivered: int
    dropped: int
    pending: int
    sink_errors: int
    sink_timeouts: int
    updated_ms: int

    @property
    def degraded(self) -> bool:
        """Whether this meter lost anything (a dashboard shows a badge)."""
        return self.dropped > 0 or self.sink_errors > 0 or self.sink_timeouts > 0

    def to_json(self) -> dict[str, Any]:
        """The stored form."""
        return asdict(self)

    @classmethod
    def from_json(cls, data: Any) -> MeterHealth | None:
        """Rebuild from the stored form; ``None`` for anything else."""
        try:
            return cls(
                instance_id=str(data["instance_id"]), server=str(data["server"]),
                recorded=int(data["recorded"]), delivered=int(data["delivered"]),
                dropped=int(data["dropped"]), pending=int(data["pending"]),
                sink_errors=int(data["sink_errors"]), sink_timeouts=int(data["sink_timeouts"]),
                updated_ms=int(data["updated_ms"]),
            )  # fmt: skip
        except (KeyError, TypeError, ValueError):
            return None


class HealthReporter:
    """Warns (rate-limited) when counts grow and writes the health document now and then."""

    def __init__(self, *, warn_interval: float = WARN_INTERVAL) -> None:
        self._warn_interval = warn_interval
        self._warned_at: float | None = None
        self._warned: tuple[int, int, int] = (0, 0, 0)
        self._persisted_at: float | None = None
        self._persisted: MeterHealth | None = None

    def check(self, health: MeterHealth, *, final: bool = False) -> None:
        """Log one warning when drops or sink failures grew since the last one (at most once
        per interval, always on ``final``)."""
        now = time.monotonic()
        counts = (health.dropped, health.sink_errors, health.sink_timeouts)
        if counts == self._warned:
            return
        if (
            not final
            and self._warned_at is not None
            and now - self._warned_at < self._warn_interval
        ):
            return
        dropped, errors, timeouts = (a - b for a, b in zip(counts, self._warned, strict=True))
        self._warned, self._warned_at = counts, now
        logger.warning(
            "airmeter: %d records dropped (pending queue full), %d sink failures, %d sink "
            "timeouts since the last warning; totals %d / %d / %d (meter %s)",
            dropped, errors, timeouts, *counts, health.instance_id,
        )  # fmt: skip

    def due(self, health: MeterHealth, *, final: bool = False) -> bool:
        """Whether the document should be written now: it changed and the interval passed."""
        last = self._persisted
        if last is not None and (
            last.recorded,
            last.delivered,
            last.dropped,
            last.sink_errors,
            last.sink_timeouts,
        ) == (
            health.recorded,
            health.delivered,
            health.dropped,
            health.sink_errors,
            health.sink_timeouts,
        ):
            return False  # fmt: skip
        at = self._persisted_at
        return final or at is None or time.monotonic() - at >= PERSIST_INTERVAL

    async def persist(self, store: Store, health: MeterHealth) -> None:
        """Write the document (the caller bounds the wait).

        Raises:
            airstore.AirstoreError: the store refused it.
        """
        self._persisted_at = time.monotonic()
        await store.set(HEALTH_NAMESPACE, health.instance_id, health.to_json(), ttl=HEALTH_TTL)
        self._persisted = health


async def meter_health(store: Store) -> list[MeterHealth]:
    """The health of every meter instance that wrote to ``store`` (read-only stores work),
    newest report first.

    Raises:
        airstore.AirstoreError: the store cannot be read.
    """
    out = [h for _, doc in await store.entries(HEALTH_NAMESPACE)
           if (h := MeterHealth.from_json(doc)) is not None]  # fmt: skip
    out.sort(key=lambda h: -h.updated_ms)
    return out


def render_health(healths: Sequence[MeterHealth]) -> str:
    """Prometheus text (format 0.0.4) of the meters' own counters, one series per instance::

    air_meter_records_total{instance}           counter
    air_meter_records_dropped_total{instance}   counter
    air_meter_sink_errors_total{instance}       counter
    air_meter_sink_timeouts_total{instance}     counter
    air_meter_pending_records{instance}         gauge
    """
    lines: list[str] = []
    for name, kind, field, text in (
        ("air_meter_records_total", "counter", "recorded", "Calls the meter took."),
        ("air_meter_records_dropped_total", "counter", "dropped",
         "Records lost: the meter's pending queue was full, or a store could not persist them."),
        ("air_meter_sink_errors_total", "counter", "sink_errors", "Sink calls that failed."),
        ("air_meter_sink_timeouts_total", "counter", "sink_timeouts",
         "Sink calls abandoned after the meter's timeout."),
        ("air_meter_pending_records", "gauge", "pending", "Records waiting for delivery."),
    ):  # fmt: skip
        lines += [f"# HELP {name} {text}", f"# TYPE {name} {kind}"]
        for h in healths:
            label = escape_label_value(h.instance_id)
            lines.append(f'{name}{{instance="{label}"}} {getattr(h, field)}')
    return "\n".join(lines) + "\n"
