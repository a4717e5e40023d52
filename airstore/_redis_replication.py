"""What RedisStore knows about replication: confirmed writes, failovers, unconfirmed writes.

Redis replicates asynchronously. In ``durability="async"`` (the default) a write is
acknowledged once the master has it; a master that dies before its replica got the write loses
it. The store cannot prevent that, but it bounds and counts it: it notes, for every batch the
master acknowledged, the running count of acknowledged writes, and probes the master's
replication offsets (``INFO replication``) at most once a second off the write path. Writes
acknowledged before the offset every replica had reached are *confirmed*; the rest are
*unconfirmed*. When the store finds itself talking to another master (a new ``run_id``: a
Sentinel or cluster failover), the unconfirmed writes of the old master are the ones that may
be lost: counted in :attr:`ReplicationStats.unconfirmed_at_failover` and logged as a warning.

In ``durability="replicated"`` every batch of writes ends with ``WAIT replicas timeout`` on the
connection that sent it, and is acknowledged only when enough replicas confirmed it.
"""

from __future__ import annotations

import logging
import time
from collections import deque
from dataclasses import dataclass
from typing import Any, Literal

__all__ = ["DEFAULT_REPLICATION_TIMEOUT", "Durability", "ReplicationStats", "ReplicationWatch"]

logger = logging.getLogger(__name__)

Durability = Literal["async", "replicated"]
DEFAULT_REPLICATION_TIMEOUT = 0.5
"""Seconds a replicated write waits for its replicas (``WAIT``) before it is refused."""
PROBE_INTERVAL = 1.0
"""Seconds between two probes of the master's replication offsets."""
REPLICA_CHECK_INTERVAL = 1.0
"""Seconds a "no replica connected" answer is trusted before asking again."""
_MAX_MARKS = 64


@dataclass(frozen=True, slots=True, kw_only=True)
class ReplicationStats:
    """A RedisStore's replication figures (``store.replication``).

    Attributes:
        durability: ``"async"`` or ``"replicated"``.
        acknowledged_writes: writes the store acknowledged to its callers.
        unconfirmed_writes: of those, the ones no replica was known to hold at the last probe
            (async mode; 0 in replicated mode, where nothing unconfirmed is acknowledged).
        failovers: times the store found a new master behind its URL.
        unconfirmed_at_failover: writes acknowledged by old masters and not confirmed by a
            replica when the new master was found: the most that can have been lost.
        refused_writes: replicated mode: writes refused because no replica confirmed them.
        master: the ``run_id`` of the master last seen ("" before the first probe).
    """

    durability: Durability
    acknowledged_writes: int
    unconfirmed_writes: int
    failovers: int
    unconfirmed_at_failover: int
    refused_writes: int
    master: str


class ReplicationWatch:
    """The counters behind :class:`ReplicationStats`, fed by the store's batches and probes."""

    def __init__(self, durability: Durability, where: str) -> None:
        self.durability = durability
        self.where = where
        self.acked = 0
        self.confirmed = 0
        self.failovers = 0
        self.lost_bound = 0
        self.refused = 0
        self.run_id = ""
        self.replicas_seen: int | None = None
        self.replicas_checked = float("-inf")
        self.next_probe = 0.0
        self._marks: deque[tuple[int, int]] = deque(maxlen=_MAX_MARKS)
        """(master offset at a probe, writes acknowledged by then), oldest first."""

    def stats(self, *nodes: ReplicationWatch) -> ReplicationStats:
        """These figures, plus those of ``nodes`` (a cluster's masters)."""
        every = (self, *nodes)
        acked = sum(w.acked for w in every)
        unconfirmed = sum(max(0, w.acked - w.confirmed) for w in every)
        return ReplicationStats(
            durability=self.durability,
            acknowledged_writes=acked,
            unconfirmed_writes=0 if self.durability == "replicated" else unconfirmed,
            failovers=sum(w.failovers for w in every),
            unconfirmed_at_failover=sum(w.lost_bound for w in every),
            refused_writes=sum(w.refused for w in every),
            master=",".join(w.run_id for w in every if w.run_id),
        )

    def retire(self, node: ReplicationWatch) -> None:
        """Cluster: ``node`` is no longer a master (it died or was demoted): a failover; its
        unconfirmed writes may be lost, and its figures are kept here."""
        node.failover("")
        self.acked += node.acked
        self.confirmed += node.acked
        self.failovers += node.failovers
        self.lost_bound += node.lost_bound
        self.refused += node.refused

    def wrote(self, count: int) -> None:
        """``count`` writes were acknowledged to callers."""
        self.acked += count
        if self.durability == "replicated":
            self.confirmed = self.acked

    def probe_due(self) -> bool:
        return time.monotonic() >= self.next_probe

    def probed(self, server: dict[str, Any], replication: dict[str, Any]) -> None:
        """Take one probe's ``INFO server`` and ``INFO replication`` of the master."""
        self.next_probe = time.monotonic() + PROBE_INTERVAL
        run_id = str(server.get("run_id", ""))
        if self.run_id and run_id and run_id != self.run_id:
            self.failover(run_id)
        elif run_id:
            self.run_id = run_id
        offset = int(replication.get("master_repl_offset", 0) or 0)
        replicas = [
            value
            for name, value in replication.items()
            if name.startswith("slave") and isinstance(value, dict)
        ]
        self.replicas_seen = int(replication.get("connected_slaves", len(replicas)) or 0)
        self.replicas_checked = time.monotonic()
        if replicas:
            reached = min(int(r.get("offset", 0) or 0) for r in replicas)
            while self._marks and self._marks[0][0] <= reached:
                self.confirmed = max(self.confirmed, self._marks.popleft()[1])
        self._marks.append((offset, self.acked))

    def failover(self, run_id: str) -> None:
        """A new master answers (``run_id``; "" when the old one is simply gone): count what
        the old one may have lost."""
        lost = max(0, self.acked - self.confirmed) if self.durability == "async" else 0
        self.failovers += 1
        self.lost_bound += lost
        self.confirmed = self.acked
        self._marks.clear()
        if run_id:
            logger.warning(
                "redis at %s: a new master (run_id %s, was %s) took over; %d acknowledged "
                "write(s) were not confirmed by a replica and may be lost (durability=%r)",
                self.where,
                run_id[:12],
                self.run_id[:12] or "?",
                lost,
                self.durability,
            )
        else:
            logger.warning(
                "redis at %s: this master (run_id %s) is no longer one (failover); %d "
                "acknowledged write(s) were not confirmed by a replica and may be lost "
                "(durability=%r)",
                self.where,
                self.run_id[:12] or "?",
                lost,
                self.durability,
            )
        self.run_id = run_id

    def no_replica_known(self) -> bool:
        """Replicated mode: the last check (under a second old) found no replica connected."""
        return (
            self.replicas_seen == 0
            and time.monotonic() - self.replicas_checked < REPLICA_CHECK_INTERVAL
        )
