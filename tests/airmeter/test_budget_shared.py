"""A budget holds for every process metering into one store, not for each one alone."""

from __future__ import annotations

import asyncio
import contextlib
import sys
from pathlib import Path

from mcp import Client, StdioServerParameters

from airmeter import RollupReader
from airstore import FileStore

HERE = Path(__file__).parent
ROOT = HERE.parent.parent
REFRESH_S = 0.25
"""The servers' interval between two reads of every process's spending (airmeter's 2 s
shortened, budget_server.py). The tests wait for several (the second on a negative: no
condition to poll on), with room for a read on a loaded machine."""


def _server(data: Path, name: str = "budgeted") -> StdioServerParameters:
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
        env={
            "PYTHONPATH": str(ROOT),
            "BUDGET_SERVER_NAME": name,
            "BUDGET_REFRESH_S": str(REFRESH_S),
        },
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
        await _stored_cost_reaches(data, 30.0)  # the first one persisted (within ~1 s)
        await asyncio.sleep(4 * REFRESH_S)  # the others refreshed since
        for client in others:
            refused = await client.call_tool("search", {})
            assert refused.is_error
            assert "daily budget exceeded" in str(refused.content[0])


async def test_another_servers_spending_in_the_same_data_dir_does_not_count(
    tmp_path: Path,
) -> None:
    data = tmp_path / "data"
    async with contextlib.AsyncExitStack() as stack:
        other = await stack.enter_async_context(Client(_server(data, name="other")))
        budgeted = await stack.enter_async_context(Client(_server(data)))
        for _ in range(4):
            await other.call_tool("search", {})
        await _stored_cost_reaches(data, 30.0)
        await asyncio.sleep(4 * REFRESH_S)
        assert not (await budgeted.call_tool("search", {})).is_error


async def _stored_cost_reaches(data: Path, cost: float) -> None:
    """Wait until the rollups in ``data`` hold ``cost`` (what every process persisted)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + 30
    while True:
        async with FileStore(data, read_only=True) as store:
            groups = await RollupReader(store).load_groups()
        if sum(r.cost for _, rows in groups for r in rows) >= cost:
            return
        assert loop.time() < deadline, "the rollups were never persisted"
        await asyncio.sleep(0.2)
