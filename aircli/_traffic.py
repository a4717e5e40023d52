"""Realistic mixed demo traffic for ``air demo``: which tools, how often, with what arguments.

The plan is data (one table of scenarios for the demo server's tools); any tool the table does
not know gets arguments generated from its input schema, so the driver works with any server.
A few calls are made to fail on purpose (bad ids, bad URLs, invalid arguments, a failing tool)
and a few are slow, so the dashboard has errors and a latency tail to show.
"""

from __future__ import annotations

import asyncio
import random
import sys
import time
from collections import Counter
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, TextIO

__all__ = ["SKIP_TOOLS", "CallPlan", "DriveStats", "Progress", "drive", "plan_calls"]

Args = dict[str, Any]
ArgMaker = Callable[[random.Random], Args]

SKIP_TOOLS = frozenset({"confirm_deploy"})
"""Tools that need a human answer (elicitation); the demo leaves them alone."""

_WORDS = (
    *("latency", "budget", "cache", "layer", "meter", "store", "agent", "tool", "server"),
    *("request", "stream", "token", "dashboard", "rollup", "percentile", "histogram"),
    *("trace", "span", "export", "notes", "travel", "kyoto", "lisbon"),
)
_CITIES = ("Kyoto", "Lisbon", "Oslo", "Seoul", "Lima", "Nairobi", "Reykjavik", "Hanoi")
_UNITS = (("km", "mi"), ("mi", "km"), ("kg", "lb"), ("lb", "kg"), ("m", "ft"), ("ft", "m"))


def _text(rnd: random.Random, words: int) -> str:
    return " ".join(rnd.choice(_WORDS) for _ in range(words))


def _sentences(rnd: random.Random) -> str:
    return ". ".join(_text(rnd, rnd.randint(4, 12)).capitalize() for _ in range(rnd.randint(1, 6)))


def _get_user(rnd: random.Random) -> Args:
    return {"user_id": rnd.choice(("u1", "u2", "u1", "u2", "u1", "u9"))}  # u9: unknown


def _convert(rnd: random.Random) -> Args:
    src, dst = rnd.choice(_UNITS)
    if rnd.random() < 0.05:
        dst = "kg" if src in ("km", "mi") else "km"  # an impossible conversion
    return {"value": round(rnd.uniform(0.5, 500), 2), "from_unit": src, "to_unit": dst}


def _fetch(rnd: random.Random) -> Args:
    if rnd.random() < 0.08:
        return {"url": "ftp://files.example.com/data"}
    path = rnd.choice(("docs", "api/v1/items", "status", "blog/latest", "search?q=air"))
    return {"url": f"https://{rnd.choice(('example.com', 'api.example.org'))}/{path}"}


# tool -> (relative weight, argument maker). Weights give a plausible mix: many cheap calls,
# fewer model calls, rare agents and slow jobs.
SCENARIOS: Mapping[str, tuple[float, ArgMaker]] = {
    "ping": (14, lambda rnd: {}),
    "greet": (6, lambda rnd: {"name": rnd.choice(_CITIES), "excited": rnd.random() < 0.5}),
    "get_user": (16, _get_user),
    "search_notes": (10, lambda rnd: {"query": rnd.choice(_WORDS), "limit": rnd.randint(1, 5)}),
    "save_note": (6, lambda rnd: {"note_id": f"n{rnd.randint(1, 40)}", "text": _text(rnd, 8)}),
    "delete_note": (2, lambda rnd: {"note_id": f"n{rnd.randint(1, 60)}"}),
    "convert_units": (10, _convert),
    "summarize_text": (8, lambda rnd: {"text": _sentences(rnd)}),
    "fetch_url": (8, _fetch),
    "generate_text": (6, lambda rnd: {"prompt": _text(rnd, rnd.randint(5, 30))}),
    "plan_trip": (3, lambda rnd: {"destination": rnd.choice(_CITIES), "days": rnd.randint(2, 9)}),
    "slow_task": (0.6, lambda rnd: {"seconds": round(rnd.uniform(0.2, 1.2), 2)}),
    "always_fails": (0.8, lambda rnd: {}),
}
_INVALID_ARGS_RATE = 0.02


def _from_schema(schema: Mapping[str, Any], rnd: random.Random) -> Args:
    """Plausible arguments for an unknown tool: fill every required property by its type."""
    props: Mapping[str, Any] = schema.get("properties") or {}
    out: Args = {}
    for name in schema.get("required") or []:
        spec = props.get(name) or {}
        enum = spec.get("enum")
        kind = spec.get("type", "string")
        if enum:
            out[name] = rnd.choice(enum)
        elif kind == "integer":
            out[name] = rnd.randint(1, 10)
        elif kind == "number":
            out[name] = round(rnd.uniform(1, 100), 2)
        elif kind == "boolean":
            out[name] = rnd.random() < 0.5
        elif kind == "array":
            out[name] = []
        elif kind == "object":
            out[name] = {}
        else:
            out[name] = _text(rnd, 2)
    return out


@dataclass(frozen=True, slots=True, kw_only=True)
class CallPlan:
    """One planned call."""

    tool: str
    arguments: Args


class ToolInfo(Protocol):
    """What the driver needs from a listed tool (``mcp.types.Tool`` fits)."""

    name: str
    input_schema: dict[str, Any]


def plan_calls(tools: Sequence[ToolInfo], count: int, *, seed: int = 1) -> list[CallPlan]:
    """Pick ``count`` calls over ``tools`` with the scenario weights (unknown tools: weight 3).

    Returns:
        The plan, in call order.

    Raises:
        ValueError: no callable tool.
    """
    rnd = random.Random(seed)
    usable = [t for t in tools if t.name not in SKIP_TOOLS]
    if not usable:
        raise ValueError("the server lists no tool the demo can call")
    weights = [SCENARIOS[t.name][0] if t.name in SCENARIOS else 3.0 for t in usable]
    plan = []
    for tool in rnd.choices(usable, weights=weights, k=count):
        if tool.name in SCENARIOS:
            arguments = SCENARIOS[tool.name][1](rnd)
        else:
            arguments = _from_schema(tool.input_schema, rnd)
        if arguments and rnd.random() < _INVALID_ARGS_RATE:
            arguments = {}  # required fields missing: the server answers isError
        plan.append(CallPlan(tool=tool.name, arguments=arguments))
    return plan


class Progress:
    """A one-line progress bar on a text stream (a line per 10 % when it is not a terminal)."""

    def __init__(self, total: int, *, stream: TextIO | None = None, width: int = 32) -> None:
        self.total = max(1, total)
        self.stream = stream or sys.stderr
        self.width = width
        self.started = time.monotonic()
        self._tty = self.stream.isatty()
        self._last_draw = 0.0
        self._last_decile = -1
        self._last_done = -1

    def update(self, done: int, errors: int, *, final: bool = False) -> None:
        """Redraw (at most ~10 times a second) for ``done`` calls and ``errors`` failures."""
        now = time.monotonic()
        decile = done * 10 // self.total
        if self._tty:
            if not final and now - self._last_draw < 0.1:
                return
        elif decile == self._last_decile and (not final or done == self._last_done):
            return
        self._last_draw, self._last_decile, self._last_done = now, decile, done
        filled = int(self.width * done / self.total)
        rate = done / max(now - self.started, 1e-6)
        line = (
            f"  [{'█' * filled}{'░' * (self.width - filled)}] {done:>6,}/{self.total:,} calls"
            f"  {rate:6.0f}/s  {errors:,} errors"
        )
        end = "\n" if final or not self._tty else ""
        self.stream.write(("\r" if self._tty else "") + line + end)
        self.stream.flush()


@dataclass(slots=True)
class DriveStats:
    """What the driver saw: calls made, failures (isError or protocol error), per tool."""

    calls: int = 0
    errors: int = 0
    by_tool: Counter[str] = field(default_factory=Counter)
    seconds: float = 0.0


CallTool = Callable[[str, Args], Awaitable[Any]]


async def drive(
    call_tool: CallTool,
    plan: Sequence[CallPlan],
    *,
    concurrency: int = 8,
    progress: Progress | None = None,
) -> DriveStats:
    """Run ``plan`` through ``call_tool`` with ``concurrency`` calls in flight.

    A result with ``is_error`` and an exception from ``call_tool`` both count as an error;
    neither stops the run (cancellation does).
    """
    stats = DriveStats()
    started = time.monotonic()
    position = 0

    async def worker() -> None:
        nonlocal position
        while position < len(plan):
            item = plan[position]
            position += 1
            try:
                result = await call_tool(item.tool, item.arguments)
                failed = bool(getattr(result, "is_error", False))
            except asyncio.CancelledError:
                raise
            except Exception:
                failed = True
            stats.calls += 1
            stats.errors += failed
            stats.by_tool[item.tool] += 1
            if progress is not None:
                progress.update(stats.calls, stats.errors)

    async with asyncio.TaskGroup() as group:
        for _ in range(max(1, min(concurrency, len(plan)))):
            group.create_task(worker())
    stats.seconds = time.monotonic() - started
    if progress is not None:
        progress.update(stats.calls, stats.errors, final=True)
    return stats
