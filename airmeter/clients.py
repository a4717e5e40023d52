"""Who called: calls, errors, cost and latency per OAuth client, from the call log.

Every record of an authorized call carries ``auth``, ``client_id`` and ``subject`` (a keyed
pseudonym unless kept raw). :func:`client_usage` reads the newest records of a window (at most
:data:`MAX_CLIENT_READ`, like every reader bounded) and sums them per client: ``air meter report
--by client`` and the dashboard's top clients show it. Calls without a client are grouped by how
they were admitted: ``(none)`` (stdio, an open HTTP server) or ``(token)`` (a static token).
Rollups do not hold clients (one row per client would let callers grow them), so a window older
than the raw log's retention has no clients to show.
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Final

from airmeter.buckets import Bound, to_ms
from airmeter.errors import MeterConfigError
from airmeter.layers import LAYERS, Layer, parse_layer
from airmeter.record import CALLS_NAMESPACE, CallRecord
from airstore.types import JSONValue, Store

__all__ = ["MAX_CLIENT_READ", "ClientRow", "ClientUsage", "client_key", "client_usage"]

MAX_CLIENT_READ: Final = 100_000
"""Newest calls :func:`client_usage` reads at most (``truncated`` says when there were more)."""

_WEIGHTS = tuple(info.weight for info in LAYERS)


def client_key(client_id: str | None, auth: str | None) -> str:
    """The name a call is counted under: its ``client_id``, else ``(none)``/``(token)``."""
    if client_id:
        return client_id
    return f"({auth or 'none'})"


@dataclass(frozen=True, slots=True, kw_only=True)
class ClientRow:
    """One client's calls in the window.

    Attributes:
        client: the client id (``(none)``/``(token)`` for calls without one).
        auth: how its calls were admitted (``oauth``, ``token``, ``none``; ``mixed``).
        calls, errors: counts; ``error_rate`` their ratio.
        cost: summed like the snapshot's (a record's own cost, else its layer's weight).
        p50_ms, p95_ms: latency ranks of its calls.
        subjects: distinct subjects (pseudonyms) that called as this client.
        tools: distinct tools it called.
    """

    client: str
    auth: str
    calls: int
    errors: int
    error_rate: float
    cost: float
    p50_ms: float | None
    p95_ms: float | None
    subjects: int
    tools: int

    def to_dict(self) -> dict[str, Any]:
        """The JSON form."""
        return {
            "client": self.client,
            "auth": self.auth,
            "calls": self.calls,
            "errors": self.errors,
            "error_rate": self.error_rate,
            "cost": self.cost,
            "p50_ms": self.p50_ms,
            "p95_ms": self.p95_ms,
            "subjects": self.subjects,
            "tools": self.tools,
        }


@dataclass(frozen=True, slots=True, kw_only=True)
class ClientUsage:
    """Per-client usage of a window, the busiest client first.

    Attributes:
        clients: one row per client.
        calls: calls read; ``truncated``: the window held more than :data:`MAX_CLIENT_READ`
            (only the newest were read).
        subjects: distinct subjects over all clients.
    """

    clients: tuple[ClientRow, ...]
    calls: int
    subjects: int
    truncated: bool

    def to_dict(self) -> dict[str, Any]:
        """The JSON form."""
        return {
            "calls": self.calls,
            "subjects": self.subjects,
            "truncated": self.truncated,
            "clients": [row.to_dict() for row in self.clients],
        }


class _Sums:
    __slots__ = ("auths", "calls", "cost", "errors", "latencies", "subjects", "tools")

    def __init__(self) -> None:
        self.calls = 0
        self.errors = 0
        self.cost = 0.0
        self.latencies: list[float] = []
        self.subjects: set[str] = set()
        self.tools: set[str] = set()
        self.auths: set[str] = set()


def _rank(values: list[float], q: float) -> float | None:
    if not values:
        return None
    return values[min(len(values) - 1, int(q * len(values)))]


def summarize(records: Iterable[CallRecord], *, truncated: bool = False) -> ClientUsage:
    """Sum ``records`` per client (see :class:`ClientUsage`)."""
    sums: dict[str, _Sums] = {}
    subjects: set[str] = set()
    count = 0
    for rec in records:
        count += 1
        one = sums.get(key := client_key(rec.client_id, rec.auth))
        if one is None:
            one = sums[key] = _Sums()
        one.calls += 1
        one.errors += not rec.ok
        one.cost += _WEIGHTS[int(rec.layer) - 1] if rec.cost is None else rec.cost
        one.latencies.append(rec.latency_ms)
        one.tools.add(rec.tool)
        one.auths.add(rec.auth or "none")
        if rec.subject is not None:
            one.subjects.add(rec.subject)
            subjects.add(rec.subject)
    rows = []
    for key, one in sums.items():
        one.latencies.sort()
        rows.append(
            ClientRow(
                client=key,
                auth=next(iter(one.auths)) if len(one.auths) == 1 else "mixed",
                calls=one.calls,
                errors=one.errors,
                error_rate=one.errors / one.calls,
                cost=one.cost,
                p50_ms=_rank(one.latencies, 0.5),
                p95_ms=_rank(one.latencies, 0.95),
                subjects=len(one.subjects),
                tools=len(one.tools),
            )
        )
    rows.sort(key=lambda row: (-row.calls, row.client))
    return ClientUsage(
        clients=tuple(rows), calls=count, subjects=len(subjects), truncated=truncated
    )


async def client_usage(
    store: Store,
    *,
    since: Bound = None,
    until: Bound = None,
    tool: str | None = None,
    layer: Layer | int | str | None = None,
    server: str | None = None,
    instance: str | None = None,
    now_ms: int | None = None,
    limit: int = MAX_CLIENT_READ,
) -> ClientUsage:
    """Calls, errors, cost, latency and subjects per client in a window.

    Args:
        store: an opened store (read-only is enough).
        since, until: the window (as :func:`airmeter.snapshot`).
        tool, layer, server, instance: only calls of these.
        now_ms: the clock for ``timedelta`` bounds (tests).
        limit: the most calls read (1 … :data:`MAX_CLIENT_READ`), newest first.

    Returns:
        The :class:`ClientUsage`.

    Raises:
        MeterConfigError: a bad layer or limit.
        airstore.AirstoreError: the store cannot be read.
    """
    if not isinstance(limit, int) or not 1 <= limit <= MAX_CLIENT_READ:
        raise MeterConfigError(f"limit must be 1…{MAX_CLIENT_READ}, got {limit!r}")
    flt: dict[str, JSONValue] = {}
    for field, value in (("tool", tool), ("server", server), ("instance_id", instance)):
        if value is not None:
            flt[field] = value
    if layer is not None:
        try:
            flt["layer"] = parse_layer(layer).code
        except ValueError as exc:
            raise MeterConfigError(str(exc)) from exc
    now = int(time.time() * 1000) if now_ms is None else now_ms
    entries = await store.query(
        CALLS_NAMESPACE,
        limit=limit + 1,
        since=to_ms(since, now),
        until=to_ms(until, now),
        filter=flt or None,
    )
    truncated = len(entries) > limit

    def records() -> Iterable[CallRecord]:
        for entry in entries[:limit]:
            try:
                yield CallRecord.from_log(entry)
            except (KeyError, TypeError, ValueError):  # not a call record: skipped
                continue

    return summarize(records(), truncated=truncated)
