"""Health shared between gateway processes through the store.

A gateway that takes a network replica (HTTP or SSE) out of its pool after its own checks
failed leaves a mark in the store (namespace ``gateway.health``, one key per replica and
gateway, renewed at every failed check, expiring after :data:`MARK_TTL_CHECKS` check intervals
if that gateway stops renewing it) and removes the mark when its own check succeeds again.
Every gateway sharing the store reads the marks every :data:`POLL_S` seconds at most: a replica
another gateway has marked is taken out of its pool too (state ``down``, ``last_error`` naming
that gateway's error) until no mark is left, then its own check brings it back. So with a
15-second health interval, a replica that died leaves every gateway's pool a second or so after
the first gateway noticed, not up to 15 seconds later in each. Stdio replicas are each
gateway's own child processes, and a replica reached with ``headers`` answers according to
the credentials each gateway holds: neither is ever shared. A store that cannot be reached only
stops the sharing (logged); each gateway's own checks go on.
"""

from __future__ import annotations

import logging
import secrets
from collections.abc import Sequence
from typing import Any

from airgateway.replica import Replica
from airstore.errors import AirstoreError
from airstore.types import Store

__all__ = ["HEALTH_NAMESPACE", "MARK_TTL_CHECKS", "POLL_S", "SharedHealth", "replica_key"]

logger = logging.getLogger(__name__)

HEALTH_NAMESPACE = "gateway.health"
MARK_TTL_CHECKS = 3
"""A mark lives this many health intervals unless its gateway renews it."""
POLL_S = 1.0
"""The longest time between two readings of the other gateways' marks."""
_SEP = "\x1f"


def replica_key(replica: Replica) -> str:
    """The store key prefix naming a network replica the same way in every gateway."""
    return f"{replica.name}{_SEP}{replica.config.target}{_SEP}"


class SharedHealth:
    """This gateway's side of the shared marks (see the module docstring).

    Args:
        store: the store the gateways share.
        interval_s: the health interval (marks expire after :data:`MARK_TTL_CHECKS` of them).
        me: this gateway's id (a random one when not given).
    """

    def __init__(self, store: Store, *, interval_s: float, me: str | None = None) -> None:
        self.store = store
        self.me = me or secrets.token_hex(6)
        """This gateway process's id in the marks."""
        self.ttl = max(1.0, interval_s * MARK_TTL_CHECKS)
        self._marked: set[str] = set()

    @staticmethod
    def shared(replica: Replica) -> bool:
        """Whether the replica's health is shared: a network upstream (not a child process)
        reached without ``headers``, ``oauth`` or ``send_caller`` (one reached with credentials,
        or told who calls, may answer this gateway and refuse another: its health is this
        gateway's own)."""
        config = replica.config
        return (
            config.transport != "stdio"
            and not config.headers
            and config.oauth is None
            and not config.send_caller
        )

    async def mark(self, replica: Replica, error: str) -> None:
        """Say (or say again) that this gateway's checks find the replica down (unless it
        left the pool for good: a check that raced its drop)."""
        if replica.retired:
            return
        key = replica_key(replica) + self.me
        try:
            await self.store.set(HEALTH_NAMESPACE, key, {"error": error}, ttl=self.ttl)
        except AirstoreError as exc:
            logger.warning("could not share %s's health: %s", replica.label, exc)
            return
        self._marked.add(key)
        if replica.retired:  # dropped while the mark was being written
            await self.forget(replica)

    async def clear(self, replica: Replica) -> None:
        """Withdraw this gateway's mark (its own check found the replica up)."""
        key = replica_key(replica) + self.me
        if key not in self._marked:
            return
        try:
            await self.store.delete(HEALTH_NAMESPACE, key)
        except AirstoreError as exc:
            logger.warning("could not share %s's health: %s", replica.label, exc)
            return
        self._marked.discard(key)

    async def forget(self, replica: Replica) -> None:
        """The replica left this gateway's pool for good: withdraw its mark, forget its key
        (and write none for it any more)."""
        replica.retired = True
        key = replica_key(replica) + self.me
        if key not in self._marked:
            return
        self._marked.discard(key)
        try:
            await self.store.delete(HEALTH_NAMESPACE, key)
        except AirstoreError as exc:  # the mark expires on its own
            logger.warning("could not share %s's health: %s", replica.label, exc)

    async def foreign(self, replicas: Sequence[Replica]) -> dict[str, str]:
        """The replicas other gateways hold down now: ``{label: their error}``."""
        try:
            entries = await self.store.entries(HEALTH_NAMESPACE)
        except AirstoreError as exc:
            logger.warning("could not read the shared health: %s", exc)
            return {}
        by_prefix = {replica_key(r): r.label for r in replicas if self.shared(r)}
        out: dict[str, str] = {}
        for key, value in entries:
            prefix, _, owner = key.rpartition(_SEP)
            label = by_prefix.get(prefix + _SEP)
            if label is not None and owner != self.me:
                out[label] = _error_of(value)
        return out


def _error_of(value: Any) -> str:
    error = value.get("error") if isinstance(value, dict) else None
    return str(error) if error else "down"
