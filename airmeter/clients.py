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

import dataclasses
import time
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Final

from airmeter.aggregate import aggregate
from airmeter.buckets import Bound, to_ms
from airmeter.errors import MeterConfigError
from airmeter.layers import LAYERS, Layer, parse_layer
from airmeter.record import CALLS_NAMESPACE, CallRecord
from airmeter.rollups import RollupBook
from airmeter.snapshot_types import Snapshot
from airstore.types import JSONValue, Store

__all__ = [
    "MAX_CLIENT_READ",
    "ClientRow",
    "ClientUsage",
    "client_key",
    "client_snapshot",
    "client_usage",
]

MAX_CLIENT_READ: Final = 100_000
"""Newest calls :func:`client_usage` reads at most (``truncated`` says when there were more)."""


def client_key(client_id: str | None, auth: str | None) -> str:
    """The name a call is counted under: its ``client_id``, else ``(none)``/``(token)``.

    Names in parentheses are air's own (``(none)``, ``(token)``, the Prometheus ``(other)``):
    a client id starting with ``(`` or ``\\`` is shown with a ``\\`` before it, so no client
    shares a row, a budget or a series with callers it is not.
    """
    if client_id:
        return "\\" + client_id if client_id[0] in "(\\" else client_id
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
        """The JSON form (every field, as named)."""
        return dataclasses.asdict(self)


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


_WEIGHT_OF: dict[object, float] = {
    **{info.code: float(info.weight) for info in LAYERS},
    **{info.level: float(info.weight) for info in LAYERS},
}


def summarize(entries: Iterable[dict[str, Any]], *, truncated: bool = False) -> ClientUsage:
    """Sum call-log entries per client (see :class:`ClientUsage`).

    Reads only the fields it sums from each entry (building whole records costs ~8x more:
    the dashboard refreshes this panel); an entry that is not a call record is skipped.
    """
    sums: dict[str, _Sums] = {}
    subjects: set[str] = set()
    count = 0
    for entry in entries:
        try:
            tool = entry["tool"]
            client, auth, subject = entry.get("client_id"), entry.get("auth"), entry.get("subject")
            cost = entry.get("cost")
            cost = _WEIGHT_OF[entry.get("layer", "L4")] if cost is None else float(cost)
            latency = float(entry.get("latency_ms", 0.0))
            ok = entry.get("ok", True) is not False
        except (KeyError, TypeError, ValueError, AttributeError):  # not a call record: skipped
            continue
        count += 1
        key = client_key(client if isinstance(client, str) else None,
                         auth if isinstance(auth, str) else None)  # fmt: skip
        one = sums.get(key)
        if one is None:
            one = sums[key] = _Sums()
        one.calls += 1
        one.errors += not ok
        one.cost += cost
        one.latencies.append(latency)
        one.tools.add(str(tool))
        one.auths.add(auth if isinstance(auth, str) else "none")
        if isinstance(subject, str):
            one.subjects.add(subject)
            subjects.add(subject)
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


def _filter(
    tool: str | None,
    layer: Layer | int | str | None,
    server: str | None,
    instance: str | None,
    client: str | None = None,
) -> dict[str, JSONValue]:
    flt: dict[str, JSONValue] = {}
    for field, value in (("tool", tool), ("server", server), ("instance_id", instance),
                         ("client_id", client)):  # fmt: skip
        if value is not None:
            flt[field] = value
    if layer is not None:
        try:
            flt["layer"] = parse_layer(layer).code
        except ValueError as exc:
            raise MeterConfigError(str(exc)) from exc
    return flt


def _parsed(entries: Iterable[dict[str, Any]]) -> Iterable[CallRecord]:
    for entry in entries:
        try:
            yield CallRecord.from_log(entry)
        except (KeyError, TypeError, ValueError):  # not a call record: skipped
            continue


async def client_snapshot(
    store: Store,
    client: str,
    *,
    since: Bound = None,
    until: Bound = None,
    tool: str | None = None,
    layer: Layer | int | str | None = None,
    server: str | None = None,
    instance: str | None = None,
    bucket_ms: int | None = None,
    now_ms: int | None = None,
    limit: int = MAX_CLIENT_READ,
) -> tuple[Snapshot, bool]:
    """A :class:`Snapshot` of one client's calls (its ``client_id``), as
    :func:`airmeter.snapshot` gives for every call: summed from the raw log, since the rollups
    hold no clients.

    Returns:
        The snapshot, and whether the window held more than ``limit`` of its calls (only the
        newest were summed).

    Raises:
        MeterConfigError: a bad layer, bound or limit.
        airstore.AirstoreError: the store cannot be read.
    """
    if not isinstance(limit, int) or not 1 <= limit <= MAX_CLIENT_READ:
        raise MeterConfigError(f"limit must be 1…{MAX_CLIENT_READ}, got {limit!r}")
    now = int(time.time() * 1000) if now_ms is None else now_ms
    since_ms, until_ms = to_ms(since, now), to_ms(until, now)
    entries = await store.query(
        CALLS_NAMESPACE, limit=limit + 1, since=since_ms, until=until_ms,
        filter=_filter(tool, layer, server, instance, client),
    )  # fmt: skip
    book = RollupBook()
    for rec in _parsed(entries[:limit]):
        book.add(rec)
    snap = aggregate(book.groups(), since_ms=since_ms, until_ms=until_ms, bucket_ms=bucket_ms,
                     now_ms=now)  # fmt: skip
    return snap, len(entries) > limit


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
    flt = _filter(tool, layer, server, instance)
    now = int(time.time() * 1000) if now_ms is None else now_ms
    entries = await store.query(
        CALLS_NAMESPACE,
        limit=limit + 1,
        since=to_ms(since, now),
        until=to_ms(until, now),
        filter=flt or None,
    )
    return summarize(entries[:limit], truncated=len(entries) > limit)
