"""A gateway's hops: what a proxied call's record says when the upstream metered it too.

A gateway in front of a metered upstream, both metering into one store, counted every call
twice. Now the gateway tells the upstream it is a hop (``params._meta`` carries
:data:`HOP_META_KEY` with the gateway's call id); an upstream that meters the call answers with
:data:`METERED_META_KEY` in the result's ``_meta`` (its record's ``call_id``, its own time and
its store's identity, :func:`store_identity`: a digest, never the URL, which may carry a
password). When that is the gateway's own store, the gateway records a hop (``kind:
"hop"``, linked to the upstream's record by that call id) in
:data:`~airmeter.record.HOPS_NAMESPACE` instead of a second call: calls are counted once, and
:func:`hop_summary` gives the gateway's added latency as a figure of its own. An upstream that
does not answer so (not metered, or another library) leaves the gateway's record a call, as
before: so does one metering into another store (each store counts the call once).
"""

from __future__ import annotations

import functools
import hashlib
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from airmeter.record import HOPS_NAMESPACE, CallRecord

if TYPE_CHECKING:  # servers import this module for its keys: start-up stays light
    from airmeter.buckets import Bound
    from airstore.types import Store

__all__ = [
    "HOP_META_KEY",
    "MAX_HOPS_READ",
    "METERED_META_KEY",
    "HopFigures",
    "HopSummary",
    "hop_summary",
    "metered_answer",
    "same_store",
    "store_identity",
]

HOP_META_KEY: Final = "io.airmcp/hop"
"""``params._meta`` key a gateway sends upstream: its own call id for this hop."""
METERED_META_KEY: Final = "io.airmcp/metered"
"""Result ``_meta`` key of a metered upstream's answer to a hop:
``{"callId": …, "latencyMs": …, "store": store_identity(url)}``."""
MAX_HOPS_READ: Final = 100_000
"""Newest hops :func:`hop_summary` reads at most (bounded like every reader)."""


def same_store(a: str | None, b: str | None) -> bool:
    """Whether two store URLs name one store (``file://`` paths compared resolved)."""
    if a is None or b is None:
        return False
    if a.startswith("file://") and b.startswith("file://"):
        return (
            Path(a.removeprefix("file://")).resolve() == Path(b.removeprefix("file://")).resolve()
        )
    return a == b


@functools.lru_cache(maxsize=64)  # asked per call, of the same few URLs
def store_identity(url: str | None) -> str | None:
    """What a hop's answer says of the store the call was metered into: a SHA-256 digest of
    its URL with any user info (a password), query and fragment removed (``file://`` paths
    resolved), so two URLs naming one store give one identity and nothing of the URL's
    secrets ever reaches a client."""
    if url is None:
        return None
    if url.startswith("file://"):
        named = f"file://{Path(url.removeprefix('file://')).resolve()}"
    else:
        from urllib.parse import urlsplit, urlunsplit

        parts = urlsplit(url)
        host = parts.netloc.rpartition("@")[2]
        named = urlunsplit((parts.scheme, host, parts.path, "", ""))
    return "sha256:" + hashlib.sha256(named.encode("utf-8")).hexdigest()


def metered_answer(
    result: Mapping[str, Any] | None, store_url: str | None
) -> tuple[str | None, float | None] | None:
    """``(upstream call id, upstream latency in ms)`` when ``result`` is the answer to a hop of
    an upstream that metered the call into the store at ``store_url`` (the answer names its
    :func:`store_identity`), else ``None``."""
    if not isinstance(result, Mapping):
        return None
    meta = result.get("_meta")
    said = meta.get(METERED_META_KEY) if isinstance(meta, Mapping) else None
    if not isinstance(said, Mapping):
        return None
    mine = store_identity(store_url)
    if mine is None or said.get("store") != mine:
        return None
    call_id = said.get("callId")
    latency = said.get("latencyMs")
    return (
        call_id if isinstance(call_id, str) else None,
        float(latency) if isinstance(latency, int | float) and latency >= 0 else None,
    )


@dataclass(frozen=True, slots=True, kw_only=True)
class HopFigures:
    """The hops of one server through the gateway: how many, and the latency it added."""

    server: str
    hops: int
    added_p50_ms: float | None
    added_p95_ms: float | None
    added_max_ms: float | None


@dataclass(frozen=True, slots=True, kw_only=True)
class HopSummary:
    """Every server's hops in a window (newest :data:`MAX_HOPS_READ` at most)."""

    hops: int = 0
    servers: tuple[HopFigures, ...] = field(default_factory=tuple)

    def to_dict(self) -> dict[str, Any]:
        """The JSON form (``air meter report --format json``'s ``gateway`` key)."""
        return {
            "hops": self.hops,
            "servers": [
                {
                    "server": s.server,
                    "hops": s.hops,
                    "added_p50_ms": s.added_p50_ms,
                    "added_p95_ms": s.added_p95_ms,
                    "added_max_ms": s.added_max_ms,
                }
                for s in self.servers
            ],
        }


def _rank(values: list[float], q: float) -> float | None:
    if not values:
        return None
    return values[min(len(values) - 1, int(q * len(values)))]


async def hop_summary(
    store: Store, *, since: Bound = None, server: str | None = None, now_ms: int | None = None
) -> HopSummary:
    """The gateway's hops in a window, per upstream server, with the latency the gateway
    added (a hop's time minus the upstream's own).

    Raises:
        airstore.AirstoreError: the store cannot be read.
    """
    from airmeter.buckets import to_ms

    now = int(time.time() * 1000) if now_ms is None else now_ms
    entries = await store.query(
        HOPS_NAMESPACE,
        limit=MAX_HOPS_READ,
        since=to_ms(since, now),
        filter={"server": server} if server is not None else None,
    )
    added: dict[str, list[float]] = {}
    count = 0
    for entry in entries:
        try:
            rec = CallRecord.from_log(entry)
        except (KeyError, TypeError, ValueError):
            continue
        count += 1
        upstream = rec.upstream_latency_ms
        extra = rec.latency_ms if upstream is None else max(0.0, rec.latency_ms - upstream)
        added.setdefault(rec.server, []).append(extra)
    rows = []
    for name in sorted(added):
        values = sorted(added[name])
        rows.append(
            HopFigures(
                server=name,
                hops=len(values),
                added_p50_ms=_rank(values, 0.5),
                added_p95_ms=_rank(values, 0.95),
                added_max_ms=values[-1],
            )
        )
    return HopSummary(hops=count, servers=tuple(rows))
