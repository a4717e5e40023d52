"""Synthetic call records and independent computations to check snapshots against."""

from __future__ import annotations

import math
import random
from typing import Any

from airmeter import CallRecord, Layer

TOOLS: list[tuple[str, Layer]] = [
    ("health", Layer.L1),
    ("get_user", Layer.L2),
    ("format_date", Layer.L3),
    ("summarize_text", Layer.L4),
    ("fetch_url", Layer.L5),
    ("generate_reply", Layer.L6),
    ("run_agent", Layer.L7),
]
T0 = 1_800_000_000_000  # a minute boundary (epoch ms)


def make_records(
    n: int,
    *,
    seed: int = 7,
    minutes: int = 30,
    start_ms: int = T0,
    servers: tuple[str, ...] = ("demo",),
    instances: tuple[str, ...] = ("i-1",),
) -> list[CallRecord]:
    """``n`` records spread over ``minutes`` with varied latencies, errors and costs."""
    rng = random.Random(seed)
    out = []
    for i in range(n):
        tool, layer = TOOLS[rng.randrange(len(TOOLS))]
        ok = rng.random() > 0.1
        latency = math.exp(rng.gauss(math.log(2.0 * int(layer)), 0.9))
        error_type = None if ok else rng.choice(["tool_error", "-32602", "TimeoutError"])
        out.append(
            CallRecord(
                ts_ms=start_ms + rng.randrange(minutes * 60_000),
                server=rng.choice(servers),
                instance_id=rng.choice(instances),
                tool=tool,
                layer=layer,
                latency_ms=round(latency, 4),
                ok=ok,
                error_type=error_type,
                request_id=str(i),
                tokens_in=rng.randrange(100) if layer is Layer.L6 else None,
                cost=rng.random() * 3 if layer is Layer.L6 else None,
            )
        )
    return out


def exact_percentile(values: list[float], q: float) -> float:
    """Nearest-rank percentile of raw values."""
    ordered = sorted(values)
    rank = max(1, math.ceil(q / 100 * len(ordered)))
    return ordered[rank - 1]


def close(a: float | None, b: float, rel: float = 0.025) -> bool:
    """Whether a histogram percentile is within ``rel`` of the exact one."""
    return a is not None and abs(a - b) <= rel * b + 1e-9


def independent(entries: list[dict[str, Any]]) -> dict[str, Any]:
    """Totals straight from raw log entries, without any airmeter code."""
    lat = [float(e["latency_ms"]) for e in entries]
    errors = [e for e in entries if not e["ok"]]
    by_type: dict[str, int] = {}
    for e in errors:
        by_type[e["error_type"]] = by_type.get(e["error_type"], 0) + 1
    by_tool: dict[str, list[dict[str, Any]]] = {}
    for e in entries:
        by_tool.setdefault(e["tool"], []).append(e)
    by_layer: dict[str, int] = {}
    for e in entries:
        by_layer[e["layer"]] = by_layer.get(e["layer"], 0) + 1
    weights = {"L1": 1, "L2": 3, "L3": 5, "L4": 10, "L5": 20, "L6": 50, "L7": 100}
    cost = sum(e["cost"] if e.get("cost") is not None else weights[e["layer"]] for e in entries)
    return {
        "total": len(entries),
        "errors": len(errors),
        "by_type": by_type,
        "p50": exact_percentile(lat, 50) if lat else None,
        "p95": exact_percentile(lat, 95) if lat else None,
        "p99": exact_percentile(lat, 99) if lat else None,
        "by_tool": by_tool,
        "by_layer": by_layer,
        "cost": cost,
    }


class Clock:
    """Seconds since the epoch, advanced by hand."""

    def __init__(self, start: float) -> None:
        self.now = start

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds
