"""A budget holds for every process metering into one store, not for each one alone."""

from __future__ import annotations

import asyncio
import contextlib
import sys
from pathlib import Path

from mcp import Client, StdioServerParameters

from airmeter.budget import REFRESH_S

HERE = Path(__file__).parent
ROOT = HERE.parent.parent


def _server(data: Path) -> StdioServerParameters:
    return StdioServerParameters(
        command=sys.executable,
        args=[
            "-m",
            "aircli",
            "serve",
            str(HERE / "budget_server.py"),
            "--transport",
            "stdio",
            "--store",
            f"file://{data}",
        ],
        cwd=str(ROOT),
        env={"PYTHONPATH": str(ROOT)},
    )


async def test_a_daily_limit_holds_across_servers_sharing_a_data_dir(tmp_path: Path) -> None:
    """Three servers start before anything is spent; the first spends the budget: the other
    two refuse their calls once they have taken in its spending (each let its own 25 through
    before: 9 calls of cost 10 against a limit of 25 with 3 processes)."""
    data = tmp_path / "data"
    async with contextlib.AsyncExitStack() as stack:
        first, *others = [await stack.enter_async_context(Client(_server(data))) for _ in range(3)]
        outcomes = [(await first.call_tool("search", {})).is_error for _ in range(4)]
        assert outcomes == [False, False, False, True]  # spent 0, 10, 20 < 25; then 30
        await asyncio.sleep(1.0 + 2 * REFRESH_S)  # the first one's persist, their refresh
        for client in others:
            refused = await client.call_tool("search", {})
            assert refused.is_error
            assert "daily budget exceeded" in str(refused.content[0])
