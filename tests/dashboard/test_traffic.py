"""The demo's traffic plan and driver (the end-to-end demo test drives a real server)."""

from __future__ import annotations

import asyncio
import io
from dataclasses import dataclass, field
from typing import Any

import pytest

from aircli._traffic import SCENARIOS, SKIP_TOOLS, Progress, drive, plan_calls


@dataclass
class FakeTool:
    name: str
    input_schema: dict[str, Any] = field(default_factory=lambda: {"type": "object"})


def _tools() -> list[FakeTool]:
    tools = [FakeTool(name) for name in SCENARIOS]
    tools.append(FakeTool("confirm_deploy"))
    tools.append(
        FakeTool(
            "lookup_weather",
            {
                "type": "object",
                "properties": {
                    "city": {"type": "string"},
                    "days": {"type": "integer"},
                    "unit": {"type": "string", "enum": ["c", "f"]},
                    "note": {"type": "string"},
                },
                "required": ["city", "days", "unit"],
            },
        )
    )
    return tools


def test_plan_covers_every_callable_tool_and_skips_elicitation() -> None:
    plan = plan_calls(_tools(), 3000, seed=3)
    assert len(plan) == 3000
    called = {p.tool for p in plan}
    assert called == (set(SCENARIOS) | {"lookup_weather"}) - SKIP_TOOLS
    assert plan == plan_calls(_tools(), 3000, seed=3)
    assert plan != plan_calls(_tools(), 3000, seed=4)


def test_unknown_tools_get_their_required_arguments_from_the_schema() -> None:
    plan = [p for p in plan_calls(_tools(), 3000, seed=5) if p.tool == "lookup_weather"]
    full = [p.arguments for p in plan if p.arguments]
    assert full, "most calls carry arguments"
    for args in full:
        assert set(args) == {"city", "days", "unit"}
        assert isinstance(args["days"], int)
        assert args["unit"] in ("c", "f")


def test_plan_has_a_mix_of_failing_and_slow_calls() -> None:
    plan = plan_calls(_tools(), 3000, seed=6)
    assert any(p.tool == "always_fails" for p in plan)
    assert any(p.tool == "get_user" and p.arguments.get("user_id") == "u9" for p in plan)
    assert any(p.tool == "fetch_url" and p.arguments.get("url", "").startswith("ftp") for p in plan)
    slow = [p for p in plan if p.tool == "slow_task"]
    assert 0 < len(slow) < 60
    assert sum(p.tool == "ping" for p in plan) > 10 * len(slow)


def test_plan_without_a_usable_tool_is_an_error() -> None:
    with pytest.raises(ValueError):
        plan_calls([FakeTool("confirm_deploy")], 10)


@dataclass
class Result:
    is_error: bool


async def test_drive_counts_errors_and_keeps_concurrency_bounded() -> None:
    in_flight = 0
    peak = 0

    async def call(tool: str, args: dict[str, Any]) -> Result:
        nonlocal in_flight, peak
        in_flight += 1
        peak = max(peak, in_flight)
        await asyncio.sleep(0)
        in_flight -= 1
        if tool == "always_fails":
            return Result(is_error=True)
        if tool == "get_user" and args.get("user_id") == "u9":
            raise RuntimeError("protocol error")
        return Result(is_error=False)

    plan = plan_calls(_tools(), 800, seed=9)
    out = io.StringIO()
    stats = await drive(call, plan, concurrency=4, progress=Progress(800, stream=out))
    want_errors = sum(
        p.tool == "always_fails" or (p.tool == "get_user" and p.arguments.get("user_id") == "u9")
        for p in plan
    )
    assert stats.calls == 800
    assert stats.errors == want_errors > 0
    assert sum(stats.by_tool.values()) == 800
    assert 1 < peak <= 4
    assert "800/800 calls" in out.getvalue()
