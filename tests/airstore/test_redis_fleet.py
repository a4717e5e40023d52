"""RedisStore on the fleet's topologies: a real Redis Cluster, a real Sentinel group, Valkey.

The contract suite runs on each topology through its rows in ``backends.py``; these tests
cover what only a topology has: slots, redirects, failover, ``durability="replicated"``.
"""

from __future__ import annotations

import asyncio
import queue
import signal
import subprocess
import sys
import threading
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest
import redis.asyncio as aioredis

from airstore import (
    InvalidArgumentError,
    RedisStore,
    ReplicationError,
    StorageIOError,
    create_storage,
)
from airstore._redis_topology import hash_tag, topology_of
from tests.redis_server import RedisServer, unique_prefix, wait_replicas_confirm
from tests.redis_topology import RedisClusterGroup, SentinelGroup, shared_cluster, shared_valkey

pytestmark = pytest.mark.redis


# ---- URLs -------------------------------------------------------------------------------------
def test_cluster_url_names_every_start_up_node() -> None:
    topo = topology_of("redis+cluster://u:p%40ss@10.0.0.1:7000,[::1]:7001/")
    assert topo.kind == "cluster"
    assert topo.hosts == (("10.0.0.1", 7000), ("::1", 7001))
    assert (topo.username, topo.password) == ("u", "p@ss")


def test_sentinel_url_names_master_and_db() -> None:
    topo = topology_of("redis+sentinel://h1:26379,h2:26380/mymaster/3")
    assert topo.kind == "sentinel"
    assert topo.master == "mymaster"
    assert topo.db == 3


@pytest.mark.parametrize(
    "url",
    [
        "redis+cluster://h:notaport/",
        "redis+cluster://h:7000/2",
        "redis+sentinel://h:26379/",
        "redis+sentinel://h:26379/mymaster/x",
        "redis+sentinel://h:99999/mymaster/0",
    ],
)
def test_bad_topology_url_is_refused_with_a_clear_error(url: str) -> None:
    with pytest.raises(InvalidArgumentError, match="bad redis URL"):
        RedisStore(url)


def test_a_replication_timeout_past_the_socket_timeout_is_refused() -> None:
    with pytest.raises(InvalidArgumentError, match="socket_timeout"):
        RedisStore(
            "redis://127.0.0.1:1/0",
            durability="replicated",
            replication_timeout=6,
            socket_timeout=5,
        )


def test_bad_replication_options_are_refused() -> None:
    with pytest.raises(InvalidArgumentError, match="durability"):
        RedisStore("redis://127.0.0.1:1/0?durability=sometimes")
    with pytest.raises(InvalidArgumentError, match="replicas"):
        RedisStore("redis://127.0.0.1:1/0", durability="replicated", replicas=0)
    with pytest.raises(InvalidArgumentError, match="replication_timeout"):
        RedisStore("redis://127.0.0.1:1/0?replication_timeout=-1")


def test_a_password_never_shows_in_a_url_error() -> None:
    with pytest.raises(InvalidArgumentError) as info:
        RedisStore("redis+cluster://user:hunter2@h:bad/")
    assert "hunter2" not in str(info.value)


# ---- Redis Cluster ----------------------------------------------------------------------------
@pytest.fixture(scope="module")
def cluster() -> RedisClusterGroup:
    return shared_cluster()


@pytest.fixture
async def cluster_store(cluster: RedisClusterGroup, tmp_path: Any) -> AsyncIterator[RedisStore]:
    store = RedisStore(cluster.url(), prefix=unique_prefix(str(tmp_path)))
    await store.init()
    yield store
    await store.close()


async def test_cluster_keys_of_a_namespace_share_one_slot_and_many_namespaces_spread(
    cluster_store: RedisStore,
) -> None:
    # the seed's failure: the first SET on a 3-master cluster was a MOVED taken for a refusal
    await asyncio.gather(
        *(
            cluster_store.set(f"ns{i}", f"k{j}", {"i": i, "j": j})
            for i in range(30)
            for j in range(5)
        )
    )
    got = await asyncio.gather(
        *(cluster_store.get(f"ns{i}", f"k{j}") for i in range(30) for j in range(5))
    )
    assert got == [{"i": i, "j": j} for i in range(30) for j in range(5)]
    keys = {cluster_store._kv_key(f"ns{i}", "k0") for i in range(30)}
    assert {hash_tag(k) for k in keys} == {f"ns{i}" for i in range(30)}
    assert hash_tag(cluster_store._kv_key("ns1", "x")) == hash_tag(cluster_store._log_key("ns1"))
    nodes = {(n.host, n.port) for n in (cluster_store._client.get_node_from_key(k) for k in keys)}
    assert len(nodes) == 3  # 30 namespaces land on all three masters


async def test_cluster_mixed_batch_of_many_namespaces_has_no_crossslot(
    cluster_store: RedisStore,
) -> None:
    await cluster_store.set_many("a", [(f"k{i}", i) for i in range(50)])
    ops = [cluster_store.set("b", f"k{i}", i) for i in range(50)]
    ops += [cluster_store.append(f"log{i % 7}", {"n": i}) for i in range(70)]
    ops += [cluster_store.incr("c", "n") for _ in range(10)]
    await asyncio.gather(*ops)
    assert await cluster_store.entries("a") == sorted(
        ((f"k{i}", i) for i in range(50)), key=lambda kv: kv[0]
    )
    assert await cluster_store.get("c", "n") == 10
    assert len(await cluster_store.query("log3", limit=100)) == 10
    assert await cluster_store.query("log3", filter={"n": 3}) == [
        e for e in await cluster_store.query("log3", limit=100) if e["n"] == 3
    ]


async def test_create_storage_takes_a_cluster_url(
    cluster: RedisClusterGroup, tmp_path: Any
) -> None:
    url = f"{cluster.url()}?prefix={unique_prefix(str(tmp_path))}"
    store = await create_storage(url)
    try:
        await store.set("ns", "k", 1)
        assert await store.get("ns", "k") == 1
        assert isinstance(store, RedisStore)
        assert store.where.startswith("cluster ")
    finally:
        await store.close()


async def test_cluster_replicated_mode_confirms_every_write(
    cluster: RedisClusterGroup, tmp_path: Any
) -> None:
    store = RedisStore(cluster.url(), prefix=unique_prefix(str(tmp_path)), durability="replicated")
    async with store:
        await asyncio.gather(*(store.set(f"ns{i}", "k", i) for i in range(20)))
        await store.append_many("log", [{"n": i} for i in range(100)])
        assert [await store.get(f"ns{i}", "k") for i in range(20)] == list(range(20))
        stats = store.replication
        assert stats.acknowledged_writes == 120
        assert stats.refused_writes == 0


# ---- Sentinel ---------------------------------------------------------------------------------
@pytest.fixture
def sentinel_group() -> Iterator[SentinelGroup]:
    """A private group: these tests kill its master."""
    with SentinelGroup() as group:
        yield group


async def test_sentinel_store_follows_the_promoted_master(
    sentinel_group: SentinelGroup, tmp_path: Any
) -> None:
    store = RedisStore(
        sentinel_group.url(), prefix=unique_prefix(str(tmp_path)), durability="replicated"
    )
    async with store:
        await store.set("ns", "before", 1)
        assert sentinel_group.master is not None
        old = sentinel_group.master.port
        sentinel_group.master.kill()
        new = sentinel_group.wait_promoted(old)
        assert new != old
        for _ in range(100):  # the first commands may meet the dead master's connections
            try:
                await store.set("ns", "after", 2)
                break
            except ReplicationError:
                break  # the new master has no replica: refused at once, as documented
            except StorageIOError:  # while the pool reconnects
                await asyncio.sleep(0.1)
        assert await store.get("ns", "before") == 1  # replicated before the kill: kept
        stats = store.replication
        assert stats.failovers == 1
        assert stats.unconfirmed_at_failover == 0


async def test_replicated_mode_refuses_at_once_without_a_replica(tmp_path: Any) -> None:
    with RedisServer() as lone:
        store = RedisStore(
            lone.url(),
            prefix=unique_prefix(str(tmp_path)),
            durability="replicated",
            replication_timeout=4,  # a refusal waits for none of it
        )
        async with store:
            with pytest.raises(ReplicationError) as info:
                await store.set("ns", "k", 1)
            assert info.value.sent is False
            assert await store.get("ns", "k") is None  # nothing was sent
            assert store.replication.refused_writes == 1


async def test_replicated_mode_with_a_replica_acknowledges(tmp_path: Any) -> None:
    with (
        RedisServer() as master,
        RedisServer(extra_args=("--replicaof", "127.0.0.1", str(master.port))) as replica,
    ):
        client = aioredis.Redis(port=replica.port)
        wait_replicas_confirm(master.port, 1)  # synced, and streamed to
        store = RedisStore(
            master.url(), prefix=unique_prefix(str(tmp_path)), durability="replicated"
        )
        async with store:
            await store.set("ns", "k", {"v": 1})
            await store.append("log", {"n": 1})
            raw = await client.get(store._kv_key("ns", "k"))
            assert raw is not None  # on the replica when set() returned
            assert raw.endswith(b'{"v":1}')
        await client.aclose()


async def test_replicated_write_unconfirmed_in_time_is_refused(tmp_path: Any) -> None:
    with (
        RedisServer() as master,
        RedisServer(extra_args=("--replicaof", "127.0.0.1", str(master.port))) as replica,
    ):
        client = aioredis.Redis(port=replica.port)
        wait_replicas_confirm(master.port, 1)  # synced, and streamed to
        store = RedisStore(
            master.url(),
            prefix=unique_prefix(str(tmp_path)),
            durability="replicated",
            replication_timeout=0.2,
        )
        async with store:
            await store.set("ns", "k", 1)
            replica.proc.send_signal(signal.SIGSTOP)  #: connected, but it confirms nothing
            try:
                with pytest.raises(ReplicationError) as info:
                    await store.set("ns", "k2", 2)
                assert info.value.sent is True
            finally:
                replica.proc.send_signal(signal.SIGCONT)
        await client.aclose()


# ---- Valkey -----------------------------------------------------------------------------------
async def test_valkey_is_recognised_and_checked_by_its_own_version(tmp_path: Any) -> None:
    server = shared_valkey()
    store = RedisStore(server.url(), prefix=unique_prefix(str(tmp_path)))
    async with store:
        assert store.server_kind == "valkey"
        await store.set("ns", "k", 1)
        assert await store.get("ns", "k") == 1


# ---- failover under load ----------------------------------------------------------------------
class _Writer:
    def __init__(self, url: str, durability: str, name: str, tmp: Path) -> None:
        self.stop = tmp / f"{name}.stop"
        self.out = tmp / f"{name}.json"
        self.proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "tests.airstore.fleet_writer",
                url,
                durability,
                name,
                str(self.stop),
                str(self.out),
            ],
            stdout=subprocess.PIPE,
            cwd=Path(__file__).resolve().parents[2],
        )
        self.acked = self.refused = 0
        self._lines: queue.Queue[bytes] = queue.Queue()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self._lines.put(line)

    def _next_line(self, deadline: float) -> None:
        try:
            line = self._lines.get(timeout=max(0.01, deadline - time.monotonic()))
        except queue.Empty:
            raise AssertionError(
                f"writer stuck at {self.acked} acked, {self.refused} refused writes"
            ) from None
        _, acked, _, refused = line.split()
        self.acked, self.refused = int(acked), int(refused)

    def wait_acked(self, more_than: int, timeout: float = 60.0) -> int:
        deadline = time.monotonic() + timeout
        while self.acked <= more_than:
            self._next_line(deadline)
        return self.acked

    def wait_refused(self, more_than: int, timeout: float = 60.0) -> int:
        deadline = time.monotonic() + timeout
        while self.refused <= more_than:
            self._next_line(deadline)
        return self.refused

    def finish(self) -> dict[str, Any]:
        self.stop.touch()
        code = self.proc.wait(timeout=60)
        self._reader.join(timeout=10)  # the pipe is at its end once the process exited
        assert self.proc.stdout is not None
        self.proc.stdout.close()
        assert code == 0  # no writer crashed or hung
        return orjson.loads(self.out.read_bytes())  # type: ignore[no-any-return]


async def _missing(url: str, results: dict[str, dict[str, Any]]) -> int:
    store = RedisStore(url)
    async with store:
        entries = await store.query("meter.calls", limit=10_000_000)
        logged = {(e["writer"], e["i"]) for e in entries}
        # nothing stored twice (an automatic resend of a batch that ran would append again)
        assert len(logged) == len(entries), len(entries) - len(logged)
        missing = 0
        for name, result in results.items():
            for i in result["acked"]:
                if await store.get("fleet", f"{name}-{i}") != i:
                    missing += 1
                if (name, i) not in logged:
                    missing += 1
        return missing


@pytest.mark.slow
@pytest.mark.parametrize("durability", ["replicated", "async"])
async def test_failover_under_load_keeps_or_counts_every_acknowledged_write(
    durability: str, tmp_path: Path
) -> None:
    with SentinelGroup(replicas=2) as group:
        url = group.url()
        writers = {name: _Writer(url, durability, name, tmp_path) for name in ("w1", "w2")}
        try:
            before = {name: w.wait_acked(200) for name, w in writers.items()}
            assert group.master is not None
            old = group.master.port
            group.master.kill()  # SIGKILL
            group.wait_promoted(old)
            for name, w in writers.items():  # served again once the new master is up
                w.wait_acked(before[name] + 200)
        finally:
            results = {name: w.finish() for name, w in writers.items()}
        missing = await _missing(url, results)
        print(  # the figures of the closing note (pytest -s)
            f"{durability}: missing={missing} "
            + " ".join(
                f"{n}={r['replication']} acked={len(r['acked'])} refused={r['refused']} "
                f"errors={r['errors']}"
                for n, r in results.items()
            )
        )
        failovers = [r["replication"]["failovers"] for r in results.values()]
        assert failovers == [1, 1]
        if durability == "replicated":
            assert missing == 0  # every acknowledged write survived the master's death
        else:
            bound = sum(r["replication"]["unconfirmed_at_failover"] for r in results.values())
            assert missing <= bound  # the loss is bounded and counted


@pytest.mark.parametrize(
    ("info", "refused"),
    [
        ({"redis_version": "6.2.14"}, "Redis >= 7.0"),
        ({"redis_version": "7.0.15"}, None),
        (
            {"redis_version": "7.2.4", "server_name": "valkey", "valkey_version": "7.0.1"},
            "Valkey >= 7.2",
        ),
        ({"redis_version": "7.2.4", "server_name": "valkey", "valkey_version": "8.1.0"}, None),
        ({"redis_version": "garbage"}, "Redis >= 7.0"),
    ],
)
def test_the_minimum_version_is_checked_per_server_kind(
    info: dict[str, str], refused: str | None
) -> None:
    from airstore._redis_topology import check_server

    if refused is None:
        assert check_server(info, "here")[1] in info.values()
    else:
        with pytest.raises(StorageIOError, match=refused):
            check_server(info, "here")


@pytest.mark.slow
@pytest.mark.parametrize("durability", ["async", "replicated"])
async def test_cluster_failover_under_load_keeps_or_counts_every_acknowledged_write(
    durability: str, tmp_path: Path
) -> None:
    from redis.crc import key_slot

    with RedisClusterGroup() as cluster:
        url = cluster.url()
        writers = {name: _Writer(url, durability, name, tmp_path) for name in ("w1", "w2")}
        try:
            before = {name: w.wait_acked(200) for name, w in writers.items()}
            slot = key_slot(b"air:log:{meter.calls}")
            victim = cluster.master_of(slot)
            victim.kill()  # SIGKILL the master holding the meter's log
            cluster.wait_failover(victim, slot)
            if durability == "async":  # served again once the replica is promoted
                for name, w in writers.items():
                    w.wait_acked(before[name] + 200)
            else:  # the promoted replica has no replica of its own: refused, not lost
                for w in writers.values():  # (refused again and again, not once by chance)
                    w.wait_refused(20)
        finally:
            results = {name: w.finish() for name, w in writers.items()}
        missing = await _missing(url, results)
        print(
            f"cluster {durability}: missing={missing} "
            + " ".join(
                f"{n}={r['replication']} acked={len(r['acked'])} refused={r['refused']} "
                f"errors={r['errors']}"
                for n, r in results.items()
            )
        )
        assert [r["replication"]["failovers"] for r in results.values()] == [1, 1]
        if durability == "replicated":
            assert missing == 0
            assert all(r["refused"] > 0 for r in results.values())
        else:
            bound = sum(r["replication"]["unconfirmed_at_failover"] for r in results.values())
            assert missing <= bound
