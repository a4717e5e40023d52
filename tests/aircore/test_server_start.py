"""``AirServer.start()`` closes what it opened when anything after the store fails."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any, ClassVar

import pytest

from aircore import define_server, define_tool
from airstore import create_storage


class _FailingPlugin:
    """A plugin whose ``on_init`` (or ``on_tool_register``) raises."""

    meta: ClassVar[dict[str, str]] = {"name": "failing"}

    def __init__(self, *, where: str) -> None:
        self.where = where

    def on_init(self, server: Any) -> None:
        if self.where == "on_init":
            raise RuntimeError("on_init refused")

    def on_tool_register(self, tool: Any, server: Any) -> None:
        if self.where == "on_tool_register":
            raise RuntimeError("on_tool_register refused")


class _Meter:
    """A meter hook that records start/stop."""

    def __init__(self) -> None:
        self.events: list[str] = []

    async def __call__(self, ctx: Any, call_next: Any) -> Any:
        return await call_next(ctx)

    async def start(self, **_: Any) -> None:
        self.events.append("start")

    async def stop(self) -> None:
        self.events.append("stop")


@pytest.mark.parametrize("where", ["on_init", "on_tool_register"])
async def test_a_failed_start_closes_the_store_it_opened(tmp_path: Path, where: str) -> None:
    data = tmp_path / "data"
    meter = _Meter()
    server = define_server(
        name="s",
        tools=[define_tool("ping", handler=lambda p: "pong")],
        storage=f"file://{data}",
        meter=meter,
        use=[_FailingPlugin(where=where)],
    )
    with pytest.raises(RuntimeError, match=f"{where} refused"):
        await server.start()
    assert server.store is None
    # the data directory's lock was released: another writer can open it now
    again = await create_storage(f"file://{data}")
    await again.close()
    assert meter.events == (["start", "stop"] if where == "on_tool_register" else [])
    await server.stop()  # a stop after a failed start is a no-op


async def test_a_failed_start_leaves_a_passed_in_store_open(tmp_path: Path) -> None:
    store = await create_storage(f"file://{tmp_path / 'data'}")
    try:
        server = define_server(name="s", storage=store, use=[_FailingPlugin(where="on_init")])
        with pytest.raises(RuntimeError, match="on_init refused"):
            await server.start()
        await store.set("ns", "k", 1)  # not the server's to close
        assert await store.get("ns", "k") == 1
        # still open and writing: a second writer (several share a directory) sees its write
        other = await create_storage(f"file://{tmp_path / 'data'}")
        await asyncio.sleep(0)
        assert await other.get("ns", "k") == 1
        await other.close()
    finally:
        await store.close()
