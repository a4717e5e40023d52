"""Picking a replica: round_robin, least_outstanding, p2c_latency, session_hash."""

from __future__ import annotations

import hashlib
import itertools
import random
from collections.abc import Collection, Sequence

from airgateway.config import STRATEGIES
from airgateway.replica import Replica

__all__ = ["Balancer"]


class Balancer:
    """Picks one healthy replica of a server for each call.

    - ``round_robin``: in turn.
    - ``least_outstanding``: the fewest calls in flight (ties in turn).
    - ``p2c_latency``: of two random replicas, the lower ``latency * (in flight + 1)``.
    - ``session_hash``: the same replica for the same session key (rendezvous hashing, so a
      replica leaving moves only its own sessions); calls without a key go least_outstanding.

    Args:
        strategy: one of :data:`~airgateway.config.STRATEGIES`.
        seed: seeds ``p2c_latency``'s random choice (tests).

    Raises:
        ValueError: an unknown strategy.
    """

    def __init__(self, strategy: str, *, seed: int | None = None) -> None:
        if strategy not in STRATEGIES:
            raise ValueError(f"unknown strategy {strategy!r}")
        self.strategy = strategy
        self._turn = itertools.count()
        self._random = random.Random(seed)

    def pick(
        self,
        replicas: Sequence[Replica],
        *,
        exclude: Collection[Replica] = (),
        session_key: str | None = None,
    ) -> Replica | None:
        """The replica for the next call, or ``None`` when no healthy one is left."""
        pool = [r for r in replicas if r.healthy and r not in exclude]
        if not pool:
            return None
        if len(pool) == 1:
            return pool[0]
        strategy = self.strategy
        if strategy == "round_robin":
            return pool[next(self._turn) % len(pool)]
        if strategy == "p2c_latency":
            a, b = self._random.sample(pool, 2)
            return a if _load(a) <= _load(b) else b
        if strategy == "session_hash" and session_key is not None:
            return max(pool, key=lambda r: _score(session_key, r.instance))
        least = min(r.in_flight for r in pool)
        ties = [r for r in pool if r.in_flight == least]
        return ties[next(self._turn) % len(ties)]


def _load(replica: Replica) -> float:
    latency = replica.latency_ms if replica.latency_ms is not None else 0.0
    return (latency + 0.001) * (replica.in_flight + 1)


def _score(key: str, instance: str) -> int:
    digest = hashlib.blake2b(f"{key}\0{instance}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big")
