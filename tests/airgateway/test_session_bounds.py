"""What a client can grow through ``initialize`` is bounded: each one is a session stored for a
day, so a gateway keeps at most ``max_sessions`` of its own (the oldest ends) and refuses
capabilities larger than any real client sends."""

from __future__ import annotations

from pathlib import Path

import httpx

from aircore.protocol.legacy import MAX_DECLARATION_BYTES
from airgateway.sessions import MAX_CLIENT_NAME, SESSIONS_NAMESPACE, SessionBook
from airstore import FileStore
from tests.airgateway.procs import air, free_port, http_replica, started
from tests.airgateway.rpc import legacy_request


async def test_a_gateway_keeps_at_most_max_sessions_of_its_own_and_ends_the_oldest(
    tmp_path: Path,
) -> None:
    async with FileStore(tmp_path / "data") as store:
        book = SessionBook(store, max_sessions=3)
        sids = [
            (await book.create(version="2025-06-18", capabilities={}, client="c")).sid
            for _ in range(5)
        ]
        assert sorted(await store.list(SESSIONS_NAMESPACE)) == sorted(sids[2:])
        assert [await book.get(sid) is not None for sid in sids] == [False, False, True, True, True]
        assert await book.end(sids[4])  # an ended session no longer counts
        sids.append((await book.create(version="2025-06-18", capabilities={}, client="c")).sid)
        assert sorted(await store.list(SESSIONS_NAMESPACE)) == sorted([sids[2], sids[3], sids[5]])


async def test_a_flood_of_initialize_calls_never_ends_the_sessions_clients_use(
    tmp_path: Path,
) -> None:
    """Sessions used after their ``initialize`` go last: the ones never used go first, then the
    least recently used."""
    async with FileStore(tmp_path / "data") as store:
        book = SessionBook(store, max_sessions=3)
        used = [(await book.create(version="2025-06-18", capabilities={}, client="c")).sid
                for _ in range(2)]  # fmt: skip
        for sid in used:
            assert await book.get(sid) is not None  # a request of its client
        for _ in range(50):  # the flood: initialize only, never a request
            await book.create(version="2025-06-18", capabilities={}, client="flood")
        assert all([await book.get(sid) is not None for sid in used])
        assert len(await store.list(SESSIONS_NAMESPACE)) == 3
        newest = (await book.create(version="2025-06-18", capabilities={}, client="c")).sid
        assert await book.get(newest) is not None  # now three in use: the least recent goes
        await book.create(version="2025-06-18", capabilities={}, client="c")
        assert await book.get(used[0]) is None
        assert await book.get(used[1]) is not None
        long_name = await book.create(version="2025-06-18", capabilities={}, client="n" * 10_000)
        assert long_name.client == "n" * MAX_CLIENT_NAME


async def test_initialize_with_oversized_capabilities_is_refused_and_stores_nothing(
    tmp_path: Path,
) -> None:
    port = free_port()
    config = tmp_path / "gw.yml"
    config.write_text(f"servers:\n  - name: notes\n    url: http://127.0.0.1:{port}/mcp\n")
    store = f"file://{tmp_path / 'data'}"
    huge = {"experimental": {"pad": "x" * (MAX_DECLARATION_BYTES + 1)}}
    with (
        started(http_replica("a", port), env={"REPLICA": "a"}),
        started(air("gateway", "--config", str(config), "--port", "0", "--store", store)) as gw,
    ):
        async with httpx.AsyncClient(timeout=10) as http:
            info = {"name": "t", "version": "1"}
            refused = await legacy_request(
                http, gw.url, "initialize",
                {"protocolVersion": "2025-06-18", "capabilities": huge, "clientInfo": info}, None,
            )  # fmt: skip
            error = refused.json()["error"]
            assert error["code"] == -32602
            assert f"at most {MAX_DECLARATION_BYTES}" in error["message"]
            assert "mcp-session-id" not in refused.headers
            roots = {"protocolVersion": "2025-06-18", "capabilities": {"roots": {}},
                     "clientInfo": info}  # fmt: skip
            fine = await legacy_request(http, gw.url, "initialize", roots, None)
            assert fine.json()["result"]["protocolVersion"] == "2025-06-18"
    async with FileStore(tmp_path / "data", read_only=True) as reader:
        assert await reader.list(SESSIONS_NAMESPACE) == [fine.headers["mcp-session-id"]]
