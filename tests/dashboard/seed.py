"""Deterministic call-log fixtures for the dashboard tests, written through a real Store."""

from __future__ import annotations

import random
from typing import Any

from airmeter import CallRecord, Layer, StoreSink
from airstore import Store

# (tool, layer, typical latency ms, failure probability)
TOOLS: tuple[tuple[str, Layer, float, float], ...] = (
    ("health", Layer.L1, 0.2, 0.0),
    ("get_user", Layer.L2, 2.0, 0.02),
    ("search_docs", Layer.L2, 8.0, 0.05),
    ("format_markdown", Layer.L3, 4.0, 0.0),
    ("summarize_stats", Layer.L4, 30.0, 0.03),
    ("fetch_url", Layer.L5, 120.0, 0.15),
    ("generate_reply", Layer.L6, 900.0, 0.08),
    ("plan_trip", Layer.L7, 2500.0, 0.2),
)
SERVERS = ("demo", "billing")
ERROR_TYPES = ("tool_error", "-32602", "TimeoutError", "cancelled", "budget_exceeded")


def make_records(*, now_ms: int, count: int, span_ms: int, seed: int = 7) -> list[dict[str, Any]]:
    """``count`` call-log entries spread over ``[now - span, now)``, oldest first."""
    rnd = random.Random(seed)
    out = []
    for i in range(count):
        tool, layer, typical, fail = TOOLS[rnd.randrange(len(TOOLS))]
        ok = rnd.random() >= fail
        record = CallRecord(
            ts_ms=now_ms - span_ms + rnd.randrange(span_ms),
            server=SERVERS[rnd.randrange(2)],
            tool=tool,
            layer=layer,
            latency_ms=round(rnd.lognormvariate(0, 0.8) * typical, 3),
            ok=ok,
            error_type=None if ok else ERROR_TYPES[i % len(ERROR_TYPES)],
            error_message=None if ok else f"{tool} failed (#{i})",
            request_id=f"req-{i}",
            cost=0.5 if (layer == Layer.L6 and rnd.random() < 0.3) else None,
        )
        out.append(record.to_log())
    out.sort(key=lambda e: e["_ts"])
    return out


async def write_records(store: Store, records: list[dict[str, Any]]) -> None:
    """Record every call the way a metered server does: airmeter's StoreSink (log + rollups)."""
    sink = StoreSink(store, writer="seed", rollup_ttl=None)
    for i in range(0, len(records), 500):
        await sink.write([CallRecord.from_log(e) for e in records[i : i + 500]])
    await sink.close()
